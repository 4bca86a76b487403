package billing

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// Refusals stay exact under concurrency on every path: of 40 reservations
// at once against a Balance that covers 10, exactly 10 are held; against a
// spending limit that covers 7, exactly 7; then everything settles at once
// and the ledger adds up.
func TestConcurrentRefusalsExact(t *testing.T) { eachMode(t, testConcurrentRefusalsExact) }

func testConcurrentRefusalsExact(t *testing.T, e pgtest.Engine) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		ws    string
		load  Micros
		limit *Micros
		want  int
		err   error
	}{
		{"balance", "ws_hobby", 10 * usd, nil, 10, ErrCreditsInsufficient},
		{"spend limit", "ws_hobby", 100 * usd, ptr(7 * usd), 7, ErrSpendLimit},
		// pro: 10 dollars of included credit first, then 5 of Balance.
		{"credit then balance", "ws_pro", 5 * usd, nil, 15, ErrCreditsInsufficient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, e)
			f.load(t, tc.ws, tc.load)
			if tc.limit != nil {
				if err := f.l.SetSpendLimit(ctx, tc.ws, tc.limit); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			var held []Reservation
			refused := 0
			start := make(chan struct{})
			for range 40 {
				wg.Go(func() {
					<-start
					r, err := f.l.Reserve(ctx, ReserveRequest{Workspace: tc.ws, Purpose: PurposeAI, Amount: usd})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						held = append(held, r)
					case errors.Is(err, tc.err) || errors.Is(err, ErrCreditsExhausted):
						refused++
					default:
						t.Error(err)
					}
				})
			}
			close(start)
			wg.Wait()
			if len(held) != tc.want || refused != 40-tc.want {
				t.Fatalf("held %d refused %d, want %d held", len(held), refused, tc.want)
			}
			// Settle them all at once, each at a different cost under what it held.
			for i, r := range held {
				wg.Go(func() {
					if err := f.l.Settle(ctx, r.ID, Micros(i)*1000); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			var charged Micros
			for i := range held {
				charged += Micros(i) * 1000
			}
			s := f.summary(t, tc.ws)
			if s.Reserved != 0 || s.IncludedReserved != 0 || s.IncludedUsed+(tc.load-s.Balance) != charged {
				t.Fatalf("after settling %s: %s", charged.USD(), moneyOf(s))
			}
			f.verify(t)
		})
	}
}

// Concurrent Settles and Releases of one reservation (a retried request)
// close it once: either every Settle is refused as closed and nothing is
// charged, or it is charged exactly the cost of one Settle that returned
// nil, whichever the ledger decided first; never a mix of two.
func TestConcurrentSettleOneReservation(t *testing.T) {
	eachMode(t, testConcurrentSettleOneReservation)
}

