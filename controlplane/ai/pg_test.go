package ai

import (
	"testing"

	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestMain stops the PostgreSQL server of PLATFORM_TEST_STORE=postgres runs.
func TestMain(m *testing.M) { pgtest.Main(m) }
