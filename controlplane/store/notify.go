package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Notification limits and the reconnect signal.
const (
	// MaxChannel is the longest channel name, in bytes (PostgreSQL's
	// identifier length).
	MaxChannel = 63
	// MaxPayload is the longest payload, in bytes (PostgreSQL refuses 8000).
	MaxPayload = 7999
	// Reconnected is the payload every listener of a channel receives
	// after its PostgreSQL listening connection was lost and re-established:
	// notifications sent meanwhile may be lost, so re-read what matters.
	Reconnected = ""
	// listenBuffer is how many undelivered payloads a listener holds; past
	// it payloads are dropped, but the reader always has one pending.
	listenBuffer = 64
)

// Errors of Notify and Listen.
var (
	// ErrBadChannel: a channel name is 1 to MaxChannel bytes of a-z, 0-9
	// and _.
	ErrBadChannel = errors.New("store: bad notification channel (1 to 63 characters of a-z, 0-9 and _)")
	// ErrBadPayload: a payload is at most MaxPayload bytes without NUL.
	ErrBadPayload = errors.New("store: bad notification payload (at most 7999 bytes, no NUL byte)")
	// ErrForeignTx: on SQLite, Notify inside a transaction needs one begun
	// by DB.Tx (delivery waits for its commit).
	ErrForeignTx = errors.New("store: notification inside a transaction not begun by DB.Tx")
	// ErrClosed: the database is closed.
	ErrClosed = errors.New("store: database is closed")
)

// Notifier sends and receives notifications that take effect at commit:
// a control-plane replica tells the others (and itself) that something
// changed. Get it with DB.Notifier.
//
// PostgreSQL: Notify runs pg_notify in the caller's transaction, so the
// notification is delivered when, and only if, it commits (a rolled-back
// or retried attempt sends nothing). Listen holds one dedicated pgx
// connection per channel (not from the pool) that LISTENs and reconnects
// with backoff when lost; after a reconnect each listener receives
// Reconnected. Every replica's listeners receive every notification,
// including the sender's own.
//
// SQLite: one process owns the file; Notify queues the notification in
// the transaction and delivers it in-process after commit, to the
// listeners of every handle this process opened on the same file.
//
// A listener that falls behind by more than 64 payloads loses the excess
// ones but always has one waiting: treat a payload as "look again".
type Notifier struct {
	dialect Dialect
	path    string          // SQLite: absolute path, the peers' key
	pgcfg   *pgx.ConnConfig // PostgreSQL: the listening connections'

	mu        sync.Mutex
	closed    bool
	subs      map[string]map[*subscription]struct{}
	listeners map[string]*pgListener     // PostgreSQL: one per channel
	pending   map[*sql.Tx][]notification // SQLite: queued until commit
}

type notification struct{ channel, payload string }

type subscription struct {
	ch   chan string
	stop func() bool // ends the context.AfterFunc
}

// sqlitePeers are the notifiers of the SQLite files open in this process.
var (
	peersMu     sync.Mutex
	sqlitePeers = map[string]map[*Notifier]struct{}{}
)

// Notifier returns db's notifier (one per handle).
func (db *DB) Notifier() *Notifier {
	db.notifyOnce.Do(func() {
		n := &Notifier{dialect: db.dialect, pgcfg: db.pgcfg, subs: map[string]map[*subscription]struct{}{},
			listeners: map[string]*pgListener{}, pending: map[*sql.Tx][]notification{}}
		if db.dialect != Postgres {
			n.path = db.path
			peersMu.Lock()
			if sqlitePeers[n.path] == nil {
				sqlitePeers[n.path] = map[*Notifier]struct{}{}
			}
			sqlitePeers[n.path][n] = struct{}{}
			peersMu.Unlock()
		}
		db.notifier = n
	})
	return db.notifier
}

// Close stops db's listeners (closing their channels) and closes the
// database.
func (db *DB) Close() error {
	db.Notifier().close()
	return db.DB.Close()
}

