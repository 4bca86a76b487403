package store_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// bound is how long a notification may take: a failure bound, never a wait.
const bound = 10 * time.Second

func open(t *testing.T, dsn string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func receive(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case p, ok := <-ch:
		if !ok {
			t.Fatal("listener closed")
		}
		return p
	case <-time.After(bound):
		t.Fatalf("no notification within %v", bound)
	}
	return ""
}

// TestNotifyAcrossHandles: a notification committed through handle A
// reaches the listeners of A and of B (another replica on PostgreSQL,
// another handle on the same file on SQLite); a rolled-back one reaches
// nobody.
func TestNotifyAcrossHandles(t *testing.T) {
	ctx := context.Background()
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			dsn := e.DSN(t)
			a, b := open(t, dsn), open(t, dsn)
			onA, err := a.Notifier().Listen(ctx, "changes")
			if err != nil {
				t.Fatal(err)
			}
			onB, err := b.Notifier().Listen(ctx, "changes")
			if err != nil {
				t.Fatal(err)
			}
			other, err := b.Notifier().Listen(ctx, "other")
			if err != nil {
				t.Fatal(err)
			}
			rollback := errors.New("rolled back")
			if err := a.Tx(ctx, func(tx *sql.Tx) error {
				if err := a.Notifier().Notify(ctx, tx, "changes", "lost"); err != nil {
					return err
				}
				return rollback
			}); !errors.Is(err, rollback) {
				t.Fatal(err)
			}
			for i, p := range []string{"v1", "v2"} {
				if err := a.Tx(ctx, func(tx *sql.Tx) error { return a.Notifier().Notify(ctx, tx, "changes", p) }); err != nil {
					t.Fatal(err)
				}
				for name, ch := range map[string]<-chan string{"A": onA, "B": onB} {
					if got := receive(t, ch); got != p {
						t.Fatalf("notification %d on %s: %q, want %q", i, name, got, p)
					}
				}
			}
			// Outside a transaction: at once. Channels are separate.
			if err := a.Notifier().Notify(ctx, a, "other", "direct"); err != nil {
				t.Fatal(err)
			}
			if got := receive(t, other); got != "direct" {
				t.Fatalf("other: %q", got)
			}
			select {
			case p := <-onB:
				t.Fatalf("a notification on another channel arrived: %q", p)
			default:
			}
		})
	}
}

func TestNotifyRefusals(t *testing.T) {
	ctx := context.Background()
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			db := e.Open(t)
			tests := []struct {
				name, channel, payload string
				want                   error
			}{
				{"empty channel", "", "x", store.ErrBadChannel},
				{"long channel", strings.Repeat("a", store.MaxChannel+1), "x", store.ErrBadChannel},
				{"upper case", "Changes", "x", store.ErrBadChannel},
				{"quote", `a"b`, "x", store.ErrBadChannel},
				{"long payload", "ok", strings.Repeat("x", store.MaxPayload+1), store.ErrBadPayload},
				{"NUL", "ok", "a\x00b", store.ErrBadPayload},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					err := db.Tx(ctx, func(tx *sql.Tx) error { return db.Notifier().Notify(ctx, tx, tt.channel, tt.payload) })
					if !errors.Is(err, tt.want) {
						t.Fatalf("notify: %v, want %v", err, tt.want)
					}
					if tt.want == store.ErrBadChannel {
						if _, err := db.Notifier().Listen(ctx, tt.channel); !errors.Is(err, tt.want) {
							t.Fatalf("listen: %v", err)
						}
					}
				})
			}
			if err := db.Tx(ctx, func(tx *sql.Tx) error {
				return db.Notifier().Notify(ctx, tx, "ok", strings.Repeat("x", store.MaxPayload))
			}); err != nil {
				t.Fatalf("longest payload: %v", err)
			}
			if e.Name == "sqlite" {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				if err := db.Notifier().Notify(ctx, tx, "ok", "x"); !errors.Is(err, store.ErrForeignTx) {
					t.Fatalf("foreign tx: %v", err)
				}
			}
		})
	}
}

// TestListenEnds: a listener's channel closes when its context ends or the
// database closes; Listen on a closed database fails.
func TestListenEnds(t *testing.T) {
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			db, err := store.Open(context.Background(), e.DSN(t))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			ch, err := db.Notifier().Listen(ctx, "c")
			if err != nil {
				t.Fatal(err)
			}
			kept, err := db.Notifier().Listen(context.Background(), "c")
			if err != nil {
				t.Fatal(err)
			}
			cancel()
			for name, c := range map[string]<-chan string{"cancelled": ch} {
				select {
				case _, ok := <-c:
					if ok {
						t.Fatalf("%s: a payload", name)
					}
				case <-time.After(bound):
					t.Fatalf("%s: still open", name)
				}
			}
			db.Close()
			select {
			case _, ok := <-kept:
				if ok {
					t.Fatal("closed db: a payload")
				}
			case <-time.After(bound):
				t.Fatal("closed db: listener still open")
			}
			if _, err := db.Notifier().Listen(context.Background(), "c"); !errors.Is(err, store.ErrClosed) {
				t.Fatalf("listen after close: %v", err)
			}
		})
	}
}

// TestListenReconnects: the server ends the listening connection; the
// listener gets store.Reconnected once it listens again, then later
// notifications.
func TestListenReconnects(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	ch, err := db.Notifier().Listen(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = ?`, store.ListenerApplicationName).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminate listener: %d %v", n, err)
	}
	if got := receive(t, ch); got != store.Reconnected {
		t.Fatalf("after reconnect: %q", got)
	}
	if err := db.Tx(ctx, func(tx *sql.Tx) error { return db.Notifier().Notify(ctx, tx, "c", "after") }); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, ch); got != "after" {
		t.Fatalf("after reconnect: %q", got)
	}
}
