package ai

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// One flush writes any number of calls (several multi-row INSERTs) and
// adds each month total once with the batch's sums; the next flush adds
// to them.
func TestHistoryBatch(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	at := e.Clock.Now()
	rec := func(i int, model, project string) Record {
		return Record{ID: fmt.Sprintf("air_b%03d", i), workspace: e.Workspace, ProjectID: project, Kind: "chat", Surface: SurfaceChat,
			ModelRequested: model, ModelUsed: model, Provider: "openai", Status: StatusOK, TokensIn: 10, TokensOut: int64(i),
			CostMicros: Micros(i), At: at.Add(time.Duration(i) * time.Millisecond)}
	}
	type total struct{ requests, in, out, cost int64 }
	want := map[string]*total{}
	add := func(r Record) {
		k := r.ModelUsed + "/" + r.ProjectID
		if r.ModelUsed == "" && r.CostMicros == 0 {
			return
		}
		if k == "/" {
			k = r.ModelRequested + "/" + r.ProjectID
		}
		w := want[k]
		if w == nil {
			w = &total{}
			want[k] = w
		}
		w.requests++
		w.in += r.TokensIn
		w.out += r.TokensOut
		w.cost += int64(r.CostMicros)
	}
	check := func(rows int) {
		t.Helper()
		if err := e.svc.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := e.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM ai_requests WHERE workspace_id = ?`, e.Workspace).Scan(&n); err != nil || n != rows {
			t.Fatalf("%d history rows (%v), want %d", n, err, rows)
		}
		got := map[string]*total{}
		qr, err := e.DB.QueryContext(ctx, `SELECT model, project_id, requests, tokens_in, tokens_out, cost_micros FROM ai_spend_month WHERE workspace_id = ?`, e.Workspace)
		if err != nil {
			t.Fatal(err)
		}
		defer qr.Close()
		for qr.Next() {
			var model, project string
			v := &total{}
			if err := qr.Scan(&model, &project, &v.requests, &v.in, &v.out, &v.cost); err != nil {
				t.Fatal(err)
			}
			got[model+"/"+project] = v
		}
		if len(got) != len(want) {
			t.Fatalf("%d month rows, want %d", len(got), len(want))
		}
		for k, w := range want {
			if g := got[k]; g == nil || *g != *w {
				t.Fatalf("month %s: %+v, want %+v", k, g, w)
			}
		}
	}
	for i := range 150 {
		r := rec(i, []string{"gpt-4.1-mini", "claude-haiku-4-5"}[i%2], []string{"", "prj_a", "prj_b"}[i%3])
		if i == 7 { // no model answered and nothing charged: history only
			r.ModelUsed, r.CostMicros, r.Status = "", 0, StatusFailed
		}
		e.svc.rec.add(r)
		add(r)
	}
	check(150)
	for i := 150; i < 153; i++ {
		r := rec(i, "gpt-4.1-mini", "prj_a")
		e.svc.rec.add(r)
		add(r)
	}
	check(153)
}
