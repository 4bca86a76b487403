package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/memory"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

func TestCreateValidation(t *testing.T) {
	e := newEnv(t, plans.Pro)
	long := strings.Repeat("x", MaxInstructions+1)
	cases := []struct {
		name   string
		body   map[string]any
		status int
		code   string
	}{
		{"no name", map[string]any{"model": "gpt-4o-mini"}, 400, "invalid_request"},
		{"no model", map[string]any{"name": "a"}, 400, "invalid_request"},
		{"unknown model", map[string]any{"name": "a", "model": "nope-1"}, 400, "unknown_model"},
		{"instructions too long", map[string]any{"name": "a", "model": "gpt-4o-mini", "instructions": long}, 400, "invalid_request"},
		{"maxSteps 0", map[string]any{"name": "a", "model": "gpt-4o-mini", "maxSteps": 0}, 400, "invalid_request"},
		{"maxSteps 25", map[string]any{"name": "a", "model": "gpt-4o-mini", "maxSteps": 25}, 400, "invalid_request"},
		{"unknown tool", map[string]any{"name": "a", "model": "gpt-4o-mini", "tools": []string{"rm_rf"}}, 400, "unknown_tool"},
		{"key tool never given", map[string]any{"name": "a", "model": "gpt-4o-mini", "tools": []string{"create_key"}}, 400, "tool_not_allowed"},
		{"balance tool never given", map[string]any{"name": "a", "model": "gpt-4o-mini", "tools": []string{"get_balance"}}, 400, "tool_not_allowed"},
		{"workspace-wide tool", map[string]any{"name": "a", "model": "gpt-4o-mini", "tools": []string{"repo_files_read"}}, 400, "tool_not_allowed"},
		{"write tool without allowWrites", map[string]any{"name": "a", "model": "gpt-4o-mini", "tools": []string{"database_execute"}}, 400, "tool_needs_writes"},
		{"full-access read without allowWrites", map[string]any{"name": "a", "model": "gpt-4o-mini", "tools": []string{"env_names"}}, 400, "tool_needs_writes"},
		{"bad trigger", map[string]any{"name": "a", "model": "gpt-4o-mini", "trigger": map[string]any{"kind": "cron"}}, 400, "invalid_request"},
		{"unknown field", map[string]any{"name": "a", "model": "gpt-4o-mini", "colour": "red"}, 400, "unknown_field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.do(ownerKey, "POST", "/api/projects/"+e.project+"/agents", c.body).Want(t, c.status, c.code)
		})
	}
	if n, _ := e.svc.Count(context.Background(), e.project); n != 0 {
		t.Fatalf("%d agents stored after refusals", n)
	}
	t.Run("defaults and limits accepted", func(t *testing.T) {
		var out AgentAnswer
		e.do(ownerKey, "POST", "/api/projects/"+e.project+"/agents", map[string]any{"name": "a", "model": "service-1",
			"instructions": strings.Repeat("é", MaxInstructions), "tools": []string{"vector_query", "database_execute"}, "allowWrites": true,
			"trigger": map[string]any{"kind": "event", "label": "orders"}, "purpose": "p"}).OK(t, &out)
		if out.Agent.MaxSteps != DefaultSteps || out.Agent.Status != StatusActive || len(out.Agent.Tools) != 2 || out.Agent.Trigger.Kind != "event" {
			t.Fatalf("agent %+v", out.Agent)
		}
	})
	t.Run("patch keeps validation", func(t *testing.T) {
		id := e.agent(map[string]any{"tools": []string{"database_query"}, "allowWrites": true})
		e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"allowWrites": false}).Want(t, 400, "tool_needs_writes")
		e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"maxSteps": 30}).Want(t, 400, "invalid_request")
		var out AgentAnswer
		e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"maxSteps": 24, "tools": []string{"project_info"}, "allowWrites": false}).OK(t, &out)
		if out.Agent.MaxSteps != 24 || out.Agent.AllowWrites {
			t.Fatalf("agent %+v", out.Agent)
		}
	})
	t.Run("project key of another project", func(t *testing.T) {
		k := e.key("full", e.other)
		e.do(k, "POST", "/api/projects/"+e.project+"/agents", map[string]any{"name": "a", "model": "gpt-4o-mini"}).Want(t, 403, "project_key_mismatch")
	})
}