func testConcurrentSettleOneReservation(t *testing.T, e pgtest.Engine) {
	ctx := context.Background()
	f := newFixture(t, e)
	f.load(t, "ws_hobby", 100*usd)
	for round := range 12 {
		r := f.reserve(t, "ws_hobby", usd)
		var wg sync.WaitGroup
		var mu sync.Mutex
		settled := map[Micros]bool{}
		closed := 0
		start := make(chan struct{})
		for i := range 6 {
			// Under, at and above what was held (the excess comes from the Balance).
			actual := Micros(i) * usd / 2
			wg.Go(func() {
				<-start
				err := f.l.Settle(ctx, r.ID, actual)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					settled[actual] = true
				case errors.Is(err, ErrReservationClosed):
					closed++
				default:
					t.Error(err)
				}
			})
		}
		if round%2 == 1 {
			wg.Go(func() {
				<-start
				if err := f.l.Release(ctx, r.ID); err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if err := f.l.Flush(); err != nil {
			t.Fatal(err)
		}
		var state string
		var charged, uncollected, entries Micros
		if err := f.db.QueryRow(`SELECT state, charged, uncollected FROM billing_reservations WHERE id = ?`, r.ID).
			Scan(&state, &charged, &uncollected); err != nil {
			t.Fatal(err)
		}
		if err := f.db.QueryRow(`SELECT coalesce(sum(amount),0) FROM billing_entries WHERE reservation_id = ? AND kind = 'charge'`, r.ID).
			Scan(&entries); err != nil {
			t.Fatal(err)
		}
		switch state {
		case "settled":
			if closed != 0 || !settled[charged+uncollected] || uncollected != 0 || entries != charged {
				t.Fatalf("round %d: settled with charged %d + uncollected %d (entries %d); Settles returned nil for %v, closed %d",
					round, charged, uncollected, entries, settled, closed)
			}
		case "released":
			if len(settled) != 0 || closed != 6 || charged != 0 || entries != 0 {
				t.Fatalf("round %d: released, charged %d (entries %d); Settles returned nil for %v, closed %d",
					round, charged, entries, settled, closed)
			}
		default:
			t.Fatalf("round %d: reservation %s", round, state)
		}
	}
	f.verify(t)
}

// Money loaded by another process (the operator's balance command opens
// the database itself) counts at once: a refusal is decided again on what
// is stored.
func TestHotOutsideLoad(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, pgtest.Engines()[0])
	if f.l.hot == nil {
		t.Fatal("SQLite ledger is not on the hot path")
	}
	f.load(t, "ws_hobby", usd)
	f.reserve(t, "ws_hobby", usd) // the copy is loaded and holds it all
	_, err := f.l.Reserve(ctx, ReserveRequest{Workspace: "ws_hobby", Purpose: PurposeAI, Amount: usd})
	wantErr(t, err, ErrCreditsExhausted)
	cli := f.newLedger(t, Config{Synchronous: true}, nil)
	if err := cli.AddBalance(ctx, "ws_hobby", 2*usd, "operator:root", "top-up"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		f.reserve(t, "ws_hobby", usd)
	}
	_, err = f.l.Reserve(ctx, ReserveRequest{Workspace: "ws_hobby", Purpose: PurposeAI, Amount: usd})
	wantErr(t, err, ErrCreditsExhausted)
	if s := f.summary(t, "ws_hobby"); s.Balance != 3*usd || s.Reserved != 3*usd {
		t.Fatalf("%s", moneyOf(s))
	}
	f.verify(t)
}

// A process that dies with reservations open (committed before the
// upstream answered, never settled) loses no money: after a restart the
// reservations are settled late or expired by SettleExpired, and a Settle
// of a reservation the new process never saw takes the synchronous path.
func TestHotRestart(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, pgtest.Engines()[0])
	f.load(t, "ws_hobby", 10*usd)
	a := f.reserve(t, "ws_hobby", 2*usd)
	b := f.reserve(t, "ws_hobby", 2*usd)
	if err := f.l.Flush(); err != nil {
		t.Fatal(err)
	}
	// The "restarted" process: a new ledger over the same file.
	f.l.Close()
	f.l = f.newLedger(t, Config{}, nil)
	f.settle(t, a.ID, usd/2)
	f.clk.Advance(DefaultReservationTTL + time.Minute)
	if n, err := f.l.SettleExpired(ctx); err != nil || n != 1 {
		t.Fatalf("expired %d %v", n, err)
	}
	if err := f.l.Settle(ctx, b.ID, usd); err != nil { // late: charged from what is available
		t.Fatal(err)
	}
	if s := f.summary(t, "ws_hobby"); s.Balance != 10*usd-usd/2-usd || s.Reserved != 0 {
		t.Fatalf("%s", moneyOf(s))
	}
	f.verify(t)
}

// Movements commit in batches; one that fails does not take the others
// with it, is counted, and its workspace's copy is reloaded from what was
// stored.
func TestHotBatchFailure(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0])
	f.load(t, "ws_hobby", 10*usd)
	var rs []Reservation
	for range 5 {
		rs = append(rs, f.reserve(t, "ws_hobby", usd))
	}
	// Hold the writer inside a transaction so that what follows lands in
	// one batch, with a movement that fails in the middle.
	gate, entered := make(chan struct{}), make(chan struct{})
	if err := f.l.hot.w.enqueue(op{ws: "ws_hobby", now: t0, run: func(*txn) error { close(entered); <-gate; return nil }}); err != nil {
		t.Fatal(err)
	}
	<-entered
	f.settle(t, rs[0].ID, usd/4)
	if err := f.l.hot.w.enqueue(op{ws: "ws_hobby", now: t0, run: func(*txn) error { return errors.New("disk on fire") }}); err != nil {
		t.Fatal(err)
	}
	f.settle(t, rs[1].ID, usd/4)
	close(gate)
	if err := f.l.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := f.l.hot.w.failed.Load(); n != 1 {
		t.Fatalf("%v movements failed, want 1", n)
	}
	if s := f.summary(t, "ws_hobby"); s.Balance != 10*usd-usd/2 || s.Reserved != 3*usd {
		t.Fatalf("%s", moneyOf(s))
	}
	f.verify(t)
	// The copy was marked stale and reloads: the workspace still works.
	f.settle(t, rs[2].ID, usd)
	f.verify(t)
}

