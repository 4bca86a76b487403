package areatest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"github.com/svcplatform/platform/internal/passhash"
)

// OwnerKey is the API key of the owner a Core bootstraps.
const OwnerKey = "test-owner-key-0123456789abcdef"

// FastHash keeps argon2id cheap in tests.
var FastHash = passhash.Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}

// T0 is when a Core's fake clock starts.
var T0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

// StoreDSN is the metadata store of a test: the SQLite file at path, or
// under PLATFORM_TEST_STORE=postgres a fresh PostgreSQL database dropped
// when t ends.
func StoreDSN(t testing.TB, path string) string {
	t.Helper()
	if os.Getenv("PLATFORM_TEST_STORE") == "postgres" {
		return pgtest.MigratedDSN(t)
	}
	return path
}

// Discard is a logger that writes nothing.
func Discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Core is the real core services an area builds on when its tests want
// them rather than the fakes: the store of StoreDSN in Dir, a fake clock
// at T0, audit, metering, accounts with workspace "Test" bootstrapped on
// a plan with the owner's key OwnerKey, a sealer and projects (apps
// domain apps.test). The store and accounts close when the test ends.
type Core struct {
	T         testing.TB
	Dir       string
	DB        *store.DB
	Clock     *clock.Fake
	Audit     *audit.Log
	Meter     *metering.Meter
	Accounts  *accounts.Service
	Sealer    *seal.Sealer
	Projects  *projects.Service
	Owner     *auth.Principal
	Workspace string // the owner's workspace
}

// NewCore builds the core services with the workspace on plan.
func NewCore(t testing.TB, plan plans.Name) *Core {
	t.Helper()
	ctx := context.Background()
	c := &Core{T: t, Dir: t.TempDir(), Clock: clock.NewFake(T0)}
	var err error
	if c.DB, err = store.Open(ctx, StoreDSN(t, filepath.Join(c.Dir, "platform.db"))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DB.Close() })
	c.Audit = audit.New(c.DB, c.Clock)
	c.Meter = metering.New(c.DB, c.Clock)
	if c.Accounts, err = accounts.New(ctx, accounts.Config{}, accounts.Deps{DB: c.DB, Clock: c.Clock, Audit: c.Audit, Logger: Discard()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Accounts.Close() })
	c.Accounts.SetHashParams(FastHash)
	if c.Sealer, err = seal.LoadOrCreate(filepath.Join(c.Dir, "seal.key")); err != nil {
		t.Fatal(err)
	}
	if c.Projects, err = projects.New(projects.Config{AppsDomain: "apps.test"}, projects.Deps{DB: c.DB, Clock: c.Clock, Audit: c.Audit, Meter: c.Meter, Sealer: c.Sealer}); err != nil {
		t.Fatal(err)
	}
	b, err := c.Accounts.EnsureBootstrap(ctx, accounts.BootstrapConfig{WorkspaceName: "Test", OwnerEmail: "owner@example.com", Plan: plan, Key: OwnerKey})
	if err != nil {
		t.Fatal(err)
	}
	c.Workspace = b.Workspace.ID
	c.Owner = c.Principal(OwnerKey)
	return c
}

// Principal authenticates key with accounts and fails the test unless it
// is a live key.
func (c *Core) Principal(key string) *auth.Principal {
	c.T.Helper()
	return Principal(c.T, c.Accounts, key)
}

// NewProject creates a project of the owner and returns its id.
func (c *Core) NewProject(name string) string {
	c.T.Helper()
	p, err := c.Projects.Create(context.Background(), c.Owner, projects.CreateRequest{Name: name})
	if err != nil {
		c.T.Fatal(err)
	}
	return p.ID
}

// Key makes a key of the owner; see NewKey.
func (c *Core) Key(access, project string) string {
	c.T.Helper()
	return NewKey(c.T, c.Accounts, c.Owner, access, project)
}

// Principal authenticates key ("Bearer key") with a and fails the test
// unless it is a live key.
func Principal(t testing.TB, a *accounts.Service, key string) *auth.Principal {
	t.Helper()
	r, _ := http.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer "+key)
	p, err := a.Authenticate(r)
	if err != nil || p == nil {
		t.Fatalf("authenticate: %v", err)
	}
	return p
}

// NewKey makes a key of owner with a and returns its secret: access full
// or read_only, limited to project when that is not empty. The project is
// not looked up, so a key may name a project only a fake holds.
func NewKey(t testing.TB, a *accounts.Service, owner *auth.Principal, access, project string) string {
	t.Helper()
	k, err := a.CreateKey(context.Background(), owner, accounts.CreateKeyRequest{Name: "k", Access: access, ProjectID: project},
		func(context.Context, string, string) (bool, error) { return true, nil })
	if err != nil {
		t.Fatal(err)
	}
	return k.Secret
}

// Start runs run in a goroutine (an area's Run loop); stop cancels its
// context, waits for it to return and reports an error it returned. stop
// may be called more than once.
func Start(t testing.TB, run func(ctx context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- run(ctx) }()
	return sync.OnceFunc(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	})
}