func TestToolCatalogue(t *testing.T) {
	e := newEnv(t, plans.Pro)
	var plain, writes ToolList
	e.do(ownerKey, "GET", "/api/agents/tools", nil).OK(t, &plain)
	e.do(ownerKey, "GET", "/api/agents/tools?writes=1", nil).OK(t, &writes)
	byName := map[string]Tool{}
	for _, tl := range writes.Tools {
		byName[tl.Name] = tl
		if !json.Valid(tl.Parameters) {
			t.Errorf("%s: parameters are not JSON", tl.Name)
		}
	}
	for _, tl := range plain.Tools {
		if tl.NeedsWrites {
			t.Errorf("%s carries needsWrites without ?writes=1", tl.Name)
		}
	}
	cases := []struct {
		name                   string
		available, needsWrites bool
	}{
		{"project_info", true, false}, {"vector_query", true, false}, {"vector_upsert", true, true},
		{"database_query", true, true}, {"database_execute", true, true}, {"env_names", true, true},
		{"payments_list", true, false}, {"media_status", true, false},
		{"memory_stores", true, false}, {"memory_recall", true, false}, {"memory_keys", true, false},
		{"memory_remember", true, true}, {"memory_forget", true, true},
		{"send_email", true, true}, {"emails_list", true, false},
		{"repo_files_read", false, false}, {"list_projects", false, false}, {"usage_report", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tl, ok := byName[c.name]
			if !ok || tl.Available != c.available || tl.NeedsWrites != c.needsWrites || (!tl.Available && tl.Reason == "") || (tl.NeedsWrites && tl.WritesReason == "") {
				t.Fatalf("tool %+v", tl)
			}
		})
	}
	for _, never := range []string{"create_key", "list_members", "audit_log", "get_balance", "update_service_config", "run_agent"} {
		if _, ok := byName[never]; ok {
			t.Errorf("catalogue offers %s", never)
		}
	}
}

func TestRunToolLoop(t *testing.T) {
	e := newEnv(t, plans.Pro)
	dbID := e.createDB(e.project)
	e.do(ownerKey, "POST", "/api/databases/"+dbID, map[string]any{"sql": "CREATE TABLE t(v TEXT); INSERT INTO t VALUES (?)", "params": []any{"hello"}}).OK(t, nil)
	e.do(ownerKey, "POST", "/api/projects/"+e.project+"/env", map[string]any{"key": "API_TOKEN", "value": "s3cret-value"}).OK(t, nil)
	id := e.agent(map[string]any{"tools": []string{"project_info", "database_query", "env_names"}, "allowWrites": true, "instructions": "Be brief."})
	e.model.set(
		mockReply{Calls: []mockCall{{"project_info", `{}`}, {"database_query", fmt.Sprintf(`{"databaseId":%q,"sql":"SELECT v FROM t"}`, dbID)}}},
		mockReply{Calls: []mockCall{{"env_names", `{}`}, {"database_query", fmt.Sprintf(`{"databaseId":%q,"sql":"DELETE FROM t"}`, dbID)}, {"nope", `{}`}}},
		mockReply{Text: "The table holds hello."},
	)
	x, r := e.run(id, "What is in table t?")
	if r.Status != http.StatusAccepted || x.Status != RunCompleted || x.StopReason != "" || x.Output != "The table holds hello." {
		t.Fatalf("run %d %+v: %s", r.Status, x, r.Body)
	}
	want := []struct {
		tool string
		ok   bool
		has  string
	}{
		{"project_info", true, `"slug":"shop"`}, {"database_query", true, "hello"},
		{"env_names", true, "API_TOKEN"}, {"database_query", false, "read-only statements"}, {"nope", false, "tool_not_offered"}, {"", true, "hello"},
	}
	if len(x.Steps) != len(want) {
		t.Fatalf("steps %+v", x.Steps)
	}
	for i, w := range want {
		st := x.Steps[i]
		if st.Step != i+1 || st.ToolName != w.tool || st.OK != w.ok || !strings.Contains(st.Result, w.has) {
			t.Errorf("step %d = %+v, want %+v", i+1, st, w)
		}
		if strings.Contains(st.Result, "s3cret-value") {
			t.Errorf("step %d shows an environment value: %s", i+1, st.Result)
		}
	}
	if x.TokensUsed != 360 || x.CostMicros <= 0 || x.Model != "gpt-4o-mini" || x.DurationMs < 0 {
		t.Fatalf("totals %+v", x)
	}
	// The model saw the tools' JSON schemas and the instructions.
	reqs := e.model.requests()
	tools, _ := reqs[0]["tools"].([]any)
	if len(reqs) != 3 || len(tools) != 3 || !strings.Contains(fmt.Sprint(reqs[0]["messages"]), "Be brief.") {
		t.Fatalf("model requests %d, tools %v", len(reqs), tools)
	}
	if !e.keys.allRevoked() || len(e.keys.made) != 1 {
		t.Fatalf("run keys not revoked: %v", e.keys.made)
	}
	if n := e.metered(); n != 1 {
		t.Fatalf("agent_runs metered %v, want 1", n)
	}
	d := e.detail(id)
	if len(d.Runs) != 1 || d.Runs[0].ID != x.ID || len(d.Runs[0].Steps) != 6 {
		t.Fatalf("detail runs %+v", d.Runs)
	}
	raw := e.do(ownerKey, "GET", "/api/agents/"+id, nil)
	if !strings.Contains(string(raw.Body), `"cost_usd":0.`) {
		t.Fatalf("cost_usd not a decimal number: %s", raw.Body)
	}
}