// Close commits what is pending; after it every movement commits before
// returning.
func TestHotClose(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0])
	f.load(t, "ws_hobby", 10*usd)
	r := f.reserve(t, "ws_hobby", usd)
	f.settle(t, r.ID, usd/2)
	f.l.Close()
	var state string
	if err := f.db.QueryRow(`SELECT state FROM billing_reservations WHERE id = ?`, r.ID).Scan(&state); err != nil || state != "settled" {
		t.Fatalf("after Close: %q %v", state, err)
	}
	r = f.reserve(t, "ws_hobby", usd)
	if err := f.db.QueryRow(`SELECT state FROM billing_reservations WHERE id = ?`, r.ID).Scan(&state); err != nil || state != "open" {
		t.Fatalf("reserve after Close: %q %v", state, err)
	}
	f.verify(t)
}

// A workspace's plan is kept with its copy while Run listens for plan
// changes, until accounts announces one on PlanChannel; without Run it is
// read every time.
func TestHotPlanChange(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, pgtest.Engines()[0])
	f.load(t, "ws_hobby", 20*usd)
	setPlan := func(p plans.Name) {
		f.mu.Lock()
		f.plans["ws_hobby"] = p
		f.mu.Unlock()
	}
	big := ReserveRequest{Workspace: "ws_hobby", Purpose: PurposeAI, Amount: 5 * usd}
	_, err := f.l.Reserve(ctx, big)
	wantErr(t, err, ErrRequestTooLarge) // hobby: 2 dollars a request
	setPlan(plans.Pro)
	r, err := f.l.Reserve(ctx, big) // not listening: read at once
	if err != nil {
		t.Fatalf("not listening, the new plan: %v", err)
	}
	f.settle(t, r.ID, 0)
	setPlan(plans.Hobby)

	ctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- f.l.Run(ctx) }()
	defer func() {
		stop()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()
	for f.l.hot.noTerms.Load() { // until Run listens
		runtime.Gosched()
	}
	_, err = f.l.Reserve(ctx, big)
	wantErr(t, err, ErrRequestTooLarge) // hobby, kept from now on
	setPlan(plans.Pro)
	_, err = f.l.Reserve(ctx, big)
	wantErr(t, err, ErrRequestTooLarge) // not announced yet: the kept plan
	if err := f.db.Notifier().Notify(ctx, f.db, PlanChannel, "ws_hobby"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err = f.l.Reserve(ctx, big)
		if err == nil {
			break
		}
		wantErr(t, err, ErrRequestTooLarge)
		if time.Now().After(deadline) {
			t.Fatal("plan change not applied within 5s")
		}
		runtime.Gosched()
	}
	f.verify(t)
}

// A refusal is decided again with the plan as stored now: an upgrade's
// included credit counts at once, before any announcement arrives.
func TestHotRefusalRereadsPlan(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, pgtest.Engines()[0])
	req := ReserveRequest{Workspace: "ws_hobby", Purpose: PurposeAI, Amount: usd}
	_, err := f.l.Reserve(ctx, req)
	wantErr(t, err, ErrCreditsExhausted) // hobby: no credit, no Balance
	f.mu.Lock()
	f.plans["ws_hobby"] = plans.Pro // 10 dollars of credit; not announced
	f.mu.Unlock()
	if _, err := f.l.Reserve(ctx, req); err != nil {
		t.Fatalf("after the upgrade: %v", err)
	}
	if s := f.summary(t, "ws_hobby"); s.IncludedReserved != usd {
		t.Fatalf("%s", moneyOf(s))
	}
	f.verify(t)
}

// BenchmarkReserveSettle is one request's money on each path: a Reserve
// and a Settle, as the AI gateway makes them.
//
//	go test -run '^$' -bench ReserveSettle ./controlplane/billing/
func BenchmarkReserveSettle(b *testing.B) {
	for _, mode := range []string{"hot", syncEngine} {
		b.Run(mode, func(b *testing.B) {
			f := newFixture(b, pgtest.Engine{Name: mode, Open: pgtest.OpenSQLite, DSN: pgtest.SQLitePath})
			f.load(b, "ws_hobby", 1_000*usd)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				r, err := f.l.Reserve(ctx, ReserveRequest{Workspace: "ws_hobby", Purpose: PurposeAI, Ref: "air_x", Amount: 1000})
				if err != nil {
					b.Fatal(err)
				}
				if err := f.l.Settle(ctx, r.ID, 500); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			f.verify(b)
		})
	}
}

