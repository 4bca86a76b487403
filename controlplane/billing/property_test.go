package billing

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

func newJobRunner(t *testing.T, f *fixture) *jobs.Runner {
	t.Helper()
	r, err := jobs.New(jobs.Config{}, jobs.Deps{DB: f.db, Clock: f.clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	f.l.Close()
	f.l = f.newLedger(t, f.l.cfg, r)
	return r
}

// model is what the test itself knows about the money it moved.
type model struct {
	mu       sync.Mutex
	loaded   map[string]Micros // per workspace
	open     []string          // reservations the test may settle or release
	again    map[string]bool   // picked reservations to put back in open once their operation returned
	actual   map[string]Micros // reservation -> actual passed to its first successful Settle
	released map[string]bool
	charged  Micros // sum of what Charge returned
}

var workspaces = []string{"ws_hobby", "ws_pro", "ws_team", "ws_enterprise"}

// step does one random operation. Refusals are fine; anything else that
// fails is a bug.
func (m *model) step(t *testing.T, f *fixture, rng *rand.Rand, advance bool) {
	ctx := context.Background()
	ws := workspaces[rng.IntN(len(workspaces))]
	purposes := []string{PurposeAI, PurposeAgent, PurposeEmbeddings, PurposeStorage}
	amount := Micros(rng.Int64N(int64(12*usd))) + 1
	switch op := rng.IntN(20); {
	case op < 3:
		a := Micros(rng.Int64N(int64(20*usd))) + 1
		if err := f.l.AddBalance(ctx, ws, a, "prop", ""); err != nil {
			t.Errorf("add balance: %v", err)
			return
		}
		m.mu.Lock()
		m.loaded[ws] += a
		m.mu.Unlock()
	case op < 9:
		r, err := f.l.Reserve(ctx, ReserveRequest{Workspace: ws, Purpose: purposes[rng.IntN(4)], Amount: amount})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status() != 402 {
				t.Errorf("reserve: %v", err)
			}
			return
		}
		m.mu.Lock()
		m.open = append(m.open, r.ID)
		m.mu.Unlock()
	case op < 14:
		id, ok := m.pick(rng)
		if !ok {
			return
		}
		defer m.done(id)
		actual := Micros(rng.Int64N(int64(15 * usd)))
		err := f.l.Settle(ctx, id, actual)
		m.mu.Lock()
		defer m.mu.Unlock()
		switch {
		case err == nil:
			if _, ok := m.actual[id]; !ok {
				m.actual[id] = actual
			}
		case errors.Is(err, ErrReservationClosed) && m.released[id]:
		default:
			t.Errorf("settle: %v", err)
		}
	case op < 16:
		id, ok := m.pick(rng)
		if !ok {
			return
		}
		defer m.done(id)
		if err := f.l.Release(ctx, id); err != nil {
			t.Errorf("release: %v", err)
			return
		}
		m.mu.Lock()
		if _, settled := m.actual[id]; !settled {
			m.released[id] = true
		}
		m.mu.Unlock()
	case op < 18:
		c, err := f.l.Charge(ctx, ws, "", purposes[rng.IntN(4)], "", amount)
		if err != nil || c < 0 || c > amount {
			t.Errorf("charge %d: %d %v", amount, c, err)
			return
		}
		m.mu.Lock()
		m.charged += c
		m.mu.Unlock()
	case op < 19:
		var limit *Micros
		if rng.IntN(3) > 0 {
			limit = ptr(Micros(rng.Int64N(int64(30 * usd))))
		}
		if err := f.l.SetSpendLimit(ctx, ws, limit); err != nil {
			t.Errorf("spend limit: %v", err)
		}
	default:
		if advance {
			f.clk.Advance(time.Duration(rng.Int64N(int64(3 * 24 * time.Hour))))
		}
		if _, err := f.l.SettleExpired(ctx); err != nil {
			t.Errorf("settle expired: %v", err)
		}
	}
}

func (m *model) pick(rng *rand.Rand) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.open) == 0 {
		return "", false
	}
	// Taken out of the list, so no two goroutines use one reservation at
	// once; sometimes put back (by done, once the Settle or Release
	// returned), so that it is settled or released again. A reservation
	// left in the list while in use could be settled by two goroutines at
	// once with different costs: the ledger charges the one it commits
	// first, and the other Settle is a no-op that may well return first,
	// so the model would record the wrong actual (or miss a Release that
	// closed the reservation under a Settle).
	i := rng.IntN(len(m.open))
	id := m.open[i]
	m.open[i] = m.open[len(m.open)-1]
	m.open = m.open[:len(m.open)-1]
	if rng.IntN(4) == 0 {
		m.again[id] = true
	}
	return id, true
}