func TestStopReasons(t *testing.T) {
	e := newEnv(t, plans.Pro, Config{RunTimeout: 300 * time.Millisecond})
	tool := mockReply{Calls: []mockCall{{"project_info", `{}`}}}
	cases := []struct {
		name     string
		steps    int
		script   []mockReply
		reason   string
		minSteps int
	}{
		{"step_limit", 2, []mockReply{tool}, StopStepLimit, 2},
		{"vendor", 8, []mockReply{tool, {Status: 503}}, StopVendor, 1},
		{"error", 8, []mockReply{tool, {Refuse: true}}, StopError, 1},
		{"time_limit", 8, []mockReply{tool, {Hang: true}}, StopTimeLimit, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.bill.SetSpendLimit(context.Background(), e.ws, nil)
			e.clk.Advance(time.Minute) // a fresh minute of the run rate
			id := e.agent(map[string]any{"tools": []string{"project_info"}, "maxSteps": c.steps})
			e.model.set(c.script...)
			x, r := e.run(id, "go")
			if r.Status != http.StatusAccepted || x.Status != RunFailed || x.StopReason != c.reason || x.Output == "" || len(x.Steps) < c.minSteps {
				t.Fatalf("run %d %+v", r.Status, x)
			}
			if !e.keys.allRevoked() {
				t.Fatal("run key not revoked")
			}
		})
	}
	// Credit and the spending limit run out mid-run (hobby: no included
	// credit, so the Balance and its limit decide).
	h := newEnv(t, plans.Hobby)
	h.fund(1)
	for _, c := range []struct {
		name, reason string
		change       func()
	}{
		{"spend_limit", StopSpendLimit, func() {
			zero := billing.Micros(0)
			h.bill.SetSpendLimit(context.Background(), h.ws, &zero)
		}},
		{"credits", StopCredits, func() {
			sum, _ := h.bill.Summary(context.Background(), h.ws)
			if _, err := h.bill.Charge(context.Background(), h.ws, "", billing.PurposeAI, "drain", sum.Balance); err != nil {
				t.Error(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.clk.Advance(time.Minute)
			h.bill.SetSpendLimit(context.Background(), h.ws, nil)
			id := h.agent(map[string]any{"tools": []string{"project_info"}})
			h.model.set(tool, mockReply{Calls: tool.Calls, Before: c.change})
			x, r := h.run(id, "go")
			if r.Status != http.StatusAccepted || x.Status != RunFailed || x.StopReason != c.reason || len(x.Steps) != 2 {
				t.Fatalf("run %d %+v", r.Status, x)
			}
		})
	}
	t.Run("stale", func(t *testing.T) {
		now := e.clk.Now()
		x := Run{ID: store.NewID("run"), AgentID: e.agent(map[string]any{}), Mode: ModeManual, Status: RunRunning, Input: "x",
			CreatedAt: now, StartedAt: &now, workspace: e.ws, project: e.project, starter: starter{Member: e.owner.MemberID}}
		if err := e.svc.st.insertRun(context.Background(), e.db, x, "", ""); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(59 * time.Minute)
		if res, _ := e.svc.Tick(context.Background()); res.Stale != 0 {
			t.Fatal("failed before 60 minutes")
		}
		e.clk.Advance(2 * time.Minute)
		if res, err := e.svc.Tick(context.Background()); err != nil || res.Stale != 1 {
			t.Fatalf("tick %+v %v", res, err)
		}
		got, _ := e.svc.st.run(context.Background(), e.db, x.ID)
		if got.Status != RunFailed || got.StopReason != StopStale {
			t.Fatalf("run %+v", got)
		}
	})
}

func TestStartRefusals(t *testing.T) {
	t.Run("402 at start charges nothing and keeps nothing", func(t *testing.T) {
		e := newEnv(t, plans.Hobby) // no included credit, no Balance
		id := e.agent(map[string]any{})
		_, r := e.run(id, "hi")
		r.Want(t, 402, "ai_credits_exhausted")
		e.fund(5)
		zero := billing.Micros(0)
		e.bill.SetSpendLimit(context.Background(), e.ws, &zero)
		_, r = e.run(id, "hi")
		r.Want(t, 402, "spend_limit_reached")
		sum, _ := e.bill.Summary(context.Background(), e.ws)
		if sum.MonthSpend != 0 || sum.Balance != 5_000_000 || sum.Reserved != 0 {
			t.Fatalf("charged: %+v", sum)
		}
		if d := e.detail(id); len(d.Runs) != 0 || e.metered() != 0 || !e.keys.allRevoked() {
			t.Fatalf("refused runs kept or metered: %+v", d.Runs)
		}
	})
	e := newEnv(t, plans.Pro)
	id := e.agent(map[string]any{})
	t.Run("input limit", func(t *testing.T) {
		_, r := e.run(id, strings.Repeat("x", MaxInput+1))
		r.Want(t, 413, "input_too_large")
		_, r = e.run(id, " ")
		r.Want(t, 400, "invalid_request")
	})
	t.Run("paused", func(t *testing.T) {
		e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"action": "pause"}).OK(t, nil)
		_, r := e.run(id, "hi")
		r.Want(t, 409, "agent_paused")
		e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"action": "resume"}).OK(t, nil)
		if x, r := e.run(id, "hi"); x.Status != RunCompleted {
			t.Fatalf("after resume: %d %s", r.Status, r.Body)
		}
	})
	t.Run("rate limit 6 a minute per workspace", func(t *testing.T) {
		e.clk.Advance(2 * time.Minute)
		for i := 0; i < RunsPerMinute; i++ {
			if _, r := e.run(id, "hi"); r.Status != 202 {
				t.Fatalf("run %d: %d %s", i, r.Status, r.Body)
			}
		}
		_, r := e.run(id, "hi")
		r.Want(t, 429, "rate_limited")
		if r.Header.Get("Retry-After") == "" {
			t.Fatal("no Retry-After")
		}
		e.clk.Advance(61 * time.Second)
		if _, r := e.run(id, "hi"); r.Status != 202 {
			t.Fatalf("after a minute: %d %s", r.Status, r.Body)
		}
	})
	t.Run("concurrency by plan", func(t *testing.T) {
		e.clk.Advance(2 * time.Minute)
		e.plans.Set(e.ws, plans.Hobby)
		defer e.plans.Set(e.ws, plans.Pro)
		now := e.clk.Now()
		busy := Run{ID: store.NewID("run"), AgentID: id, Mode: ModeManual, Status: RunRunning, Input: "x", CreatedAt: now, StartedAt: &now,
			workspace: e.ws, project: e.project, starter: starter{Member: e.owner.MemberID}}
		if err := e.svc.st.insertRun(context.Background(), e.db, busy, "", ""); err != nil {
			t.Fatal(err)
		}
		_, r := e.run(id, "hi")
		r.Want(t, 429, "plan_limit")
		var body struct {
			Error struct {
				Limit, Current int
				Required       string `json:"required_plan"`
			} `json:"error"`
		}
		json.Unmarshal(r.Body, &body)
		if body.Error.Limit != 1 || body.Error.Current != 1 || body.Error.Required != "pro" {
			t.Fatalf("limit/current/required_plan: %s", r.Body)
		}
		e.db.ExecContext(context.Background(), `UPDATE agent_runs SET status = 'completed' WHERE id = ?`, busy.ID)
	})
	t.Run("credentials", func(t *testing.T) {
		e.clk.Advance(2 * time.Minute)
		e.do(e.key("full", e.other), "POST", "/api/agents/"+id, map[string]any{"input": "hi"}).Want(t, 403, "project_key_mismatch")
		e.do(e.key("read_only", ""), "POST", "/api/agents/"+id, map[string]any{"input": "hi"}).Want(t, 403, "read_only_key")
		if _, r := e.run(id, "hi"); r.Status != 202 {
			t.Fatalf("owner: %d", r.Status)
		}
		e.do(e.key("full", e.project), "POST", "/api/agents/"+id, map[string]any{"input": "hi"}).OK(t, nil)
	})
}

