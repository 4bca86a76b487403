package media

import (
	"os"
	"testing"

	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestMain stops the PostgreSQL server of PLATFORM_TEST_STORE=postgres runs.
func TestMain(m *testing.M) { pgtest.Main(m) }

// storeDSN is the metadata store of a test: the SQLite file path, or under
// PLATFORM_TEST_STORE=postgres a fresh PostgreSQL database dropped when t ends.
func storeDSN(t testing.TB, path string) string {
	t.Helper()
	if os.Getenv("PLATFORM_TEST_STORE") == "postgres" {
		return pgtest.MigratedDSN(t)
	}
	return path
}
