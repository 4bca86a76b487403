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
	"github.com/svcplatform/platform/controlplane/auth"
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

// ReserveRequest asks to hold an estimate before doing paid work.
type ReserveRequest struct {
	Workspace string
	// Project the spend is attributed to ("" for none).
	Project string
	// Purpose is one of the Purpose constants.
	Purpose string
	// Ref is the caller's reference (a request id), kept on the entries.
	Ref string
	// Amount is the estimate to hold.
	Amount Micros
	// MaxPerRequest is the most one request may reserve; 0 takes the plan's
	// per-request reservation for AI purposes and no cap for storage.
	MaxPerRequest Micros
}

// Reservation is money held for one request.
type Reservation struct {
	ID        string    `json:"id"`
	Amount    Micros    `json:"amountMicros"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Reserve holds r.Amount: from the purpose's included credit first, then
// from the Balance. It refuses, holding nothing, with ErrRequestTooLarge
// (above the per-request cap), ErrCreditsExhausted (no credit and no
// Balance left), ErrCreditsInsufficient (less left than the estimate) or
// ErrSpendLimit (the Balance part would take the month past the spending
// limit), checked in that order.
func (l *Ledger) Reserve(ctx context.Context, r ReserveRequest) (Reservation, error) {
	pool, err := creditPool(r.Purpose)
	if err != nil {
		return Reservation{}, err
	}
	if err := checkAmount("amount", r.Amount); err != nil {
		return Reservation{}, err
	}
	if l.hot != nil {
		if r.Workspace == "" {
			return Reservation{}, ErrUnknownWorkspace.detail("no workspace given")
		}
		out, err := l.hot.reserve(ctx, r, pool)
		if err != nil {
			l.m.reservations.WithLabelValues("refused").Inc()
			if errors.Is(err, ErrRequestTooLarge) {
				return Reservation{}, err
			}
			return Reservation{}, fmt.Errorf("billing: reserve: %w", err)
		}
		l.m.reservations.WithLabelValues("reserved").Inc()
		return out, nil
	}
	_, terms, err := l.terms(ctx, r.Workspace)
	if err != nil {
		return Reservation{}, err
	}
	perRequest := r.MaxPerRequest
	if perRequest == 0 && pool == poolAICredit {
		perRequest = terms.MaxPerRequest
	}
	if perRequest > 0 && r.Amount > perRequest {
		l.m.reservations.WithLabelValues("refused").Inc()
		return Reservation{}, ErrRequestTooLarge.detail("estimate %s dollars, at most %s per request", r.Amount.USD(), perRequest.USD())
	}
	var out Reservation
	err = l.tx(ctx, r.Workspace, func(t *txn) error {
		if err := t.ensure(); err != nil {
			return err
		}
		month := monthOf(t.now)
		a, err := t.account()
		if err != nil {
			return err
		}
		cm, err := t.month(month, pool)
		if err != nil {
			return err
		}
		creditLeft := max0(terms.credit(pool) - cm.used - cm.reserved)
		available := a.free()
		fromCredit := min(creditLeft, r.Amount)
		fromBalance := r.Amount - fromCredit
		if fromBalance > 0 {
			switch {
			case creditLeft == 0 && available <= 0:
				return ErrCreditsExhausted
			case fromBalance > available:
				return ErrCreditsInsufficient.detail("estimate %s dollars, %s left", r.Amount.USD(), (creditLeft + max0(available)).USD())
			}
			if a.limit != nil {
				bm, err := t.month(month, poolBalance)
				if err != nil {
					return err
				}
				if bm.used+bm.reserved+fromBalance > *a.limit {
					return ErrSpendLimit.detail("limit %s dollars, %s spent or held this month, this request needs %s more",
						a.limit.USD(), (bm.used + bm.reserved).USD(), fromBalance.USD())
				}
			}
		}
		out = Reservation{ID: store.NewID("rsv"), Amount: r.Amount, ExpiresAt: t.now.Add(l.cfg.ReservationTTL)}
		if _, err := t.tx.ExecContext(ctx, `INSERT INTO billing_reservations
			(id, workspace_id, project_id, purpose, ref, month, credit_pool, amount, held_credit, held_balance, state, created_at, expires_at)
			VALUES (?,?,?,?,?,?,?,?,?,?,'open',?,?)`,
			out.ID, r.Workspace, r.Project, r.Purpose, r.Ref, month, pool, int64(r.Amount), int64(fromCredit), int64(fromBalance),
			store.FormatTime(t.now), store.FormatTime(out.ExpiresAt)); err != nil {
			return fmt.Errorf("billing: reserve: %w", err)
		}
		base := entry{month: month, kind: kindHold, project: r.Project, purpose: r.Purpose, ref: r.Ref, reservation: out.ID}
		if err := t.entry(with(base, pool, fromCredit)); err != nil {
			return err
		}
		return t.entry(with(base, poolBalance, fromBalance))
	})
	if err != nil {
		l.m.reservations.WithLabelValues("refused").Inc()
		return Reservation{}, fmt.Errorf("billing: reserve: %w", err)
	}
	l.m.reservations.WithLabelValues("reserved").Inc()
	return out, nil
}

func with(e entry, pool string, amount Micros) entry {
	e.pool, e.amount = pool, amount
	return e
}

func max0(m Micros) Micros {
	if m < 0 {
		return 0
	}
	return m
}

// Settle charges exactly actual for reservation id and releases the rest of
// what it held. actual is paid from what the reservation held (credit part
// first); above that, from the credit pool's left-over, then from the
// Balance's free money (what is used above an estimate was delivered, so
// the spending limit, which bounds reservations, does not stop it), and
// what the Balance lacks is owed: recorded on the reservation
// (uncollected) and the workspace (owed), counted against the Balance and
// paid by the next load. Nothing of actual is dropped. Settling again is a
// no-op; settling a reservation that SettleExpired already released
// charges actual the same way. Settle after Release is
// ErrReservationClosed.
func (l *Ledger) Settle(ctx context.Context, reservationID string, actual Micros) error {
	if actual < 0 || actual > MaxAmount {
		return ErrInvalidAmount.detail("actual cost must be from 0 to %s dollars, not %d micro-dollars", MaxAmount.USD(), actual)
	}
	if l.hot != nil {
		result, charged, err := l.hot.settle(ctx, reservationID, actual)
		if !errors.Is(err, errNotHot) {
			if err != nil {
				return fmt.Errorf("billing: settle: %w", err)
			}
			charged()
			l.m.reservations.WithLabelValues(result).Inc()
			return nil
		}
		return l.cold(ctx, reservationID, func(string) error { return l.settle(ctx, reservationID, actual) })
	}
	return l.settle(ctx, reservationID, actual)
}

// cold runs fn on the stored rows for a reservation the hot path does not
// hold (made before a restart, or on another replica): the hot writer's
// queue is committed first, and fn runs with the reservation's workspace
// held exclusively, so no hot decision for it interleaves.
func (l *Ledger) cold(ctx context.Context, reservationID string, fn func(ws string) error) error {
	if err := l.hot.w.flush(); err != nil {
		return err
	}
	ws, err := l.workspaceOf(ctx, reservationID)
	if err != nil {
		return err
	}
	return l.hot.exclusive(ws, func() error { return fn(ws) })
}

// settle is Settle as one transaction.
func (l *Ledger) settle(ctx context.Context, reservationID string, actual Micros) error {
	ws, err := l.workspaceOf(ctx, reservationID)
	if err != nil {
		return err
	}
	_, terms, err := l.terms(ctx, ws)
	if err != nil {
		return err
	}
	result := ""
	done := func() {}
	err = l.tx(ctx, ws, func(t *txn) error {
		r, err := t.reservation(reservationID)
		if err != nil {
			return err
		}
		base := entry{month: r.month, project: r.project, purpose: r.purpose, ref: r.ref, reservation: r.id}
		var fromCredit, fromBalance Micros
		switch r.state {
		case "settled":
			return nil
		case "released":
			return ErrReservationClosed.detail("%s", r.id)
		case "open":
			base.kind = kindRelease
			if err := t.entry(with(base, r.creditPool, r.heldCredit)); err != nil {
				return err
			}
			if err := t.entry(with(base, poolBalance, r.heldBalance)); err != nil {
				return err
			}
			fromCredit = min(actual, r.heldCredit)
			fromBalance = min(actual-fromCredit, r.heldBalance)
			base.kind = kindCharge
			if err := t.entry(with(base, r.creditPool, fromCredit)); err != nil {
				return err
			}
			if err := t.entry(with(base, poolBalance, fromBalance)); err != nil {
				return err
			}
			result = "settled"
		case "expired":
			result = "settled_late"
		}
		// Above what was held: the credit left, then the Balance's free
		// money; the rest is owed.
		c, b, err := t.excess(r.month, r.creditPool, terms.credit(r.creditPool), actual-fromCredit-fromBalance)
		if err != nil {
			return err
		}
		base.kind = kindCharge
		if err := t.entry(with(base, r.creditPool, c)); err != nil {
			return err
		}
		if err := t.entry(with(base, poolBalance, b)); err != nil {
			return err
		}
		fromCredit, fromBalance = fromCredit+c, fromBalance+b
		done = func() { l.m.charged(r.purpose, r.creditPool, fromCredit, fromBalance) }
		return t.closeReservation(r.id, "settled", fromCredit+fromBalance, actual-fromCredit-fromBalance)
	})
	if err != nil {
		return fmt.Errorf("billing: settle: %w", err)
	}
	done()
	if result != "" {
		l.m.reservations.WithLabelValues(result).Inc()
	}
	return nil
}

// excess splits amount, used above what a reservation held, into what is
// charged now from the credit pool's left-over in month and from the
// Balance's free money; the caller records the rest as owed.
func (t *txn) excess(month, pool string, credit, amount Micros) (fromCredit, fromBalance Micros, err error) {
	return t.split(month, pool, credit, amount, false)
}

// available splits amount into what can be charged now from the credit
// pool's left-over in month and from the Balance's free money within the
// spending limit; what exceeds both is not charged.
func (t *txn) available(month, pool string, credit, amount Micros) (fromCredit, fromBalance Micros, err error) {
	return t.split(month, pool, credit, amount, true)
}

func (t *txn) split(month, pool string, credit, amount Micros, withinLimit bool) (fromCredit, fromBalance Micros, err error) {
	if amount <= 0 {
		return 0, 0, nil
	}
	cm, err := t.month(month, pool)
	if err != nil {
		return 0, 0, err
	}
	fromCredit = min(amount, max0(credit-cm.used-cm.reserved))
	a, err := t.account()
	if err != nil {
		return 0, 0, err
	}
	room := max0(a.free())
	if a.limit != nil && withinLimit {
		bm, err := t.month(month, poolBalance)
		if err != nil {
			return 0, 0, err
		}
		room = min(room, max0(*a.limit-bm.used-bm.reserved))
	}
	fromBalance = min(amount-fromCredit, room)
	return fromCredit, fromBalance, nil
}

func (l *Ledger) workspaceOf(ctx context.Context, reservationID string) (string, error) {
	var ws string
	err := l.db.QueryRowContext(ctx, `SELECT workspace_id FROM billing_reservations WHERE id = ?`, reservationID).Scan(&ws)
	if err == sql.ErrNoRows {
		return "", ErrReservationNotFound.detail("%s", reservationID)
	}
	if err != nil {
		return "", fmt.Errorf("billing: reservation %s: %w", reservationID, err)
	}
	return ws, nil
}

// Release gives back everything reservation id holds and charges nothing.
// Releasing a reservation that is already closed (settled, released or
// expired) is a no-op.
func (l *Ledger) Release(ctx context.Context, reservationID string) error {
	if l.hot != nil {
		err := l.hot.release(ctx, reservationID)
		if !errors.Is(err, errNotHot) {
			if err != nil {
				return fmt.Errorf("billing: release: %w", err)
			}
			l.m.reservations.WithLabelValues("released").Inc()
			return nil
		}
		return l.cold(ctx, reservationID, func(ws string) error { return l.release(ctx, ws, reservationID) })
	}
	ws, err := l.workspaceOf(ctx, reservationID)
	if err != nil {
		return err
	}
	return l.release(ctx, ws, reservationID)
}

// release is Release as one transaction.
func (l *Ledger) release(ctx context.Context, ws, reservationID string) error {
	released := false
	err := l.tx(ctx, ws, func(t *txn) error {
		var err error
		released, err = t.release(reservationID, "released")
		return err
	})
	if err != nil {
		return fmt.Errorf("billing: release: %w", err)
	}
	if released {
		l.m.reservations.WithLabelValues("released").Inc()
	}
	return nil
}

// release closes an open reservation as state, giving back its holds.
func (t *txn) release(id, state string) (bool, error) {
	r, err := t.reservation(id)
	if err != nil || r.state != "open" {
		return false, err
	}
	base := entry{month: r.month, kind: kindRelease, project: r.project, purpose: r.purpose, ref: r.ref, reservation: r.id}
	if err := t.entry(with(base, r.creditPool, r.heldCredit)); err != nil {
		return false, err
	}
	if err := t.entry(with(base, poolBalance, r.heldBalance)); err != nil {
		return false, err
	}
	return true, t.closeReservation(r.id, state, 0, 0)
}

// SettleExpired releases every open reservation past its expiry (its
// request died without settling) and returns how many.
func (l *Ledger) SettleExpired(ctx context.Context) (int, error) {
	if err := l.Flush(); err != nil {
		return 0, err
	}
	rows, err := l.db.QueryContext(ctx, `SELECT id, workspace_id FROM billing_reservations WHERE state = 'open' AND expires_at <= ? ORDER BY expires_at LIMIT 1000`,
		store.FormatTime(l.clk.Now()))
	if err != nil {
		return 0, fmt.Errorf("billing: expired reservations: %w", err)
	}
	var due [][2]string
	for rows.Next() {
		var id, ws string
		if err := rows.Scan(&id, &ws); err != nil {
			rows.Close()
			return 0, fmt.Errorf("billing: expired reservations: %w", err)
		}
		due = append(due, [2]string{id, ws})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("billing: expired reservations: %w", err)
	}
	n := 0
	for _, d := range due {
		var done bool
		err := l.exclusive(d[1], func() error {
			return l.tx(ctx, d[1], func(t *txn) error {
				r, err := t.reservation(d[0])
				if err != nil || r.state != "open" || r.expiresAt.After(t.now) {
					return err
				}
				done, err = t.release(d[0], "expired")
				return err
			})
		})
		if err != nil {
			return n, fmt.Errorf("billing: settle expired %s: %w", d[0], err)
		}
		if done {
			n++
			l.m.reservations.WithLabelValues("expired").Inc()
		}
	}
	return n, nil
}

// Charge charges amount directly (storage overage, charged daily): from the
// purpose's included credit left this month first (team's usage credit for
// storage), then from the Balance within the spending limit. It returns what
// could be charged, which is less than amount when money ran out; the
// caller decides what happens then (storage: usage_paused). With a non-empty
// ref the charge happens once per workspace, purpose and ref: a repeat
// returns what the first charged.
func (l *Ledger) Charge(ctx context.Context, workspace, project, purpose, ref string, amount Micros) (Micros, error) {
	pool, err := creditPool(purpose)
	if err != nil {
		return 0, err
	}
	if err := checkAmount("charge", amount); err != nil {
		return 0, err
	}
	_, terms, err := l.terms(ctx, workspace)
	if err != nil {
		return 0, err
	}
	var charged Micros
	done := func() {}
	err = l.exclusive(workspace, func() error {
		return l.tx(ctx, workspace, func(t *txn) error {
			if err := t.ensure(); err != nil {
				return err
			}
			if ref != "" {
				var prev int64
				err := t.tx.QueryRowContext(ctx, `SELECT charged FROM billing_charges WHERE workspace_id = ? AND purpose = ? AND ref = ?`,
					workspace, purpose, ref).Scan(&prev)
				if err == nil {
					charged = Micros(prev)
					return nil
				}
				if err != sql.ErrNoRows {
					return err
				}
			}
			month := monthOf(t.now)
			c, b, err := t.available(month, pool, terms.credit(pool), amount)
			if err != nil {
				return err
			}
			base := entry{month: month, kind: kindCharge, project: project, purpose: purpose, ref: ref}
			if err := t.entry(with(base, pool, c)); err != nil {
				return err
			}
			if err := t.entry(with(base, poolBalance, b)); err != nil {
				return err
			}
			charged = c + b
			done = func() { l.m.charged(purpose, pool, c, b) }
			if ref != "" {
				_, err = t.tx.ExecContext(ctx, `INSERT INTO billing_charges (workspace_id, purpose, ref, charged, at) VALUES (?,?,?,?,?)`,
					workspace, purpose, ref, int64(charged), store.FormatTime(t.now))
			}
			return err
		})
	})
	if err != nil {
		return 0, fmt.Errorf("billing: charge: %w", err)
	}
	done()
	return charged, nil
}

// AddBalance loads amount into the workspace's Balance and records it in
// the audit log (a money event) in the same transaction. What the
// workspace owes is paid from it first, in the same transaction (charge
// entries against the requests that owed it, oldest first). actor says who
// loaded it (the operator command passes "operator:<user>"), reason why.
func (l *Ledger) AddBalance(ctx context.Context, workspace string, amount Micros, actor, reason string) error {
	if amount <= 0 || amount > MaxLoad {
		return ErrInvalidAmount.detail("a load must be more than 0 and at most %s dollars, not %s", MaxLoad.USD(), amount.USD())
	}
	if workspace == "" {
		return ErrUnknownWorkspace.detail("no workspace given")
	}
	done := func() {}
	err := l.exclusive(workspace, func() error {
		return l.tx(ctx, workspace, func(t *txn) error {
			done = func() {} // fn may run again after a serialization failure
			if err := t.ensure(); err != nil {
				return err
			}
			a, err := t.account()
			if err != nil {
				return err
			}
			if a.balance+amount > MaxBalance {
				return ErrInvalidAmount.detail("the Balance would exceed %s dollars", MaxBalance.USD())
			}
			if err := t.entry(entry{month: monthOf(t.now), pool: poolBalance, kind: kindLoad, amount: amount, actor: actor, reason: reason}); err != nil {
				return err
			}
			byPurpose, err := t.collect()
			if err != nil {
				return err
			}
			var paid Micros
			for _, x := range byPurpose {
				paid += x
			}
			done = func() {
				for purpose, x := range byPurpose {
					l.m.charged(purpose, "", 0, x)
				}
			}
			summary := fmt.Sprintf("Balance loaded with %s dollars by %s", amount.USD(), actor)
			if paid > 0 {
				summary += fmt.Sprintf("; %s dollars of it paid what earlier requests owed", paid.USD())
			}
			return l.audit.Record(ctx, t.tx, audit.Event{
				Workspace: workspace, Action: "billing.balance_add", Category: audit.CategoryBilling,
				TargetType: "workspace", TargetID: workspace, Summary: summary,
				Details: map[string]any{"amountMicros": int64(amount), "balanceMicros": int64(a.balance + amount - paid), "owedPaidMicros": int64(paid),
					"actor": actor, "reason": reason},
			})
		})
	})
	if err != nil {
		return fmt.Errorf("billing: add balance: %w", err)
	}
	done()
	return nil
}

// SetSpendLimit sets the workspace's monthly spending limit on the Balance
// (nil removes it), recording who did it in the audit log. p is the caller
// (nil for the platform itself).
func (l *Ledger) SetSpendLimit(ctx context.Context, workspace string, limit *Micros) error {
	return l.SetSpendLimitAs(ctx, nil, workspace, limit)
}

// SetSpendLimitAs is SetSpendLimit by principal p, for the audit log.
func (l *Ledger) SetSpendLimitAs(ctx context.Context, p *auth.Principal, workspace string, limit *Micros) error {
	if limit != nil && (*limit < 0 || *limit > MaxSpendLimit) {
		return ErrInvalidAmount.detail("the spending limit must be from 0 to %s dollars a month", MaxSpendLimit.USD())
	}
	if workspace == "" {
		return ErrUnknownWorkspace.detail("no workspace given")
	}
	err := l.exclusive(workspace, func() error {
		return l.tx(ctx, workspace, func(t *txn) error {
			if err := t.ensure(); err != nil {
				return err
			}
			before, err := t.account()
			if err != nil {
				return err
			}
			var v any
			summary := "spending limit removed"
			if limit != nil {
				v = int64(*limit)
				summary = fmt.Sprintf("spending limit set to %s dollars a month", limit.USD())
			}
			if _, err := t.tx.ExecContext(ctx, `UPDATE billing_accounts SET spend_limit = ?, updated_at = ? WHERE workspace_id = ?`,
				v, store.FormatTime(t.now), workspace); err != nil {
				return err
			}
			var was any
			if before.limit != nil {
				was = int64(*before.limit)
			}
			return l.audit.Record(ctx, t.tx, audit.Event{
				Workspace: workspace, Actor: p, Action: "billing.spend_limit", Category: audit.CategoryBilling,
				TargetType: "workspace", TargetID: workspace, Summary: summary,
				Details: map[string]any{"spendLimitMicros": v, "previousMicros": was},
			})
		})
	})
	if err != nil {
		return fmt.Errorf("billing: spend limit: %w", err)
	}
	return nil
}