func TestKeyScoping(t *testing.T) {
	e := newEnv(t, plans.Pro)
	otherDB := e.createDB(e.other)
	id := e.agent(map[string]any{"tools": []string{"database_query", "database_execute"}, "allowWrites": true})
	e.model.set(mockReply{Calls: []mockCall{
		{"database_execute", fmt.Sprintf(`{"databaseId":%q,"sql":"CREATE TABLE pwned(x)"}`, otherDB)},
		{"database_query", `{"databaseId":"../keys","sql":"SELECT 1"}`},
	}}, mockReply{Text: "could not"})
	x, _ := e.run(id, "touch the other project")
	if x.Status != RunCompleted || len(x.Steps) != 3 {
		t.Fatalf("run %+v", x)
	}
	if x.Steps[0].OK || !strings.Contains(x.Steps[0].Result, "project_key_mismatch") || x.Steps[1].OK {
		t.Fatalf("a call beyond the run key succeeded: %+v", x.Steps)
	}
	// The run key of an agent without allowWrites is read-only: a starter
	// with full access still cannot write through it.
	ro := e.agent(map[string]any{"tools": []string{"project_info"}})
	e.model.set(mockReply{Text: "ok"})
	e.run(ro, "hi")
	e.keys.mu.Lock()
	defer e.keys.mu.Unlock()
	readOnly := 0
	for _, p := range e.keys.keys {
		if p.ProjectID != e.project {
			t.Errorf("run key limited to %q", p.ProjectID)
		}
		if p.ReadOnly {
			readOnly++
		}
	}
	if readOnly != 1 {
		t.Fatalf("%d read-only run keys, want 1", readOnly)
	}
}

