package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

func TestBackgroundQueueSurvivesRestart(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.agent(map[string]any{})
	var out RunAnswer
	e.do(ownerKey, "POST", "/api/agents/"+id, map[string]any{"input": "later", "background": true}).OK(t, &out)
	if out.Run.Status != RunQueued {
		t.Fatalf("run %+v", out.Run)
	}
	// The process stops before the run starts; a new one picks it up.
	e.close()
	e.open(t, plans.Pro)
	e.model.set(mockReply{Text: "done later"})
	e.runDue()
	x, err := e.svc.st.run(context.Background(), e.db, out.Run.ID)
	if err != nil || x.Status != RunCompleted || x.Output != "done later" || x.Mode != ModeBackground {
		t.Fatalf("run %+v %v", x, err)
	}
	// Started once: running the jobs again starts nothing.
	e.runDue()
	if n := len(e.model.requests()); n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
	t.Run("at most 20 waiting per agent", func(t *testing.T) {
		now := e.clk.Now()
		for i := 0; i < MaxQueued; i++ {
			x := Run{ID: store.NewID("run"), AgentID: id, Mode: ModeBackground, Status: RunQueued, Input: "x", CreatedAt: now,
				workspace: e.ws, project: e.project, starter: starter{Member: e.owner.MemberID}}
			if err := e.svc.st.insertRun(context.Background(), e.db, x, "", ""); err != nil {
				t.Fatal(err)
			}
		}
		e.clk.Advance(time.Minute)
		e.do(ownerKey, "POST", "/api/agents/"+id, map[string]any{"input": "x", "background": true}).Want(t, 429, "queue_full")
	})
	t.Run("waits for the plan's concurrency", func(t *testing.T) {
		e.db.ExecContext(context.Background(), `DELETE FROM agent_runs WHERE status = 'queued'`)
		e.plans.Set(e.ws, plans.Hobby)
		defer e.plans.Set(e.ws, plans.Pro)
		e.fund(1) // hobby has no included credit
		now := e.clk.Now()
		busy := Run{ID: store.NewID("run"), AgentID: id, Mode: ModeManual, Status: RunRunning, Input: "x", CreatedAt: now, StartedAt: &now,
			workspace: e.ws, project: e.project, starter: starter{Member: e.owner.MemberID}}
		if err := e.svc.st.insertRun(context.Background(), e.db, busy, "", ""); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Minute)
		var q RunAnswer
		e.do(ownerKey, "POST", "/api/agents/"+id, map[string]any{"input": "queued", "background": true}).OK(t, &q)
		e.runDue()
		if x, _ := e.svc.st.run(context.Background(), e.db, q.Run.ID); x.Status != RunQueued {
			t.Fatalf("started past the plan's cap: %+v", x)
		}
		e.db.ExecContext(context.Background(), `UPDATE agent_runs SET status = 'completed' WHERE id = ?`, busy.ID)
		if _, err := e.svc.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.runDue()
		if x, _ := e.svc.st.run(context.Background(), e.db, q.Run.ID); x.Status != RunCompleted {
			t.Fatalf("not started once room freed: %+v", x)
		}
	})
}

func TestParseSchedule(t *testing.T) {
	cases := []struct {
		text string
		ok   bool
	}{
		{"@hourly", true}, {"@daily", true}, {"@weekly", true}, {"@monthly", true},
		{"*/10 * * * *", true}, {"0 9 * * 1-5", true}, {"0,30 * * * *", true}, {"5 0 * * *", true},
		{"*/5 * * * *", false}, {"* * * * *", false}, {"0,5 9 * * *", false}, {"58,3 8,9 * * *", false}, {"55 8,9 * * *", true},
		{"@every 1h", false}, {"@yearly", false}, {"0 9 * *", false}, {"0 0 9 * * *", false}, {"CRON_TZ=Europe/Paris 0 9 * * *", false},
		{"61 * * * *", false}, {"", false}, {"0 0 31 2 *", false},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			_, _, err := ParseSchedule(c.text)
			if (err == nil) != c.ok {
				t.Fatalf("ParseSchedule(%q) = %v, want ok %v", c.text, err, c.ok)
			}
		})
	}
}

