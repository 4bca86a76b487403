package databases_test

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestMain stops the PostgreSQL server of PLATFORM_TEST_STORE=postgres runs.
func TestMain(m *testing.M) { pgtest.Main(m) }

var (
	pgMu  sync.Mutex
	pgDSN = map[string]string{} // data directory -> its metadata database
)

// crashStoreEnv hands TestCrashChild the PostgreSQL database its parent
// reopens after the kill.
const crashStoreEnv = "DATABASES_CRASH_STORE"

// storeFor returns the PostgreSQL database of data directory dir under
// PLATFORM_TEST_STORE=postgres, or "" on SQLite (the store is in dir).
func storeFor(t *testing.T, dir string) string {
	t.Helper()
	if os.Getenv("PLATFORM_TEST_STORE") != "postgres" {
		return ""
	}
	pgMu.Lock()
	defer pgMu.Unlock()
	dsn, ok := pgDSN[dir]
	if !ok {
		dsn = pgtest.MigratedDSN(t)
		pgDSN[dir] = dsn
	}
	return dsn
}

// newCP starts the assembled control plane. Under PLATFORM_TEST_STORE=postgres
// a control plane started again on the same data directory (a restart) opens
// the same PostgreSQL database, as a real restart does; on SQLite the store
// lives in the data directory anyway.
func newCP(t *testing.T, o cptest.Options) *cptest.Env {
	t.Helper()
	child := os.Getenv(crashStoreEnv)
	if child == "" && os.Getenv("PLATFORM_TEST_STORE") != "postgres" {
		return cptest.New(t, o)
	}
	inner := o.Configure
	o.Configure = func(c *controlplane.Config) {
		if inner != nil {
			inner(c)
		}
		if child != "" {
			c.Store = child
			return
		}
		c.Store = storeFor(t, c.DataDir)
	}
	return cptest.New(t, o)
}

// childEnv is the environment of a child test process on data directory
// dir: its PostgreSQL database named directly, so the child starts no
// server of its own.
func childEnv(t *testing.T, dir string) []string {
	t.Helper()
	dsn := storeFor(t, dir)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLATFORM_TEST_STORE=") {
			env = append(env, kv)
		}
	}
	if dsn != "" {
		env = append(env, crashStoreEnv+"="+dsn)
	}
	return env
}