func TestStepResultCut(t *testing.T) {
	e := newEnv(t, plans.Pro)
	dbID := e.createDB(e.project)
	id := e.agent(map[string]any{"tools": []string{"database_query"}, "allowWrites": true})
	e.model.set(mockReply{Calls: []mockCall{{"database_query", fmt.Sprintf(`{"databaseId":%q,"sql":"SELECT printf('%%.9000c', 'a') AS v"}`, dbID)}}},
		mockReply{Text: strings.Repeat("b", 5000)})
	x, _ := e.run(id, "long")
	if len(x.Steps) != 2 || len([]rune(x.Steps[0].Result)) != MaxStepResult || len([]rune(x.Steps[1].Result)) != MaxStepResult || len(x.Output) != 5000 {
		t.Fatalf("steps %d, result %d chars", len(x.Steps), len(x.Steps[0].Result))
	}
	// The model got more of the tool's answer than the record keeps.
	reqs := e.model.requests()
	if !strings.Contains(fmt.Sprint(reqs[1]["messages"]), strings.Repeat("a", 8000)) {
		t.Fatal("tool answer fed back cut to the step record's size")
	}
}

func TestRecentRuns(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.agent(map[string]any{})
	now := e.clk.Now()
	for i := 0; i < 25; i++ {
		at := now.Add(time.Duration(i) * time.Second)
		x := Run{ID: fmt.Sprintf("run_%02d", i), AgentID: id, Mode: ModeManual, Status: RunCompleted, Input: "x", CreatedAt: at,
			workspace: e.ws, project: e.project, starter: starter{Member: e.owner.MemberID}}
		if err := e.svc.st.insertRun(context.Background(), e.db, x, "", ""); err != nil {
			t.Fatal(err)
		}
	}
	d := e.detail(id)
	if len(d.Runs) != RecentRuns || d.Runs[0].ID != "run_24" || d.Runs[19].ID != "run_05" {
		t.Fatalf("runs %d, first %s", len(d.Runs), d.Runs[0].ID)
	}
}

