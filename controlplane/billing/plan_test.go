package billing

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// SwapPlanTx implements PlanStore on the fixture: the workspaces row in
// tx, the fixture's map after commit (PlanChanged).
func (f *fixture) SwapPlanTx(ctx context.Context, tx *sql.Tx, ws string, p plans.Name, ev audit.Event) (plans.Name, error) {
	var from string
	if err := tx.QueryRowContext(ctx, `SELECT plan FROM workspaces WHERE id = ?`, ws).Scan(&from); errors.Is(err, sql.ErrNoRows) {
		return "", api.NotFound("workspace")
	} else if err != nil {
		return "", err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE workspaces SET plan = ? WHERE id = ?`, string(p), ws); err != nil {
		return "", err
	}
	return plans.Name(from), f.audit.Record(ctx, tx, ev)
}

func (f *fixture) PlanChanged(ws string) {
	var p string
	f.db.QueryRow(`SELECT plan FROM workspaces WHERE id = ?`, ws).Scan(&p)
	f.mu.Lock()
	f.plans[ws] = plans.Name(p)
	f.mu.Unlock()
}

func TestProrate(t *testing.T) {
	month := 30 * 24 * time.Hour
	for _, tc := range []struct {
		name        string
		amount      Micros
		part, whole time.Duration
		want        Micros
	}{
		{"half a month", 20 * usd, 15 * 24 * time.Hour, month, 10 * usd},
		{"all of it", 20 * usd, month, month, 20 * usd},
		{"more than all", 20 * usd, 2 * month, month, 20 * usd},
		{"none left", 20 * usd, 0, month, 0},
		{"rounded down", 1, time.Second, month, 0},
		{"free plan", 0, month, month, 0},
		{"a third", 30 * usd, 10 * 24 * time.Hour, month, 10 * usd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := prorate(tc.amount, tc.part, tc.whole); got != tc.want {
				t.Fatalf("prorate = %s, want %s", got.USD(), tc.want.USD())
			}
		})
	}
}

// Upgrading mid-month charges the new plan for the rest of the month;
// downgrading credits the unused part of what was paid; a Balance that
// cannot pay is refused with the amount missing and nothing changes.
func TestChangePlanProration(t *testing.T) {
	eachMode(t, func(t *testing.T, e pgtest.Engine) {
		f := newFixture(t, e)
		ctx := context.Background()
		ws := "ws_hobby"
		// November has 30 days; t0 is Nov 2 10:00, so 28 days 14 hours remain.
		start, end := monthBounds(t0)
		left := func(now time.Time, p plans.Name) Micros { return prorate(PriceOf(p), end.Sub(now), end.Sub(start)) }

		// Too little Balance: refused, nothing changes.
		f.load(t, ws, 5*usd)
		before := f.summary(t, ws)
		_, err := f.l.ChangePlan(ctx, f, ws, plans.Pro, nil, "test")
		var missing *MissingError
		if !errors.As(err, &missing) || !errors.Is(err, ErrBalanceInsufficient) || missing.Missing != left(t0, plans.Pro)-5*usd {
			t.Fatalf("err = %v, want the %s missing", err, (left(t0, plans.Pro) - 5*usd).USD())
		}
		if after := f.summary(t, ws); moneyOf(after) != moneyOf(before) || after.Plan != plans.Hobby {
			t.Fatalf("a refused change moved money or the plan: %v -> %v (%s)", moneyOf(before), moneyOf(after), after.Plan)
		}

		// Upgrade: charged pro for the rest of November.
		f.load(t, ws, 100*usd)
		up, err := f.l.ChangePlan(ctx, f, ws, plans.Pro, nil, "test")
		if err != nil {
			t.Fatal(err)
		}
		if up.From != plans.Hobby || up.Credited != 0 || up.Charged != left(t0, plans.Pro) || !up.PaidThrough.Equal(end) {
			t.Fatalf("upgrade %+v", up)
		}
		if s := f.summary(t, ws); s.Balance != 105*usd-up.Charged || s.Plan != plans.Pro {
			t.Fatalf("after upgrade: %s on %s", s.Balance.USD(), s.Plan)
		}

		// Ten days later, to team: pro's unused part back, team charged.
		f.clk.Advance(10 * 24 * time.Hour)
		now := f.clk.Now()
		team, err := f.l.ChangePlan(ctx, f, ws, plans.Team, nil, "test")
		if err != nil {
			t.Fatal(err)
		}
		wantCredit := prorate(up.Charged, end.Sub(now), end.Sub(t0))
		if team.Credited != wantCredit || team.Charged != left(now, plans.Team) {
			t.Fatalf("team %+v, want credit %s charge %s", team, wantCredit.USD(), left(now, plans.Team).USD())
		}

		// Back to hobby the same day: team's unused part back, nothing charged.
		down, err := f.l.ChangePlan(ctx, f, ws, plans.Hobby, nil, "test")
		if err != nil {
			t.Fatal(err)
		}
		if down.Credited != team.Charged || down.Charged != 0 {
			t.Fatalf("downgrade %+v, want all of %s back", down, team.Charged.USD())
		}
		s := f.summary(t, ws)
		if want := 105*usd - up.Charged + team.Credited - team.Charged + down.Credited; s.Balance != want || s.Plan != plans.Hobby {
			t.Fatalf("balance %s, want %s", s.Balance.USD(), want.USD())
		}
		f.verify(t)
	})
}

// An operator's plan (no payment) is never credited; renewal charges a
// paid plan each month and puts a workspace that cannot pay on the
// fallback plan.
func TestPlanRenewal(t *testing.T) {
	eachMode(t, func(t *testing.T, e pgtest.Engine) {
		f := newFixture(t, e)
		ctx := context.Background()
		if _, err := f.l.SetPlanUnpaid(ctx, f, "ws_hobby", plans.Scale, "operator"); err != nil {
			t.Fatal(err)
		}
		f.load(t, "ws_hobby", 10*usd)
		c, err := f.l.ChangePlan(ctx, f, "ws_hobby", plans.Hobby, nil, "test")
		if err != nil || c.Credited != 0 || c.Charged != 0 {
			t.Fatalf("down from an unpaid plan: %+v %v", c, err)
		}

		// ws_team pays pro; ws_pro pays pro but runs dry.
		f.load(t, "ws_team", 200*usd)
		f.load(t, "ws_pro", 60*usd) // team for November, not December too
		for _, ws := range []string{"ws_team", "ws_pro"} {
			to := plans.Pro
			if ws == "ws_pro" {
				to = plans.Team // from pro to team
			}
			if _, err := f.l.ChangePlan(ctx, f, ws, to, nil, "test"); err != nil {
				t.Fatal(err)
			}
		}
		_, end := monthBounds(t0)
		f.clk.Set(end.Add(time.Hour))
		renewed, fell, err := f.l.RenewPlans(ctx, f, plans.Hobby)
		if err != nil || renewed != 1 || fell != 1 {
			t.Fatalf("renewed %d, fell back %d, %v", renewed, fell, err)
		}
		if p, _ := f.PlanOf(ctx, "ws_team"); p != plans.Pro {
			t.Fatalf("ws_team on %s after renewal", p)
		}
		if p, _ := f.PlanOf(ctx, "ws_pro"); p != plans.Hobby {
			t.Fatalf("ws_pro on %s after failing to pay", p)
		}
		// Renewing again in the same month does nothing.
		if renewed, fell, err := f.l.RenewPlans(ctx, f, plans.Hobby); err != nil || renewed+fell != 0 {
			t.Fatalf("second renewal: %d %d %v", renewed, fell, err)
		}
		f.verify(t)
	})
}

// Random plan changes at random times, with loads between them: the
// Balance always equals what was loaded plus every credit minus every
// charge, no credit exceeds what the period it refunds was paid, and the
// ledger verifies. No cent is created or lost.
func TestPlanChangesKeepEveryCent(t *testing.T) {
	eachEngine(t, func(t *testing.T, e pgtest.Engine) {
		f := newFixture(t, e)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(34, 1))
		ws := "ws_hobby"
		var loaded, credited, charged Micros
		selfServe := []plans.Name{plans.Hobby, plans.Pro, plans.Team, plans.Scale}
		for i := 0; i < 200; i++ {
			f.clk.Advance(time.Duration(rng.Int64N(int64(4 * 24 * time.Hour))))
			if rng.IntN(4) == 0 {
				a := Micros(rng.Int64N(int64(300*usd))) + 1
				f.load(t, ws, a)
				loaded += a
			}
			if rng.IntN(10) == 0 {
				if _, _, err := f.l.RenewPlans(ctx, f, plans.Hobby); err != nil {
					t.Fatal(err)
				}
				continue // renewal entries are counted from the ledger below
			}
			var lastPaid int64 // what the current period was paid (0 when none)
			f.db.QueryRow(`SELECT paid FROM billing_plan_periods WHERE workspace_id = ?`, ws).Scan(&lastPaid)
			c, err := f.l.ChangePlan(ctx, f, ws, selfServe[rng.IntN(len(selfServe))], nil, "prop")
			if errors.Is(err, ErrBalanceInsufficient) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Credited > Micros(lastPaid) {
				t.Fatalf("step %d: credited %s, more than the %s paid", i, c.Credited.USD(), Micros(lastPaid).USD())
			}
			credited += c.Credited
			charged += c.Charged
		}
		// Renewals charged too: count every plan entry from the ledger.
		var inL, outL int64
		f.db.QueryRow(`SELECT coalesce(sum(amount), 0) FROM billing_entries WHERE workspace_id = ? AND purpose = 'plan' AND kind = 'load'`, ws).Scan(&inL)
		f.db.QueryRow(`SELECT coalesce(sum(amount), 0) FROM billing_entries WHERE workspace_id = ? AND purpose = 'plan' AND kind = 'charge'`, ws).Scan(&outL)
		if Micros(inL) < credited || Micros(outL) < charged {
			t.Fatalf("ledger plan entries %d in, %d out; receipts %d, %d", inL, outL, credited, charged)
		}
		if inL > outL {
			t.Fatalf("credits (%d) exceed charges (%d): money was created", inL, outL)
		}
		s := f.summary(t, ws)
		if want := loaded + Micros(inL) - Micros(outL); s.Balance != want {
			t.Fatalf("balance %s, want %s (loaded %s + credits %s - charges %s)", s.Balance.USD(), want.USD(), loaded.USD(), Micros(inL).USD(), Micros(outL).USD())
		}
		f.verify(t)
	})
}
