package payments

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestMain stops the PostgreSQL server of PLATFORM_TEST_STORE=postgres runs.
func TestMain(m *testing.M) { pgtest.Main(m) }

var (
	pgMu  sync.Mutex
	pgDSN = map[string]string{} // data directory -> its metadata database
)

// storeDSN names the metadata store of data directory dir: its SQLite file,
// or under PLATFORM_TEST_STORE=postgres one PostgreSQL database per
// directory, so a process started again on dir (a restart) finds its data.
func storeDSN(t *testing.T, dir string) string {
	t.Helper()
	if os.Getenv("PLATFORM_TEST_STORE") != "postgres" {
		return filepath.Join(dir, "platform.db")
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
