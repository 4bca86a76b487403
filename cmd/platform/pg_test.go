package main

import (
	"testing"

	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestMain stops the PostgreSQL server the tests may start.
func TestMain(m *testing.M) { pgtest.Main(m) }