// TestMemoryTools: an agent remembers, recalls, lists and forgets keys of
// its project's memory store through the API with the run's key; an agent
// without allowWrites may only recall, and another project's store is
// refused by the permission table.
func TestMemoryTools(t *testing.T) {
	e := newEnv(t, plans.Pro)
	var st memory.StoreAnswer
	e.do(ownerKey, "POST", "/api/projects/"+e.project+"/memory", map[string]any{"name": "notes"}).OK(t, &st)
	var other memory.StoreAnswer
	e.do(ownerKey, "POST", "/api/projects/"+e.other+"/memory", map[string]any{"name": "theirs"}).OK(t, &other)
	id := e.agent(map[string]any{"tools": []string{"memory_stores", "memory_recall", "memory_keys", "memory_remember", "memory_forget"}, "allowWrites": true})
	e.model.set(
		mockReply{Calls: []mockCall{{"memory_stores", `{}`},
			{"memory_remember", fmt.Sprintf(`{"storeId":%q,"key":"user/ada","value":"likes tea","ttlSeconds":3600,"metadata":{"source":"chat"}}`, st.Store.ID)}}},
		mockReply{Calls: []mockCall{{"memory_recall", fmt.Sprintf(`{"storeId":%q,"keys":["user/ada","user/bob"]}`, st.Store.ID)},
			{"memory_keys", fmt.Sprintf(`{"storeId":%q,"prefix":"user/"}`, st.Store.ID)},
			{"memory_recall", fmt.Sprintf(`{"storeId":%q,"keys":["x"]}`, other.Store.ID)},
			{"memory_forget", fmt.Sprintf(`{"storeId":%q,"keys":["user/ada"]}`, st.Store.ID)}}},
		mockReply{Text: "Ada likes tea."},
	)
	x, r := e.run(id, "What does Ada like?")
	if r.Status != http.StatusAccepted || x.Status != RunCompleted {
		t.Fatalf("run %d %+v: %s", r.Status, x, r.Body)
	}
	want := []struct {
		tool string
		ok   bool
		has  string
	}{
		{"memory_stores", true, st.Store.ID}, {"memory_remember", true, `"key":"user/ada"`},
		{"memory_recall", true, `"user/ada":{"value":"likes tea"`}, {"memory_keys", true, `"key":"user/ada"`},
		{"memory_recall", false, "project_key_mismatch"}, {"memory_forget", true, `"deleted":1`}, {"", true, "Ada likes tea."},
	}
	if len(x.Steps) != len(want) {
		t.Fatalf("steps %+v", x.Steps)
	}
	for i, w := range want {
		if s := x.Steps[i]; s.ToolName != w.tool || s.OK != w.ok || !strings.Contains(s.Result, w.has) {
			t.Errorf("step %d = %+v, want %+v", i+1, s, w)
		}
	}
	// Without allowWrites only the reading tools are saved.
	r = e.do(ownerKey, "POST", "/api/projects/"+e.project+"/agents", map[string]any{"name": "reader", "model": "gpt-4o-mini",
		"tools": []string{"memory_recall", "memory_remember"}})
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "tool_needs_writes") {
		t.Fatalf("read-only agent with memory_remember: %d %s", r.Status, r.Body)
	}
	e.do(ownerKey, "POST", "/api/projects/"+e.project+"/agents", map[string]any{"name": "reader", "model": "gpt-4o-mini",
		"tools": []string{"memory_stores", "memory_recall", "memory_keys"}}).OK(t, nil)
}