// A closing whose reservation row was never stored (its insert failed on
// its own in a failed batch's one-by-one retry) fails too: nothing it
// releases commits without the hold.
func TestHotCloseWithoutReservationRow(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0])
	f.load(t, "ws_hobby", 10*usd)
	before := f.l.hot.w.failed.Load()
	if err := f.l.hot.w.enqueue(op{ws: "ws_hobby", now: t0, close: &closing{id: "rsv_never_stored", state: "settled", charged: usd}}); err != nil {
		t.Fatal(err)
	}
	if err := f.l.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := f.l.hot.w.failed.Load() - before; n != 1 {
		t.Fatalf("%d movements failed, want 1", n)
	}
	if s := f.summary(t, "ws_hobby"); s.Balance != 10*usd || s.Reserved != 0 {
		t.Fatalf("%s", moneyOf(s))
	}
	f.verify(t)
}

// A batch holding reservations opened and closed within it (inserted
// closed), others only opened, closings of earlier ones, a movement that
// runs in the middle and more rows than one statement takes commits the
// same rows and entries as the synchronous path.
func TestHotBatchRows(t *testing.T) {
	type resRow struct {
		amount, charged, uncollected int64
		state                        string
		created, closed              string
	}
	type entRow struct {
		kind, pool string
		amount     int64
		at         string
	}
	run := func(t *testing.T, e pgtest.Engine) ([]resRow, []entRow) {
		f := newFixture(t, e)
		f.load(t, "ws_hobby", 1000*usd)
		var early []Reservation
		for range 3 {
			early = append(early, f.reserve(t, "ws_hobby", usd))
		}
		if err := f.l.Flush(); err != nil {
			t.Fatal(err)
		}
		var gate chan struct{}
		if f.l.hot != nil {
			// Hold the writer so that everything below is one batch.
			g, entered := make(chan struct{}), make(chan struct{})
			gate = g
			if err := f.l.hot.w.enqueue(op{ws: "ws_hobby", now: t0, run: func(*txn) error { close(entered); <-g; return nil }}); err != nil {
				t.Fatal(err)
			}
			<-entered
		}
		f.clk.Advance(time.Second)
		var rs []Reservation
		for i := range 45 {
			rs = append(rs, f.reserve(t, "ws_hobby", usd+Micros(i)))
			if i == 20 && f.l.hot != nil {
				if err := f.l.hot.w.enqueue(op{ws: "ws_hobby", now: f.clk.Now(), run: func(*txn) error { return nil }}); err != nil {
					t.Fatal(err)
				}
			}
		}
		f.clk.Advance(time.Second)
		for i, r := range rs[:25] {
			f.settle(t, r.ID, Micros(i)*1000) // the first at 0: no charge entry
		}
		f.settle(t, rs[25].ID, 2*usd) // above what it held: the excess charged from what is available
		for _, r := range rs[26:31] {
			if err := f.l.Release(context.Background(), r.ID); err != nil {
				t.Fatal(err)
			}
		}
		f.settle(t, early[0].ID, usd/2)
		if err := f.l.Release(context.Background(), early[1].ID); err != nil {
			t.Fatal(err)
		}
		if gate != nil {
			close(gate)
		}
		if err := f.l.Flush(); err != nil {
			t.Fatal(err)
		}
		if f.l.hot != nil && f.l.hot.w.failed.Load() != 0 {
			t.Fatalf("%d movements failed", f.l.hot.w.failed.Load())
		}
		f.verify(t)
		var res []resRow
		rows, err := f.db.Query(`SELECT amount, charged, uncollected, state, created_at, closed_at FROM billing_reservations ORDER BY created_at, amount`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var r resRow
			if err := rows.Scan(&r.amount, &r.charged, &r.uncollected, &r.state, &r.created, &r.closed); err != nil {
				t.Fatal(err)
			}
			res = append(res, r)
		}
		rows.Close()
		var ents []entRow
		rows, err = f.db.Query(`SELECT kind, pool, amount, at FROM billing_entries WHERE kind <> 'load' ORDER BY kind, pool, amount, at`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var e entRow
			if err := rows.Scan(&e.kind, &e.pool, &e.amount, &e.at); err != nil {
				t.Fatal(err)
			}
			ents = append(ents, e)
		}
		rows.Close()
		return res, ents
	}
	hotRes, hotEnts := run(t, pgtest.Engines()[0])
	syncRes, syncEnts := run(t, pgtest.Engine{Name: syncEngine, Open: pgtest.OpenSQLite, DSN: pgtest.SQLitePath})
	if len(hotRes) != 48 || len(hotEnts) < 48+25 {
		t.Fatalf("%d reservations, %d entries", len(hotRes), len(hotEnts))
	}
	if !reflect.DeepEqual(hotRes, syncRes) {
		t.Fatalf("reservations\nhot  %+v\nsync %+v", hotRes, syncRes)
	}
	if !reflect.DeepEqual(hotEnts, syncEnts) {
		t.Fatalf("entries\nhot  %+v\nsync %+v", hotEnts, syncEnts)
	}
}
