package databases_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/databases"
	"github.com/svcplatform/platform/controlplane/placement"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// replica is one control plane of a cluster: its own data directory and
// HTTP server, the metadata database shared.
type replica struct {
	*cptest.Env
	fwd *placement.Forwarder
}

// newReplica starts a control plane on the shared store dsn and seal key
// and makes its databases area one replica, named id, among several, with
// the forwarding secret derived from the seal key.
func newReplica(t *testing.T, dsn, sealKey, id string) replica {
	t.Helper()
	e := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) { c.Store, c.SealKeyFile = dsn, sealKey }})
	secret, err := placement.SecretFromKeyFile(sealKey)
	if err != nil {
		t.Fatal(err)
	}
	// Heartbeats far apart: staleness is driven by the fake clock alone.
	reg, err := placement.New(context.Background(), placement.Config{NodeID: id, URL: e.Server.URL, HeartbeatEvery: time.Hour, StaleAfter: 2 * time.Hour}, placement.Deps{DB: e.CP.DB, Clock: e.Clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := placement.NewForwarder(reg, secret, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.CP.Databases().SetCluster(context.Background(), fwd); err != nil {
		t.Fatal(err)
	}
	return replica{Env: e, fwd: fwd}
}

// file is where replica r would keep database id.
func (r replica) file(id string) string {
	return filepath.Join(r.CP.Config().DataDir, "databases", id+".db")
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestTwoNodes runs two control-plane replicas on one metadata database:
// a database created through A lives in A's directory only, and B forwards
// every request for it to A, or answers 503 naming A when A is down.
func TestTwoNodes(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			dsn := eng.DSN(t)
			sealKey := filepath.Join(t.TempDir(), "seal.key")
			if err := os.WriteFile(sealKey, bytes.Repeat([]byte{42}, 32), 0o600); err != nil {
				t.Fatal(err)
			}
			a := newReplica(t, dsn, sealKey, "node-a")
			b := newReplica(t, dsn, sealKey, "node-b")
			project := a.CreateProject("app")

			var created databases.DatabaseAnswer
			a.Owner.Must(http.StatusCreated, "POST", "/api/projects/"+project+"/databases", map[string]any{"name": "main"}).JSON(t, &created)
			id := created.Database.ID

			t.Run("write and query through B", func(t *testing.T) {
				b.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id, sqlBody("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)"))
				b.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id, map[string]any{"batch": []map[string]any{
					{"sql": "INSERT INTO t VALUES (?, ?)", "params": []any{"x", 1}},
					{"sql": "INSERT INTO t VALUES (?, ?)", "params": []any{"y", 2}},
				}})
				r := b.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id, sqlBody("SELECT k, v FROM t ORDER BY k"))
				var got answer
				r.JSON(t, &got)
				if len(got.Results) != 2 || got.Results[1]["k"] != "y" || num(got.Results[1]["v"]) != 2 {
					t.Fatalf("results %+v", got.Results)
				}
				// A sees B's writes: one database, on A.
				if a := (&env{Env: a.Env}).run(a.Owner, id, "SELECT count(*) AS n FROM t"); num(a.Results[0]["n"]) != 2 {
					t.Fatalf("A counts %v", a.Results)
				}
			})
			t.Run("read through B names B's address", func(t *testing.T) {
				var got databases.DatabaseAnswer
				b.Owner.Must(http.StatusOK, "GET", "/api/databases/"+id, nil).JSON(t, &got)
				if got.Database.Endpoint != b.Server.URL+"/api/databases/"+id || got.Database.Status != databases.StatusReady {
					t.Fatalf("endpoint %q status %s", got.Database.Endpoint, got.Database.Status)
				}
			})
			t.Run("export through B", func(t *testing.T) {
				var ex databases.ExportAnswer
				b.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id+"/export", nil).JSON(t, &ex)
				for ex.Status != databases.ExportComplete {
					b.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id+"/export", map[string]any{"bookmark": ex.Bookmark}).JSON(t, &ex)
				}
				path := strings.TrimPrefix(ex.Download, b.Server.URL)
				dump := string(b.Owner.Must(http.StatusOK, "GET", path, nil).Body)
				if !strings.Contains(dump, "INSERT INTO") || !strings.Contains(dump, "'y'") {
					t.Fatalf("dump %q", dump)
				}
			})
			t.Run("a database the workspace does not have answers 404 unforwarded", func(t *testing.T) {
				r := b.Owner.Do("GET", "/api/databases/db_doesnotexist", nil)
				expect(t, r, http.StatusNotFound, "not_found")
				if r.Header.Get(placement.HeaderNode) != "" {
					t.Fatal("forwarded")
				}
			})
			t.Run("the file is only on A", func(t *testing.T) {
				if !exists(a.file(id)) || exists(b.file(id)) {
					t.Fatalf("on A %v, on B %v", exists(a.file(id)), exists(b.file(id)))
				}
			})

			t.Run("a client cannot send the forwarding header", func(t *testing.T) {
				c := b.Client(cptest.OwnerKey)
				c.Header.Set(placement.HeaderForward, "node-a "+strings.Repeat("A", 43))
				expect(t, c.Do("POST", "/api/databases/"+id, sqlBody("SELECT 1")), http.StatusForbidden, "forward_refused")
				c = a.Client(cptest.OwnerKey)
				c.Header.Set(placement.HeaderForward, b.fwd.Sign("POST", "/api/databases/"+id+"/other"))
				expect(t, c.Do("POST", "/api/databases/"+id, sqlBody("SELECT 1")), http.StatusForbidden, "forward_refused")
			})
			t.Run("a forwarded request is never forwarded again", func(t *testing.T) {
				c := b.Client(cptest.OwnerKey)
				c.Header.Set(placement.HeaderForward, a.fwd.Sign("POST", "/api/databases/"+id))
				e := expect(t, c.Do("POST", "/api/databases/"+id, sqlBody("INSERT INTO t VALUES ('loop', 0)")), http.StatusServiceUnavailable, "forward_loop")
				if e["node"] != "node-a" {
					t.Fatalf("loop answer %v", e)
				}
				if n := (&env{Env: a.Env}).run(a.Owner, id, "SELECT count(*) AS n FROM t"); num(n.Results[0]["n"]) != 2 {
					t.Fatal("the looping write ran")
				}
			})

			t.Run("B takes a stale A as down", func(t *testing.T) {
				b.Clock.Advance(3 * time.Hour)
				defer b.Clock.Advance(-3 * time.Hour)
				r := b.Owner.Do("POST", "/api/databases/"+id, sqlBody("SELECT 1"))
				e := expect(t, r, http.StatusServiceUnavailable, "database_unavailable")
				if e["reason"] != "owner_stale" || e["node"] != "node-a" || r.Header.Get("Retry-After") == "" {
					t.Fatalf("%v Retry-After %q", e, r.Header.Get("Retry-After"))
				}
			})

			t.Run("deleting the project through B removes A's file", func(t *testing.T) {
				var other databases.DatabaseAnswer
				p2 := a.CreateProject("second")
				a.Owner.Must(http.StatusCreated, "POST", "/api/projects/"+p2+"/databases", map[string]any{"name": "doomed"}).JSON(t, &other)
				gone := make(chan string, 4)
				databases.OnRemoved(a.CP.Databases(), func(id string) { gone <- id })
				b.Owner.Must(http.StatusOK, "DELETE", "/api/projects/"+p2, nil)
				select {
				case got := <-gone:
					if got != other.Database.ID {
						t.Fatalf("removed %s, want %s", got, other.Database.ID)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("A did not remove the file of a database deleted through B")
				}
				if exists(a.file(other.Database.ID)) {
					t.Fatal("the file is still on A")
				}
				expect(t, b.Owner.Do("GET", "/api/databases/"+other.Database.ID, nil), http.StatusGone, "database_deleted")
			})

			t.Run("A down: B answers 503 naming A, and opens nothing", func(t *testing.T) {
				a.Server.Close()
				r := b.Owner.Do("POST", "/api/databases/"+id, sqlBody("INSERT INTO t VALUES ('z', 3)"))
				e := expect(t, r, http.StatusServiceUnavailable, "database_unavailable")
				if e["reason"] != "owner_unreachable" || e["node"] != "node-a" || r.Header.Get("Retry-After") == "" {
					t.Fatalf("%v Retry-After %q", e, r.Header.Get("Retry-After"))
				}
				if !strings.Contains(e["message"].(string), "node-a") {
					t.Fatalf("message does not name the owner: %v", e["message"])
				}
				if exists(b.file(id)) {
					t.Fatal("B made a copy of A's database")
				}
			})
		})
	}
}

// On a single node (no cluster) the forwarding header means nothing: the
// database answers as it always did.
func TestSingleNodeIgnoresForwardHeader(t *testing.T) {
	e := newEnv(t, "")
	id := e.create("solo")
	c := e.Client(cptest.OwnerKey)
	c.Header.Set(placement.HeaderForward, "node-x "+strings.Repeat("A", 43))
	r := c.Must(http.StatusOK, "POST", "/api/databases/"+id, sqlBody("SELECT 1 AS one"))
	if r.Header.Get(placement.HeaderNode) != "" {
		t.Fatalf("a single node answered as forwarded: %v", r.Header)
	}
}
