package deploys_test

import (
	"context"
	"net/http"
	"os"
	"reflect"
	"sync"
	"testing"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// onPostgres reports whether this run keeps the metadata on PostgreSQL
// (PLATFORM_TEST_STORE=postgres).
func onPostgres() bool { return os.Getenv("PLATFORM_TEST_STORE") == "postgres" }

var (
	pgMu  sync.Mutex
	pgSrv *pgtest.Server        // the binary's PostgreSQL, stopped by TestMain
	pgDSN = map[string]string{} // data directory -> its metadata database
)

// newCP starts the assembled control plane. Under PLATFORM_TEST_STORE=postgres
// a control plane started again on the same data directory (a restart) opens
// the same PostgreSQL database, as a real restart does; on SQLite the store
// lives in the data directory anyway.
func newCP(t *testing.T, opts ...cptest.Options) *cptest.Env {
	t.Helper()
	var o cptest.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if onPostgres() {
		o = keepStore(t, o)
	}
	return cptest.New(t, o)
}

// keepStore points o's store at one PostgreSQL database per data directory.
func keepStore(t *testing.T, o cptest.Options) cptest.Options {
	t.Helper()
	srv := pgtest.Get(t)
	pgMu.Lock()
	pgSrv = srv
	pgMu.Unlock()
	inner := o.Configure
	o.Configure = func(c *controlplane.Config) {
		if inner != nil {
			inner(c)
		}
		pgMu.Lock()
		defer pgMu.Unlock()
		dsn, ok := pgDSN[c.DataDir]
		if !ok {
			dsn = pgtest.MigratedDSN(t)
			pgDSN[c.DataDir] = dsn
		}
		c.Store = dsn
	}
	return o
}

// stopPostgres stops the PostgreSQL server the tests started, if any
// (pgtest.Main's work, for a TestMain with its own cleanup).
func stopPostgres() {
	pgMu.Lock()
	defer pgMu.Unlock()
	if pgSrv != nil {
		pgSrv.Stop()
	}
}

// TestStoredCountsEachBlobOnce: the bytes a workspace's deployments keep
// count a file content once per project however many paths or deployments
// point at it (the query runs on both engines).
func TestStoredCountsEachBlobOnce(t *testing.T) {
	env := newCP(t)
	s := newSite(t, env, "Stored")
	c := s.push(t, map[string]string{"index.html": "same bytes", "copy.html": "same bytes", "other.html": "12345"})
	if d := s.deploy(t, c); d.Deployment.State != "live" {
		t.Fatalf("deploy: %+v", d.Deployment)
	}
	s.deploy(t, c) // a second deployment of the same files adds nothing
	r, _ := http.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer "+cptest.OwnerKey)
	p, err := env.CP.Accounts.Authenticate(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := env.CP.Deploys().Stored(context.Background(), p.WorkspaceID)
	if err != nil {
		t.Fatal(err)
	}
	want := []deploys.StoredSize{{Project: s.project, Bytes: int64(len("same bytes") + len("12345")), Objects: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stored %+v, want %+v", got, want)
	}
}
