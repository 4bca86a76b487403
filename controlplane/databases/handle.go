package databases

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
)

// readers is how many read-only connections a database keeps open.
const readers = 4

// handle is one open customer database: a single writer connection, which
// every request that may write queues for in arrival order (so writers never
// meet "database is locked"), and a few read-only connections that WAL lets
// run beside it.
type handle struct {
	id   string
	path string
	// writeSlot holds the writer: a buffered channel of one, whose waiters
	// are served first come, first served.
	writeSlot chan struct{}
	writer    *sql.DB
	readers   *sql.DB
	// ctx ends when the handle closes: running statements are interrupted.
	ctx    context.Context
	cancel context.CancelFunc
	// clock tells when the handle was last used (for closing idle ones).
	clock clock.Clock

	mu       sync.Mutex
	refs     int
	idle     *sync.Cond // signalled when refs drops to zero
	closed   bool
	lastUsed time.Time
	// export is the export running now; queries wait for it or are refused.
	export *exportRun
}

// exportRun is an export in progress on a handle.
type exportRun struct {
	bookmark string
	done     chan struct{}
}

// errExportActive is returned to queries that arrive while an export runs.
var errExportActive = errors.New("databases: export active")

// errClosed is returned when the handle closed under the caller.
var errClosed = errors.New("databases: database closed")

// openHandle opens the database file at path; create makes the file.
func openHandle(id, path string, create bool, maxPages int64, clk clock.Clock) (*handle, error) {
	registerDriver()
	init := []string{fmt.Sprintf("PRAGMA max_page_count = %d", maxPages)}
	w := sql.OpenDB(&connector{dsn: dsn(path, create, false), init: init})
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	// Open the writer now: it creates the file and turns WAL on.
	if err := w.Ping(); err != nil {
		w.Close()
		return nil, err
	}
	r := sql.OpenDB(&connector{dsn: dsn(path, false, true), init: init})
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(2)
	r.SetConnMaxIdleTime(time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	h := &handle{id: id, path: path, writeSlot: make(chan struct{}, 1), writer: w, readers: r, ctx: ctx, cancel: cancel, clock: clk, lastUsed: clk.Now()}
	h.idle = sync.NewCond(&h.mu)
	return h, nil
}

// pin takes a reference that keeps the handle open until leave.
func (h *handle) pin() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errClosed
	}
	h.refs++
	h.lastUsed = h.clock.Now()
	return nil
}

// leave drops a reference taken by pin.
func (h *handle) leave() {
	h.mu.Lock()
	h.refs--
	if h.refs == 0 {
		h.idle.Broadcast()
	}
	h.mu.Unlock()
}

// waitExport waits up to wait for a running export to finish; a database
// takes no queries while it exports. waiting, when not nil, is called as
// the wait begins (tests synchronise on it).
func (h *handle) waitExport(ctx context.Context, wait time.Duration, waiting func()) error {
	h.mu.Lock()
	run := h.export
	h.mu.Unlock()
	if run == nil {
		return nil
	}
	if wait <= 0 {
		return errExportActive
	}
	if waiting != nil {
		waiting()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-run.done:
		return h.waitExport(ctx, wait, waiting)
	case <-t.C:
		return errExportActive
	case <-h.ctx.Done():
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startExport marks an export as running and takes a reference for it; it
// returns the running one instead when there is one.
func (h *handle) startExport(bookmark string) (run *exportRun, started bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false, errClosed
	}
	if h.export != nil {
		return h.export, false, nil
	}
	h.export = &exportRun{bookmark: bookmark, done: make(chan struct{})}
	h.refs++
	return h.export, true, nil
}

// endExport clears the running export, wakes the queries waiting for it and
// drops its reference.
func (h *handle) endExport(run *exportRun) {
	h.mu.Lock()
	if h.export == run {
		h.export = nil
	}
	close(run.done)
	h.mu.Unlock()
	h.leave()
}

// idleSince returns when the handle was last used and whether nothing
// uses it now.
func (h *handle) idleSince() (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastUsed, h.refs == 0 && h.export == nil
}

// close interrupts what runs on the handle, waits for it to let go and
// closes the connections.
func (h *handle) close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.cancel()
	for h.refs > 0 {
		h.idle.Wait()
	}
	h.mu.Unlock()
	return errors.Join(h.readers.Close(), h.writer.Close())
}

// acquireWriter takes the writer in arrival order, waiting at most until
// ctx ends.
func (h *handle) acquireWriter(ctx context.Context) (*sql.Conn, func(), error) {
	select {
	case h.writeSlot <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	c, err := h.writer.Conn(ctx)
	if err != nil {
		<-h.writeSlot
		return nil, nil, err
	}
	return c, func() { c.Close(); <-h.writeSlot }, nil
}

// removeFiles deletes a database file and its WAL and shared-memory files.
func removeFiles(path string) error {
	var errs []error
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
