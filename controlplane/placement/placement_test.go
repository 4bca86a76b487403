package placement_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/placement"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestConfigValidate(t *testing.T) {
	ok := placement.Config{NodeID: "node-a", URL: "http://10.0.0.5:7070"}
	for _, tc := range []struct {
		name string
		edit func(*placement.Config)
		want error
	}{
		{"valid", func(*placement.Config) {}, nil},
		{"trailing slash", func(c *placement.Config) { c.URL = "https://a.internal:7070/" }, nil},
		{"upper case id", func(c *placement.Config) { c.NodeID = "Node-A" }, placement.ErrBadNodeID},
		{"id with a slash", func(c *placement.Config) { c.NodeID = "a/b" }, placement.ErrBadNodeID},
		{"id too long", func(c *placement.Config) { c.NodeID = string(make([]byte, 65)) }, placement.ErrBadNodeID},
		{"no url", func(c *placement.Config) { c.URL = "" }, placement.ErrBadURL},
		{"relative url", func(c *placement.Config) { c.URL = "10.0.0.5:7070" }, placement.ErrBadURL},
		{"ftp", func(c *placement.Config) { c.URL = "ftp://a:21" }, placement.ErrBadURL},
		{"path", func(c *placement.Config) { c.URL = "http://a:7070/api" }, placement.ErrBadURL},
		{"query", func(c *placement.Config) { c.URL = "http://a:7070?x=1" }, placement.ErrBadURL},
		{"credentials", func(c *placement.Config) { c.URL = "http://u:p@a:7070" }, placement.ErrBadURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			if err := c.Provision(); err != nil {
				t.Fatal(err)
			}
			err := c.Validate()
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Validate() = %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("stale not past the heartbeat", func(t *testing.T) {
		c := ok
		c.HeartbeatEvery, c.StaleAfter = 5*time.Second, 5*time.Second
		if err := c.Validate(); err == nil {
			t.Fatal("accepted a stale time equal to the heartbeat")
		}
	})
}

func TestNodeIDPersisted(t *testing.T) {
	dir := t.TempDir()
	a, err := placement.NodeID(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := placement.NodeID(dir)
	if err != nil || a != b || !placement.ValidNodeID(a) {
		t.Fatalf("second read %q (%v), first %q", b, err, a)
	}
	if other, _ := placement.NodeID(t.TempDir()); other == a {
		t.Fatalf("two data directories derived the same id %q", a)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "node-id"), []byte("../etc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := placement.NodeID(bad); !errors.Is(err, placement.ErrBadNodeID) {
		t.Fatalf("a tampered node-id file: %v, want ErrBadNodeID", err)
	}
}

// pair is two nodes registered on one metadata database, each with its
// own handle and clock (as two processes).
type pair struct {
	a, b       *placement.Registry
	dbA, dbB   *store.DB
	clkA, clkB *clock.Fake
}

func newPair(t *testing.T, e pgtest.Engine, urlA, urlB string) pair {
	t.Helper()
	dsn := e.DSN(t)
	var p pair
	start := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	p.clkA, p.clkB = clock.NewFake(start), clock.NewFake(start)
	p.dbA, p.a = newNode(t, dsn, p.clkA, "node-a", urlA)
	p.dbB, p.b = newNode(t, dsn, p.clkB, "node-b", urlB)
	return p
}

func newNode(t testing.TB, dsn string, clk clock.Clock, id, url string) (*store.DB, *placement.Registry) {
	t.Helper()
	db, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	reg, err := placement.New(context.Background(), placement.Config{NodeID: id, URL: url, HeartbeatEvery: time.Hour, StaleAfter: 2 * time.Hour}, placement.Deps{DB: db, Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return db, reg
}

// assign records, as node r, that it owns a database.
func assign(t testing.TB, db *store.DB, r *placement.Registry, id string) {
	t.Helper()
	if err := db.Tx(context.Background(), func(tx *sql.Tx) error { return r.Assign(context.Background(), tx, placement.KindDatabase, id) }); err != nil {
		t.Fatal(err)
	}
}

func TestRegistry(t *testing.T) {
	ctx := context.Background()
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			p := newPair(t, e, "http://127.0.0.1:1", "http://127.0.0.1:2")
			assign(t, p.dbA, p.a, "db_1")

			t.Run("owner seen from both nodes", func(t *testing.T) {
				o, err := p.a.Owner(ctx, placement.KindDatabase, "db_1")
				if err != nil || !o.Self || o.ID != "node-a" {
					t.Fatalf("A: %+v, %v", o, err)
				}
				o, err = p.b.Owner(ctx, placement.KindDatabase, "db_1")
				if err != nil || o.Self || o.ID != "node-a" || o.URL != "http://127.0.0.1:1" || o.Stale {
					t.Fatalf("B: %+v, %v", o, err)
				}
			})
			t.Run("a second assign is refused", func(t *testing.T) {
				err := p.dbB.Tx(ctx, func(tx *sql.Tx) error { return p.b.Assign(ctx, tx, placement.KindDatabase, "db_1") })
				if err == nil || !store.IsUniqueViolation(err) {
					t.Fatalf("B took A's database: %v", err)
				}
			})
			t.Run("unplaced", func(t *testing.T) {
				if _, err := p.b.Owner(ctx, placement.KindDatabase, "db_none"); !errors.Is(err, placement.ErrUnplaced) {
					t.Fatalf("Owner of nothing: %v", err)
				}
			})
			t.Run("claim takes only what has no owner", func(t *testing.T) {
				if owner, err := p.b.Claim(ctx, p.dbB, placement.KindDatabase, "db_old"); err != nil || owner != "node-b" {
					t.Fatalf("B claims db_old: %q, %v", owner, err)
				}
				if owner, err := p.a.Claim(ctx, p.dbA, placement.KindDatabase, "db_old"); err != nil || owner != "node-b" {
					t.Fatalf("A claims B's db_old: %q, %v", owner, err)
				}
				if owner, err := p.b.Claim(ctx, p.dbB, placement.KindDatabase, "db_1"); err != nil || owner != "node-a" {
					t.Fatalf("B claims A's db_1: %q, %v", owner, err)
				}
				owned, err := p.a.Owned(ctx, placement.KindDatabase)
				if err != nil || len(owned) != 1 || owned[0] != "db_1" {
					t.Fatalf("A owns %v, %v", owned, err)
				}
			})
			t.Run("stale heartbeat, then a fresh one", func(t *testing.T) {
				p.clkB.Advance(3 * time.Hour)
				o, err := p.b.Owner(ctx, placement.KindDatabase, "db_1")
				if err != nil || !o.Stale {
					t.Fatalf("A silent for 3h: %+v, %v", o, err)
				}
				p.clkA.Advance(3 * time.Hour)
				if err := p.a.Heartbeat(ctx); err != nil {
					t.Fatal(err)
				}
				// "Down" is trusted for a second, then read again.
				if o, _ = p.b.Owner(ctx, placement.KindDatabase, "db_1"); !o.Stale {
					t.Fatal("read the nodes again at once")
				}
				p.clkB.Advance(time.Second)
				o, err = p.b.Owner(ctx, placement.KindDatabase, "db_1")
				if err != nil || o.Stale {
					t.Fatalf("after A's heartbeat: %+v, %v", o, err)
				}
			})
			t.Run("a live node id cannot start twice", func(t *testing.T) {
				_, err := placement.New(ctx, placement.Config{NodeID: "node-a", URL: "http://127.0.0.1:9", HeartbeatEvery: time.Hour, StaleAfter: 2 * time.Hour}, placement.Deps{DB: p.dbB, Clock: p.clkA, Logger: quiet})
				if !errors.Is(err, placement.ErrNodeIDInUse) {
					t.Fatalf("second node-a at another address: %v", err)
				}
				p.clkA.Advance(3 * time.Hour) // node-a silent past stale: a restart elsewhere may take the id
				if _, err := placement.New(ctx, placement.Config{NodeID: "node-a", URL: "http://127.0.0.1:9", HeartbeatEvery: time.Hour, StaleAfter: 2 * time.Hour},
					placement.Deps{DB: p.dbB, Clock: p.clkA, Logger: quiet}); err != nil {
					t.Fatalf("restart of a stale node-a: %v", err)
				}
			})
			t.Run("nodes", func(t *testing.T) {
				nodes, err := p.b.Nodes(ctx)
				if err != nil || len(nodes) != 2 {
					t.Fatalf("nodes %+v, %v", nodes, err)
				}
			})
		})
	}
}