// done ends the use of a picked reservation: it goes back in the list if
// pick chose so.
func (m *model) done(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.again[id] {
		delete(m.again, id)
		m.open = append(m.open, id)
	}
}

// check compares the ledger with the model and the invariants.
func (m *model) check(t *testing.T, f *fixture) {
	t.Helper()
	f.verify(t)
	ctx := context.Background()
	// Every loaded micro-dollar is in a Balance or was charged from one.
	for _, ws := range workspaces {
		var fromBalance Micros
		if err := f.db.QueryRow(`SELECT coalesce(sum(amount),0) FROM billing_entries WHERE workspace_id = ? AND pool = 'balance' AND kind = 'charge'`, ws).Scan(&fromBalance); err != nil {
			t.Fatal(err)
		}
		s := f.summary(t, ws)
		if s.Balance+fromBalance != m.loaded[ws] {
			t.Fatalf("%s: balance %d + charged %d != loaded %d", ws, s.Balance, fromBalance, m.loaded[ws])
		}
		if s.Balance < 0 || s.Reserved < 0 || s.Reserved > s.Balance || s.Available < 0 {
			t.Fatalf("%s: %+v", ws, s)
		}
	}
	// Included credits are never over-used or over-held, in any month.
	rows, err := f.db.Query(`SELECT workspace_id, month, pool, used, reserved FROM billing_months WHERE pool <> 'balance'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var ws, month, pool string
		var used, reserved Micros
		if err := rows.Scan(&ws, &month, &pool, &used, &reserved); err != nil {
			t.Fatal(err)
		}
		p, _ := f.PlanOf(ctx, ws)
		if credit := TermsOf(p).credit(pool); used+reserved > credit {
			t.Fatalf("%s %s %s: used %d + reserved %d > credit %d", ws, month, pool, used, reserved, credit)
		}
	}
	rows.Close()
	// Settled reservations charged exactly their actual cost, less what
	// they still owe (recorded, paid by a later load: never dropped);
	// direct charges add up.
	var reservations, entries, owed Micros
	rrows, err := f.db.Query(`SELECT id, charged, uncollected, state FROM billing_reservations`)
	if err != nil {
		t.Fatal(err)
	}
	for rrows.Next() {
		var id, state string
		var charged, uncollected Micros
		if err := rrows.Scan(&id, &charged, &uncollected, &state); err != nil {
			t.Fatal(err)
		}
		reservations += charged
		owed += uncollected
		if a, ok := m.actual[id]; ok && (state != "settled" || charged+uncollected != a || charged < 0 || uncollected < 0) {
			t.Fatalf("reservation %s %s: charged %d + uncollected %d != actual %d", id, state, charged, uncollected, a)
		}
	}
	rrows.Close()
	if err := f.db.QueryRow(`SELECT coalesce(sum(amount),0) FROM billing_entries WHERE kind = 'charge'`).Scan(&entries); err != nil {
		t.Fatal(err)
	}
	var n struct{ settled, released, expired, open, entries int }
	f.db.QueryRow(`SELECT count(*) FILTER (WHERE state='settled'), count(*) FILTER (WHERE state='released'), count(*) FILTER (WHERE state='expired'), count(*) FILTER (WHERE state='open'), (SELECT count(*) FROM billing_entries) FROM billing_reservations`).
		Scan(&n.settled, &n.released, &n.expired, &n.open, &n.entries)
	t.Logf("reservations settled %d released %d expired %d open %d; %d entries; charged %s directly; %s owed", n.settled, n.released, n.expired, n.open, n.entries, m.charged.USD(), owed.USD())
	if entries != reservations+m.charged {
		t.Fatalf("charge entries %d != reservations %d + direct charges %d", entries, reservations, m.charged)
	}
	var summed Micros
	for _, ws := range workspaces {
		summed += f.summary(t, ws).Owed
	}
	if summed != owed {
		t.Fatalf("workspaces owe %d, their reservations %d", summed, owed)
	}
}

// The model never hands a reservation to a second goroutine while the
// first is still settling or releasing it: two concurrent Settles of one
// reservation with different costs leave the model unable to tell which
// one the ledger charged (TestPropertyNoMoneyCreatedOrLost's concurrent
// run then failed intermittently on every mode, the synchronous ones
// included: "charged X + uncollected 0 != actual Y").
func TestPropertyModelPicksEachReservationOnce(t *testing.T) {
	for seed := range uint64(32) {
		m := newModel()
		m.open = []string{"rsv_a", "rsv_b"}
		rng := rand.New(rand.NewPCG(seed, 7))
		inUse := map[string]bool{}
		for range 3 {
			id, ok := m.pick(rng)
			if !ok {
				continue
			}
			if inUse[id] {
				t.Fatalf("seed %d: %s picked again while its Settle or Release has not returned", seed, id)
			}
			inUse[id] = true
		}
		if len(inUse) != 2 {
			t.Fatalf("seed %d: picked %v of rsv_a and rsv_b", seed, inUse)
		}
	}
}

func newModel() *model {
	return &model{loaded: map[string]Micros{}, actual: map[string]Micros{}, released: map[string]bool{}, again: map[string]bool{}}
}

func TestPropertyNoMoneyCreatedOrLost(t *testing.T) { eachMode(t, testPropertyNoMoneyCreatedOrLost) }

func testPropertyNoMoneyCreatedOrLost(t *testing.T, e pgtest.Engine) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("sequential seed %d", seed), func(t *testing.T) {
			f := newFixture(t, e)
			m := newModel()
			rng := rand.New(rand.NewPCG(seed, 42))
			for i := range 300 {
				m.step(t, f, rng, true)
				if i%50 == 0 {
					m.check(t, f)
				}
			}
			m.check(t, f)
		})
	}
	t.Run("concurrent", func(t *testing.T) {
		f := newFixture(t, e)
		m := newModel()
		for _, ws := range workspaces {
			f.load(t, ws, 10*usd)
			m.loaded[ws] += 10 * usd
		}
		var wg sync.WaitGroup
		for g := range uint64(4) {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(g, 7))
				for range 80 {
					m.step(t, f, rng, g == 0)
				}
			})
		}
		wg.Wait()
		m.check(t, f)
	})
	t.Run("concurrent reservations never overdraw", func(t *testing.T) {
		f := newFixture(t, e)
		f.load(t, "ws_hobby", 10*usd)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var held Micros
		for range 8 {
			wg.Go(func() {
				for range 5 {
					r, err := f.l.Reserve(context.Background(), ReserveRequest{Workspace: "ws_hobby", Purpose: PurposeAI, Amount: usd / 2})
					if err == nil {
						mu.Lock()
						held += r.Amount
						mu.Unlock()
					} else if !errors.Is(err, ErrCreditsExhausted) && !errors.Is(err, ErrCreditsInsufficient) {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if held != 10*usd {
			t.Fatalf("held %s of a 10-dollar Balance", held.USD())
		}
		if s := f.summary(t, "ws_hobby"); s.Reserved != 10*usd || s.Available != 0 {
			t.Fatalf("%+v", s)
		}
		f.verify(t)
	})
}
