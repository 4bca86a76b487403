package billing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// DefaultReservationTTL is how long a reservation holds money before
// SettleExpired releases it: with SettleExpired running every five minutes
// a lost request's reservation is settled within about half an hour, as the
// specification says.
const DefaultReservationTTL = 25 * time.Minute

// Config tunes a Ledger. The zero value takes the defaults.
type Config struct {
	// ReservationTTL is how long a reservation lives (DefaultReservationTTL when 0).
	ReservationTTL time.Duration
	// Synchronous turns the hot path off on SQLite: every Reserve, Settle
	// and Release is then its own committed transaction before it returns,
	// as on PostgreSQL (where replicas share the rows and the hot path is
	// never used).
	Synchronous bool
	// CommitEvery is how long the hot path's writer lets movements
	// accumulate before committing them together (DefaultCommitEvery when
	// 0, none when negative); a Flush, a refusal being checked or Close
	// commits at once. It bounds what a crash can lose.
	CommitEvery time.Duration
}

// DefaultCommitEvery is the hot path's default batching delay.
const DefaultCommitEvery = 2 * time.Millisecond

// Deps are what the ledger is built on.
type Deps struct {
	// DB holds the ledger's tables.
	DB *store.DB
	// Clock dates movements and months (clock.System when nil).
	Clock clock.Clock
	// Audit records AddBalance and spending-limit changes (audit.New over
	// DB when nil).
	Audit *audit.Log
	// Plans tells each workspace's plan (accounts).
	Plans PlanSource
	// Jobs, when set, runs JobSettleExpired every SettleInterval; without
	// it (the operator's balance command) nothing settles expired
	// reservations.
	Jobs jobs.Queue
	// Logger receives the hot path's commit failures (slog.Default when nil).
	Logger *slog.Logger
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Plans": d.Plans != nil} {
		if !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%w: %s", ErrNotConfigured, strings.Join(missing, ", "))
	}
	return nil
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("billing: missing dependencies")

// Ledger is the billing ledger of every workspace.
type Ledger struct {
	db    *store.DB
	clk   clock.Clock
	audit *audit.Log
	plans PlanSource
	cfg   Config
	m     *metrics
	log   *slog.Logger
	hot   *hot // nil: every movement commits before returning
}

// New returns the ledger over d.DB and, with d.Jobs, registers the
// settlement of expired reservations. It starts nothing: Run listens for
// plan changes.
//
// On SQLite the ledger takes the hot path (README "Hot path") unless
// cfg.Synchronous: then it must be the only Ledger of that database in the
// process, and other processes may only add Balance (the operator's
// command). Close commits what is pending.
func New(cfg Config, d Deps) (*Ledger, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if cfg.ReservationTTL <= 0 {
		cfg.ReservationTTL = DefaultReservationTTL
	}
	if cfg.CommitEvery == 0 {
		cfg.CommitEvery = DefaultCommitEvery
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Audit == nil {
		d.Audit = audit.New(d.DB, d.Clock)
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	l := &Ledger{db: d.DB, clk: d.Clock, audit: d.Audit, plans: d.Plans, cfg: cfg, m: newMetrics(), log: d.Logger}
	if d.DB.Dialect() != store.Postgres && !cfg.Synchronous {
		l.hot = newHot(l)
	}
	if d.Jobs != nil {
		l.registerJobs(d.Jobs)
	}
	return l, nil
}

// Run keeps workspaces' plans in memory on the hot path while it listens
// for plan changes, until ctx ends (without it they are read every time).
// Off the hot path there is nothing to run and it returns at once.
func (l *Ledger) Run(ctx context.Context) error {
	if l.hot == nil {
		return nil
	}
	return l.hot.listen(ctx)
}

// Close commits the movements still pending on the hot path and stops its
// writer; later movements commit before they return. Call it before
// closing the database.
func (l *Ledger) Close() error {
	if l.hot != nil {
		l.hot.close()
	}
	return nil
}

// Flush waits until every movement made so far is committed (a no-op off
// the hot path). Reads of the ledger's tables flush first.
func (l *Ledger) Flush() error {
	if l.hot == nil {
		return nil
	}
	return l.hot.w.flush()
}

// exclusive runs fn, a synchronous transaction of workspace ws, ordered
// with the hot path's movements of ws.
func (l *Ledger) exclusive(ws string, fn func() error) error {
	if l.hot == nil {
		return fn()
	}
	return l.hot.exclusive(ws, fn)
}

// tx runs fn as one ledger transaction of workspace ws.
func (l *Ledger) tx(ctx context.Context, ws string, fn func(t *txn) error) error {
	return l.db.Tx(ctx, func(tx *sql.Tx) error {
		return fn(&txn{ctx: ctx, tx: tx, now: l.clk.Now(), ws: ws})
	})
}

func (l *Ledger) terms(ctx context.Context, ws string) (plans.Name, Terms, error) {
	if ws == "" {
		return "", Terms{}, ErrUnknownWorkspace.detail("no workspace given")
	}
	p, err := l.plans.PlanOf(ctx, ws)
	if err != nil {
		return "", Terms{}, fmt.Errorf("billing: plan of %s: %w", ws, err)
	}
	return p, TermsOf(p), nil
}

func checkAmount(what string, a Micros) error {
	if a <= 0 || a > MaxAmount {
		return ErrInvalidAmount.detail("%s must be more than 0 and at most %s dollars, not %d micro-dollars", what, MaxAmount.USD(), a)
	}
	return nil
}
