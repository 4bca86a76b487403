package billing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

// fixture is a ledger over a fresh store with workspaces of every plan.
type fixture struct {
	db    *store.DB
	clk   *clock.Fake
	audit *audit.Log
	l     *Ledger

	mu    sync.Mutex
	plans map[string]plans.Name
}

func (f *fixture) PlanOf(_ context.Context, ws string) (plans.Name, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.plans[ws]
	if !ok {
		return "", ErrUnknownWorkspace.detail("%s", ws)
	}
	return p, nil
}

func TestMain(m *testing.M) { pgtest.Main(m) }

// syncEngine is SQLite with the hot path off (Config.Synchronous).
const syncEngine = "sqlite_synchronous"

// eachMode runs test on SQLite's hot path, SQLite synchronous and
// PostgreSQL (always synchronous).
func eachMode(t *testing.T, test func(t *testing.T, e pgtest.Engine)) {
	engines := pgtest.Engines()
	engines = append(engines, pgtest.Engine{Name: syncEngine, Open: pgtest.OpenSQLite, DSN: pgtest.SQLitePath})
	for _, e := range engines {
		t.Run(e.Name, func(t *testing.T) { test(t, e) })
	}
}

// eachEngine runs test once on SQLite and once on PostgreSQL.
func eachEngine(t *testing.T, test func(t *testing.T, e pgtest.Engine)) {
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) { test(t, e) })
	}
}

func newFixture(t testing.TB, e pgtest.Engine) *fixture {
	t.Helper()
	db := e.Open(t)
	f := &fixture{db: db, clk: clock.NewFake(t0), plans: map[string]plans.Name{}}
	f.audit = audit.New(db, f.clk)
	f.l = f.newLedger(t, Config{Synchronous: e.Name == syncEngine}, nil)
	for _, p := range plans.All() {
		f.workspace(t, "ws_"+string(p), p)
	}
	return f
}

// newLedger builds a ledger over the fixture's database, plans and audit
// log, closed at the end of the test; with jobs, its jobs are registered.
func (f *fixture) newLedger(t testing.TB, cfg Config, runner *jobs.Runner) *Ledger {
	t.Helper()
	d := Deps{DB: f.db, Clock: f.clk, Audit: f.audit, Plans: f}
	if runner != nil {
		d.Jobs = runner
	}
	l, err := New(cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// workspace creates a workspace row (accounts' table; test setup only).
func (f *fixture) workspace(t testing.TB, id string, p plans.Name) {
	t.Helper()
	if _, err := f.db.Exec(`INSERT INTO workspaces (id, name, plan, created_at) VALUES (?,?,?,?)`, id, id, string(p), store.FormatTime(t0)); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.plans[id] = p
	f.mu.Unlock()
}

func (f *fixture) load(t testing.TB, ws string, m Micros) {
	t.Helper()
	if err := f.l.AddBalance(context.Background(), ws, m, "test", "setup"); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) summary(t testing.TB, ws string) Summary {
	t.Helper()
	s, err := f.l.Summary(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) verify(t testing.TB) {
	t.Helper()
	if err := f.l.VerifyAll(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) reserve(t testing.TB, ws string, m Micros) Reservation {
	t.Helper()
	r, err := f.l.Reserve(context.Background(), ReserveRequest{Workspace: ws, Purpose: PurposeAI, Ref: "req", Amount: m})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) settle(t testing.TB, id string, m Micros) {
	t.Helper()
	if err := f.l.Settle(context.Background(), id, m); err != nil {
		t.Fatal(err)
	}
}

// money is the part of a Summary the tests compare.
type money struct{ Balance, Reserved, IncludedUsed, IncludedReserved, IncludedLeft, MonthSpend, Owed Micros }

func moneyOf(s Summary) money {
	return money{s.Balance, s.Reserved, s.IncludedUsed, s.IncludedReserved, s.IncludedLeft, s.MonthSpend, s.Owed}
}

func (m money) String() string {
	return fmt.Sprintf("balance %s reserved %s included used %s held %s left %s spend %s owed %s",
		m.Balance.USD(), m.Reserved.USD(), m.IncludedUsed.USD(), m.IncludedReserved.USD(), m.IncludedLeft.USD(), m.MonthSpend.USD(), m.Owed.USD())
}

func wantErr(t testing.TB, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
}

const usd = Dollar