func TestSchedule(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.agent(map[string]any{})
	e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"schedule": "*/5 * * * *"}).Want(t, 400, "invalid_schedule")
	var out AgentAnswer
	e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"schedule": map[string]any{"cron": "@hourly", "input": "hourly report"}}).OK(t, &out)
	d := e.detail(id)
	if d.Schedule == nil || d.Schedule.Cron != "@hourly" || d.Schedule.NextRun == nil || *d.Schedule.NextRun != "2026-11-02T11:00:00.000Z" {
		t.Fatalf("schedule %+v", d.Schedule)
	}
	// Only one start mode at a time.
	e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"events": true}).Want(t, 409, "start_mode_active")
	e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"chat": true}).Want(t, 409, "start_mode_active")
	e.runDue()
	if d := e.detail(id); len(d.Runs) != 0 {
		t.Fatalf("ran before the slot: %+v", d.Runs)
	}
	e.model.set(mockReply{Text: "report"})
	e.clk.Advance(time.Hour)
	e.runDue() // the slot queues the run and wakes the queue
	e.runDue()
	d = e.detail(id)
	if d.Schedule.Last == nil || d.Schedule.Last.Status != RunCompleted || *d.Schedule.NextRun != "2026-11-02T12:00:00.000Z" {
		t.Fatalf("after the slot: %+v, runs %+v", d.Schedule, d.Runs)
	}
	if d.Runs[0].Input != "hourly report" || d.Runs[0].Mode != ModeSchedule {
		t.Fatalf("run %+v", d.Runs[0])
	}
	// Paused: the slot starts nothing and says why.
	e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"action": "pause"}).OK(t, nil)
	e.clk.Advance(time.Hour)
	e.runDue()
	e.runDue()
	d = e.detail(id)
	if len(d.Runs) != 1 || !strings.Contains(d.Agent.LastError, "paused") {
		t.Fatalf("paused agent ran: runs %d, last_error %q", len(d.Runs), d.Agent.LastError)
	}
	e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"schedule": nil}).OK(t, &out)
	if d := e.detail(id); d.Schedule != nil {
		t.Fatalf("schedule kept: %+v", d.Schedule)
	}
}

func signed(secret string, at time.Time, body string, delivery string) []string {
	return []string{HeaderSignature, Sign(secret, at, []byte(body)), HeaderEvent, "order.paid", HeaderDelivery, delivery}
}

func TestEvents(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.agent(map[string]any{})
	path := "/api/agents/" + id + "/events"
	e.do("", "POST", path, `{}`, signed("x", e.clk.Now(), `{}`, "d0")...).Want(t, 404, "events_off")
	var out AgentAnswer
	e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"events": true}).OK(t, &out)
	secret := out.Secret
	if !strings.HasPrefix(secret, SecretPrefix) {
		t.Fatalf("secret %q", secret)
	}
	e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"events": true}).Want(t, 409, "events_on")
	body := `{"order":42}`
	now := e.clk.Now()
	cases := []struct {
		name   string
		body   string
		header []string
		status int
		code   string
	}{
		{"bad signature", body, signed("svcwhsec_wrong", now, body, "d1"), 401, "invalid_signature"},
		{"body changed", body, signed(secret, now, `{"order":43}`, "d1"), 401, "invalid_signature"},
		{"old timestamp", body, signed(secret, now.Add(-301*time.Second), body, "d1"), 401, "invalid_signature"},
		{"no signature", body, []string{HeaderDelivery, "d1", HeaderEvent, "x"}, 401, "invalid_signature"},
		{"no delivery id", body, signed(secret, now, body, "")[:4], 400, "invalid_request"},
		{"not JSON", "nope", signed(secret, now, "nope", "d1"), 400, "invalid_request"},
		{"over 16 KB", strings.Repeat(" ", MaxEventBody) + "{}", signed(secret, now, strings.Repeat(" ", MaxEventBody)+"{}", "d1"), 413, "body_too_large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.do("", "POST", path, c.body, c.header...).Want(t, c.status, c.code)
		})
	}
	var first, again EventAnswer
	r := e.do("", "POST", path, body, signed(secret, now, body, "d1")...)
	r.Want(t, 202, "")
	r.OK(t, &first)
	e.do("", "POST", path, body, signed(secret, now, body, "d1")...).OK(t, &again)
	if first.Status != RunQueued || again.RunID != first.RunID || !again.Duplicate {
		t.Fatalf("first %+v, again %+v", first, again)
	}
	e.model.set(mockReply{Text: "recorded"})
	e.runDue()
	x, _ := e.svc.st.run(context.Background(), e.db, first.RunID)
	if x.Status != RunCompleted || x.Mode != ModeEvent || x.EventType != "order.paid" || !strings.Contains(x.Input, `{"order":42}`) {
		t.Fatalf("event run %+v", x)
	}
	t.Run("replayed delivery after the run is not a second run", func(t *testing.T) {
		var a EventAnswer
		e.do("", "POST", path, body, signed(secret, e.clk.Now(), body, "d1")...).OK(t, &a)
		if a.RunID != first.RunID || a.Status != RunCompleted {
			t.Fatalf("%+v", a)
		}
	})
	runs := func() int {
		var n int
		if err := e.db.QueryRow(`SELECT count(*) FROM agent_runs WHERE agent_id = ?`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	t.Run("replayed signature under new delivery ids is not a second run", func(t *testing.T) {
		e.clk.Advance(time.Minute)
		at := e.clk.Now()
		ev := `{"order":77}`
		var orig EventAnswer
		e.do("", "POST", path, ev, signed(secret, at, ev, "orig")...).OK(t, &orig)
		before := runs()
		for i, wait := range []time.Duration{0, time.Second, 299 * time.Second} {
			e.clk.Advance(wait) // still inside the 300 seconds the signature is accepted
			var a EventAnswer
			r := e.do("", "POST", path, ev, signed(secret, at, ev, fmt.Sprintf("replay-%d", i))...)
			r.Want(t, 202, "")
			r.OK(t, &a)
			if a.RunID != orig.RunID || !a.Duplicate {
				t.Fatalf("replay %d answered %+v, the first %+v", i, a, orig)
			}
		}
		if n := runs(); n != before {
			t.Fatalf("%d runs after the replays, %d before", n, before)
		}
		// The same body signed afresh is a new event; another body signed
		// at the same second too.
		var fresh, other EventAnswer
		e.do("", "POST", path, ev, signed(secret, e.clk.Now(), ev, "fresh")...).OK(t, &fresh)
		e.do("", "POST", path, `{"order":78}`, signed(secret, at, `{"order":78}`, "other")...).OK(t, &other)
		if fresh.Duplicate || other.Duplicate || fresh.RunID == orig.RunID || other.RunID == orig.RunID || runs() != before+2 {
			t.Fatalf("fresh %+v, other %+v, %d runs", fresh, other, runs())
		}
	})
	t.Run("30 a minute", func(t *testing.T) {
		e.clk.Advance(time.Minute)
		ev := func(i int) string { return fmt.Sprintf(`{"order":%d}`, 1000+i) }
		for i := 1; i <= EventsPerMinute; i++ {
			e.do("", "POST", path, ev(i), signed(secret, e.clk.Now(), ev(i), fmt.Sprintf("r%d", i))...).Want(t, 202, "")
		}
		e.do("", "POST", path, ev(31), signed(secret, e.clk.Now(), ev(31), "r31")...).Want(t, 429, "rate_limited")
	})
	t.Run("rotate and paused", func(t *testing.T) {
		e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"events": "rotate"}).OK(t, &out)
		e.clk.Advance(time.Minute)
		e.do("", "POST", path, body, signed(secret, e.clk.Now(), body, "n1")...).Want(t, 401, "invalid_signature")
		e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"action": "pause"}).OK(t, nil)
		e.do("", "POST", path, body, signed(out.Secret, e.clk.Now(), body, "n1")...).Want(t, 409, "agent_paused")
		e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"events": false, "action": "resume"}).OK(t, nil)
		e.do("", "POST", path, body, signed(out.Secret, e.clk.Now(), body, "n2")...).Want(t, 404, "events_off")
	})
}

