package billing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// The hot path's writer: movements queue here and commit in batches, one
// transaction per batch, off the callers' path.

// maxPending bounds the movements waiting for the writer: past it, callers
// wait for a commit (backpressure instead of unbounded memory).
const maxPending = 4096

// writerTimeout bounds one batch transaction.
const writerTimeout = 30 * time.Second

// errNoReservationRow is a closing whose reservation was never stored.
var errNoReservationRow = errors.New("no stored reservation to close")

// op is one movement for the writer, of workspace ws at now: a
// reservation to insert, ledger entries, a reservation to close; or run,
// any other work in the batch's transaction.
type op struct {
	ws      string
	now     time.Time
	res     *reservation
	entries []entry
	close   *closing
	run     func(t *txn) error
}

// closing closes a reservation.
type closing struct {
	id, state            string
	charged, uncollected Micros
}

// writer commits movements in batches: whatever accumulated while the
// previous batch committed goes in the next transaction.
type writer struct {
	l *Ledger

	mu       sync.Mutex
	cond     *sync.Cond
	pending  []op
	seq      uint64 // movements enqueued
	done     uint64 // movements committed or given up
	started  bool
	closed   bool
	wake     chan struct{}
	urgent   chan struct{} // a flush, Close or a long queue: commit without lingering
	exited   chan struct{}
	failed   atomic.Int64 // movements that failed to commit
	stMu     sync.Mutex   // held by a commit: guards st and the row buffers
	st       *stmts
	stClosed bool

	resRows, entRows rowBuf
	boxed            store.Boxes
}

func newWriter(l *Ledger) *writer {
	w := &writer{l: l, wake: make(chan struct{}, 1), urgent: make(chan struct{}, 1), exited: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// enqueue hands o to the writer; past maxPending it first waits for a
// commit. After close it commits o at once.
func (w *writer) enqueue(o op) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.commit([]op{o})
	}
	for uint64(len(w.pending)) >= maxPending {
		w.cond.Wait()
	}
	if !w.started {
		w.started = true
		go w.loop()
	}
	w.pending = append(w.pending, o)
	w.seq++
	long := len(w.pending) >= maxPending/2
	w.mu.Unlock()
	poke(w.wake)
	if long {
		poke(w.urgent)
	}
	return nil
}

// poke signals c without blocking (a full buffer is already a signal).
func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// flush waits until every movement enqueued before it is committed.
func (w *writer) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	target := w.seq
	if w.done < target {
		poke(w.urgent)
	}
	for w.done < target {
		w.cond.Wait()
	}
	return nil
}

func (w *writer) loop() {
	defer close(w.exited)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for range w.wake {
		// Let movements accumulate for CommitEvery (one commit, one fsync
		// and one update of each balance row for all of them) unless
		// someone waits for them.
		if d := w.l.cfg.CommitEvery; d > 0 {
			linger.Reset(d)
			select {
			case <-linger.C:
			case <-w.urgent:
				linger.Stop()
			}
		}
		for {
			w.mu.Lock()
			batch := w.pending
			w.pending = nil
			w.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			if err := w.commit(batch); err != nil {
				w.l.log.Error("billing: movements not committed", "count", len(batch), "err", err)
			}
			w.mu.Lock()
			w.done += uint64(len(batch))
			w.cond.Broadcast()
			w.mu.Unlock()
		}
		w.mu.Lock()
		stop := w.closed && len(w.pending) == 0
		w.mu.Unlock()
		if stop {
			return
		}
	}
}

// commit writes batch in one transaction; when that fails, each movement
// in its own, so that one bad movement does not lose the others. A
// movement that fails alone is counted as lost, logged, and its
// workspace's copy reloaded from what was stored.
func (w *writer) commit(batch []op) error {
	ctx, cancel := context.WithTimeout(context.Background(), writerTimeout)
	defer cancel()
	w.stMu.Lock()
	defer w.stMu.Unlock()
	err := w.l.db.Tx(ctx, func(tx *sql.Tx) error { return w.write(ctx, tx, batch) })
	w.l.m.batch.Observe(float64(len(batch)))
	if err == nil {
		return nil
	}
	if len(batch) > 1 {
		err = nil
		for _, o := range batch {
			if e := w.l.db.Tx(ctx, func(tx *sql.Tx) error { return w.write(ctx, tx, []op{o}) }); e != nil {
				err = errors.Join(err, w.fail(o, e))
			}
		}
		return err
	}
	return w.fail(batch[0], err)
}

var errWriterClosed = errors.New("billing: writer closed")

func (w *writer) fail(o op, err error) error {
	w.l.m.lost.Inc()
	w.failed.Add(1)
	w.l.hot.stale(o.ws)
	return fmt.Errorf("%s: %w", o.ws, err)
}

// close commits what is pending and stops the writer.
func (w *writer) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	started := w.started
	w.mu.Unlock()
	if started {
		poke(w.wake)
		poke(w.urgent)
		<-w.exited
	}
	w.stMu.Lock()
	defer w.stMu.Unlock()
	if w.st != nil {
		w.st.closeAll()
		w.st = nil
	}
	w.stClosed = true
}