// ValidChannel reports whether name is a usable channel name.
func ValidChannel(name string) bool {
	if name == "" || len(name) > MaxChannel {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func check(channel, payload string) error {
	if !ValidChannel(channel) {
		return fmt.Errorf("store: notify %q: %w", channel, ErrBadChannel)
	}
	if len(payload) > MaxPayload || strings.IndexByte(payload, 0) >= 0 {
		return fmt.Errorf("store: notify %s: %w", channel, ErrBadPayload)
	}
	return nil
}

// Notify sends payload on channel when q's transaction commits (q is a
// *sql.Tx from DB.Tx; with the *DB or *sql.DB itself, at once).
func (n *Notifier) Notify(ctx context.Context, q Querier, channel, payload string) error {
	if err := check(channel, payload); err != nil {
		return err
	}
	if n.dialect == Postgres {
		var ok int
		if err := q.QueryRowContext(ctx, `SELECT 1 FROM (SELECT pg_notify(CAST(? AS TEXT), CAST(? AS TEXT))) AS n`, channel, payload).Scan(&ok); err != nil {
			return fmt.Errorf("store: notify %s: %w", channel, err)
		}
		return nil
	}
	switch q := q.(type) {
	case *sql.Tx:
		n.mu.Lock()
		defer n.mu.Unlock()
		p, ok := n.pending[q]
		if !ok {
			return fmt.Errorf("store: notify %s: %w", channel, ErrForeignTx)
		}
		n.pending[q] = append(p, notification{channel, payload})
		return nil
	case *DB, *sql.DB:
		n.publish([]notification{{channel, payload}})
		return nil
	}
	return fmt.Errorf("store: notify %s: %w", channel, ErrForeignTx)
}

// begin opens tx's SQLite queue; end delivers it when committed is true
// and drops it otherwise.
func (n *Notifier) begin(tx *sql.Tx) {
	n.mu.Lock()
	n.pending[tx] = nil
	n.mu.Unlock()
}

func (n *Notifier) end(tx *sql.Tx, committed bool) {
	n.mu.Lock()
	p := n.pending[tx]
	delete(n.pending, tx)
	n.mu.Unlock()
	if committed && len(p) > 0 {
		n.publish(p)
	}
}

// publish delivers SQLite notifications to every handle on the file.
func (n *Notifier) publish(notes []notification) {
	peersMu.Lock()
	peers := make([]*Notifier, 0, len(sqlitePeers[n.path]))
	for p := range sqlitePeers[n.path] {
		peers = append(peers, p)
	}
	peersMu.Unlock()
	for _, p := range peers {
		for _, nt := range notes {
			p.deliver(nt.channel, nt.payload)
		}
	}
}

// deliver hands payload to this notifier's listeners of channel without
// blocking.
func (n *Notifier) deliver(channel, payload string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for s := range n.subs[channel] {
		select {
		case s.ch <- payload:
		default: // full: the reader has one pending already
		}
	}
}

// Listen returns a channel that receives the payload of every
// notification on channel committed after Listen returns, until ctx ends
// or the database closes (then it is closed). On PostgreSQL it returns
// once the channel is being listened to, or the error of the first
// connection.
func (n *Notifier) Listen(ctx context.Context, channel string) (<-chan string, error) {
	if err := check(channel, ""); err != nil {
		return nil, err
	}
	s := &subscription{ch: make(chan string, listenBuffer)}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, fmt.Errorf("store: listen %s: %w", channel, ErrClosed)
	}
	if n.subs[channel] == nil {
		n.subs[channel] = map[*subscription]struct{}{}
	}
	n.subs[channel][s] = struct{}{}
	var l *pgListener
	if n.dialect == Postgres {
		if l = n.listeners[channel]; l == nil {
			lctx, cancel := context.WithCancel(context.Background())
			l = &pgListener{channel: channel, cancel: cancel, ready: make(chan struct{})}
			n.listeners[channel] = l
			go n.run(lctx, l)
		}
	}
	n.mu.Unlock()
	if l != nil {
		select {
		case <-l.ready:
			if l.err != nil {
				n.remove(channel, s)
				return nil, fmt.Errorf("store: listen %s: %w", channel, l.err)
			}
		case <-ctx.Done():
			n.remove(channel, s)
			return nil, fmt.Errorf("store: listen %s: %w", channel, ctx.Err())
		}
	}
	stop := context.AfterFunc(ctx, func() { n.remove(channel, s) })
	// close reads s.stop under n.mu: set it there, unless the subscription
	// already ended (the context, or the notifier closing meanwhile).
	n.mu.Lock()
	if _, live := n.subs[channel][s]; live && !n.closed {
		s.stop = stop
		stop = nil
	}
	n.mu.Unlock()
	if stop != nil {
		stop()
	}
	return s.ch, nil
}

// remove ends subscription s; the channel's last one stops its listener.
func (n *Notifier) remove(channel string, s *subscription) {
	n.mu.Lock()
	defer n.mu.Unlock()
	subs := n.subs[channel]
	if _, ok := subs[s]; !ok {
		return
	}
	delete(subs, s)
	close(s.ch)
	if len(subs) == 0 {
		delete(n.subs, channel)
		if l := n.listeners[channel]; l != nil {
			delete(n.listeners, channel)
			l.cancel()
		}
	}
}

func (n *Notifier) close() {
	if n.dialect != Postgres {
		peersMu.Lock()
		delete(sqlitePeers[n.path], n)
		if len(sqlitePeers[n.path]) == 0 {
			delete(sqlitePeers, n.path)
		}
		peersMu.Unlock()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	for _, subs := range n.subs {
		for s := range subs {
			if s.stop != nil {
				s.stop()
			}
			close(s.ch)
		}
	}
	n.subs = map[string]map[*subscription]struct{}{}
	for _, l := range n.listeners {
		l.cancel()
	}
	n.listeners = map[string]*pgListener{}
}

// pgListener is the dedicated connection listening to one channel.
type pgListener struct {
	channel string
	cancel  context.CancelFunc
	ready   chan struct{} // closed after the first connection attempt
	err     error         // its error, set before ready closes
}

// Reconnect backoff of a lost listening connection.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// run keeps l's connection listening until ctx ends.
func (n *Notifier) run(ctx context.Context, l *pgListener) {
	first := true
	backoff := minBackoff
	for {
		conn, err := n.connect(ctx, l.channel)
		if err != nil {
			if first {
				l.err = err
				close(l.ready)
				n.mu.Lock()
				if n.listeners[l.channel] == l {
					delete(n.listeners, l.channel)
				}
				n.mu.Unlock()
				l.cancel()
				return
			}
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		if first {
			first = false
			close(l.ready)
		} else {
			n.deliver(l.channel, Reconnected)
		}
		for {
			nt, err := conn.WaitForNotification(ctx)
			if err != nil {
				break
			}
			n.deliver(nt.Channel, nt.Payload)
		}
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn.Close(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
	}
}

// ListenerApplicationName is the application_name of the listening
// connections (pg_stat_activity).
const ListenerApplicationName = "platform-notifier"

// connect opens a connection that listens to channel.
func (n *Notifier) connect(ctx context.Context, channel string) (*pgx.Conn, error) {
	cfg := n.pgcfg.Copy()
	cfg.RuntimeParams["application_name"] = ListenerApplicationName
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("listen: %w", err)
	}
	return conn, nil
}

// absPath is the key under which SQLite handles of one file find each
// other.
func absPath(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}