func TestChat(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.agent(map[string]any{"tools": []string{"vector_query", "project_info"}})
	var out AgentAnswer
	e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"chat": map[string]any{"allowedOrigins": []string{"https://www.example.com"}, "dailyLimit": 12}}).OK(t, &out)
	if out.Chat == nil || !strings.HasPrefix(out.Chat.ID, ChatPrefix) || !strings.HasSuffix(out.Chat.URL, "/api/agents/chat/"+out.Chat.ID) {
		t.Fatalf("chat %+v", out.Chat)
	}
	path := "/api/agents/chat/" + out.Chat.ID
	e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"schedule": "@daily"}).Want(t, 409, "start_mode_active")
	e.model.set(mockReply{Text: "Hello, visitor."})
	msg := map[string]any{"message": "hi", "history": []any{map[string]any{"role": "user", "content": "earlier"}, map[string]any{"role": "assistant", "content": "yes"}}}
	cases := []struct {
		name, origin string
		body         any
		status       int
		code         string
	}{
		{"allowed origin", "https://www.example.com", msg, 200, ""},
		{"project's own address", "https://shop.apps.test", msg, 200, ""},
		{"other origin", "https://evil.example", msg, 403, "origin_not_allowed"},
		{"no origin", "", msg, 403, "origin_not_allowed"},
		{"look-alike origin", "https://www.example.com.evil.example", msg, 403, "origin_not_allowed"},
		{"bad history role", "https://www.example.com", map[string]any{"message": "hi", "history": []any{map[string]any{"role": "system", "content": "x"}}}, 400, "invalid_request"},
		{"empty message", "https://www.example.com", map[string]any{"message": ""}, 400, "invalid_request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h []string
			if c.origin != "" {
				h = []string{"Origin", c.origin}
			}
			r := e.do("", "POST", path, c.body, h...)
			r.Want(t, c.status, c.code)
			if c.status == 200 {
				var rep ChatReply
				r.OK(t, &rep)
				if rep.Reply != "Hello, visitor." || rep.RunID == "" || r.Header.Get("Access-Control-Allow-Origin") != c.origin {
					t.Fatalf("reply %+v, CORS %q", rep, r.Header.Get("Access-Control-Allow-Origin"))
				}
			}
		})
	}
	// A chat run is read-only and offered the vector tools only.
	reqs := e.model.requests()
	tools, _ := json.Marshal(reqs[0]["tools"])
	if !strings.Contains(string(tools), "vector_query") || strings.Contains(string(tools), "project_info") {
		t.Fatalf("chat run offered %s", tools)
	}
	e.keys.mu.Lock()
	for _, p := range e.keys.keys {
		if !p.ReadOnly {
			t.Error("a chat run key is not read-only")
		}
	}
	e.keys.mu.Unlock()
	t.Run("preflight", func(t *testing.T) {
		r := e.do("", "OPTIONS", path, nil, "Origin", "https://www.example.com")
		if r.Status != 204 || r.Header.Get("Access-Control-Allow-Origin") != "https://www.example.com" {
			t.Fatalf("preflight %d %v", r.Status, r.Header)
		}
		e.do("", "OPTIONS", path, nil, "Origin", "https://evil.example").Want(t, 403, "origin_not_allowed")
	})
	t.Run("10 messages a minute per visitor", func(t *testing.T) {
		e.clk.Advance(time.Minute)
		for i := 0; i < ChatPerMinute; i++ {
			e.do("", "POST", path, msg, "Origin", "https://www.example.com").Want(t, 200, "")
		}
		e.do("", "POST", path, msg, "Origin", "https://www.example.com").Want(t, 429, "rate_limited")
	})
	t.Run("daily limit", func(t *testing.T) {
		e.clk.Advance(time.Minute) // 12 chat runs today so far: the limit
		e.do("", "POST", path, msg, "Origin", "https://www.example.com").Want(t, 429, "daily_limit")
		e.clk.Advance(24 * time.Hour)
		e.do("", "POST", path, msg, "Origin", "https://www.example.com").Want(t, 200, "")
	})
	t.Run("rotate and off", func(t *testing.T) {
		e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"chat": "rotate"}).OK(t, &out)
		e.do("", "POST", path, msg, "Origin", "https://www.example.com").Want(t, 404, "not_found")
		e.do(ownerKey, "PATCH", "/api/agents/"+id, map[string]any{"chat": false}).OK(t, nil)
		e.do("", "POST", "/api/agents/chat/"+out.Chat.ID, msg, "Origin", "https://www.example.com").Want(t, 404, "not_found")
	})
	if r := e.do("", "POST", "/api/agents/xyz/other", `{}`); r.Status != http.StatusNotFound {
		t.Fatalf("unknown inbound path: %d", r.Status)
	}
}

func TestSuggestionsAndDelete(t *testing.T) {
	e := newEnv(t, plans.Pro)
	var sg Suggestions
	e.do(ownerKey, "GET", "/api/projects/"+e.project+"/agents/suggested?appType=store", nil).OK(t, &sg)
	if len(sg.Suggestions) == 0 {
		t.Fatal("no suggestions for a store")
	}
	e.do(ownerKey, "GET", "/api/projects/"+e.project+"/agents/suggested?appType=spaceship", nil).Want(t, 400, "invalid_request")
	e.do(ownerKey, "POST", "/api/projects/"+e.project+"/agents/suggested", map[string]any{"appType": "store", "keys": []string{"sales-report", "nope"}}).Want(t, 400, "invalid_request")
	if n, _ := e.svc.Count(context.Background(), e.project); n != 0 {
		t.Fatalf("%d agents after a refused batch", n)
	}
	var created Created
	e.do(ownerKey, "POST", "/api/projects/"+e.project+"/agents/suggested", map[string]any{"appType": "store", "keys": []string{"sales-report", "order-follow-up"}}).OK(t, &created)
	if len(created.Agents) != 2 {
		t.Fatalf("created %+v", created)
	}
	id := created.Agents[0].ID
	e.do(e.key("full", e.other), "DELETE", "/api/agents/"+id, nil).Want(t, 403, "project_key_mismatch")
	e.do(ownerKey, "DELETE", "/api/agents/"+id, nil).OK(t, nil)
	e.do(ownerKey, "GET", "/api/agents/"+id, nil).Want(t, 404, "not_found")
	if err := e.svc.Dependent().Remove(context.Background(), e.project); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.svc.Count(context.Background(), e.project); n != 0 {
		t.Fatalf("%d agents after project removal", n)
	}
}
