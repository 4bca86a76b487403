package ai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/ai/upstreamtest"
)

func TestNativeStream(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		upstream    func(e *env) *upstreamtest.Server
	}{
		{"openai", "gpt-4.1-mini", func(e *env) *upstreamtest.Server { return e.openai }},
		{"anthropic", "claude-sonnet-4-0", func(e *env) *upstreamtest.Server { return e.anthropic }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			tc.upstream(e).Set(tc.model, upstreamtest.Reply{Text: "one two \"three\"\n", InputTokens: 20, OutputTokens: 3,
				ToolCalls: []upstreamtest.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{"q":"x"}`}}})
			r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "model": tc.model, "stream": true,
				"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup", "parameters": map[string]any{"type": "object"}}}}})
			if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			evs := parseSSE(t, r.Body)
			if evs[0].name != "meta" || evs[0].data["model"] != tc.model {
				t.Fatalf("first event %+v", evs[0])
			}
			var text, args strings.Builder
			for _, ev := range evs[1 : len(evs)-1] {
				if ev.name != "delta" {
					t.Fatalf("event %+v", ev)
				}
				if s, ok := ev.data["text"].(string); ok {
					text.WriteString(s)
				}
				if tcd, ok := ev.data["toolCall"].(map[string]any); ok {
					a, _ := tcd["arguments"].(string)
					args.WriteString(a)
				}
			}
			done := evs[len(evs)-1]
			if text.String() != "one two \"three\"\n" || args.String() != `{"q":"x"}` || done.name != "done" || done.data["finishReason"] != "tool_calls" {
				t.Fatalf("text %q args %q done %+v", text.String(), args.String(), done)
			}
			if done.data["tokensIn"] != float64(20) || done.data["tokensOut"] != float64(3) {
				t.Fatalf("done %+v", done.data)
			}
			// The tool was offered upstream in the vendor's own shape.
			body := tc.upstream(e).Calls()[0].Body
			if tools, _ := body["tools"].([]any); len(tools) != 1 {
				t.Fatalf("upstream tools %v", body["tools"])
			}
			e.ledger.check(t)
		})
	}
}

// A stream cut midway is charged for what was delivered only and ends with
// an error event coded stream_error.
func TestStreamCutMidway(t *testing.T) {
	for _, name := range []string{"openai", "anthropic"} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			model, up := "gpt-4.1-mini", e.openai
			if name == "anthropic" {
				model, up = "claude-sonnet-4-0", e.anthropic
			}
			up.Set(model, upstreamtest.Reply{Chunks: []string{"abcd", "efgh", "ijkl", "mnop"}, CutAfter: 2, InputTokens: 1000, OutputTokens: 500})
			r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "model": model, "stream": true})
			evs := parseSSE(t, r.Body)
			last := evs[len(evs)-1]
			if last.name != "error" || last.data["code"] != "stream_error" {
				t.Fatalf("last event %+v", last)
			}
			// 8 bytes delivered -> 2 output tokens.
			if last.data["tokensOut"] != float64(2) {
				t.Fatalf("charged for %v output tokens: %+v", last.data["tokensOut"], last.data)
			}
			charged := e.ledger.chargedOf(e.Workspace)
			if charged != Micros(last.data["costMicros"].(float64)) || charged == 0 {
				t.Fatalf("ledger charged %d, event says %v", charged, last.data["costMicros"])
			}
			e.ledger.check(t)
		})
	}
}

// A client that goes away mid-stream is charged for the pieces it got.
func TestStreamClientDisconnect(t *testing.T) {
	e := newEnv(t, envOptions{})
	hold := make(chan struct{}) // never released: the upstream waits until the gateway hangs up
	t.Cleanup(func() { close(hold) })
	e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Chunks: []string{"aaaa", "bbbb", "cccc"}, HoldAfter: 2, Hold: hold, InputTokens: 1000, OutputTokens: 900})
	ctx, cancel := context.WithCancel(context.Background())
	body, _ := json.Marshal(map[string]any{"prompt": "hi", "model": "gpt-4.1-mini", "stream": true})
	req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/api/ai/chat", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+ownerKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(res.Body)
	deltas := 0
	for deltas < 2 {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "event: delta\n" {
			deltas++
		}
	}
	rd.ReadString('\n')
	cancel()
	res.Body.Close()
	// The gateway settles once it notices the client is gone.
	select {
	case <-e.ledger.settled:
	case <-time.After(10 * time.Second):
		t.Fatal("the reservation was never settled")
	}
	// Input is estimated from the prompt (2 bytes -> 1 token), output from
	// the 8 bytes delivered (2 tokens): 1*0.4 + 2*1.6 = 3.6 -> 4 micros.
	if got := e.ledger.chargedOf(e.Workspace); got != 4 {
		t.Fatalf("charged %d, want 4", got)
	}
	e.ledger.check(t)
}

// Slow streams are relayed piece by piece; a stalled one ends in stream_error.
func TestSlowAndStalledStreams(t *testing.T) {
	e := newEnv(t, envOptions{configure: func(c *Config) { c.IdleTimeout = 150 * time.Millisecond }})
	e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Chunks: []string{"a", "b", "c"}, ChunkDelay: 20 * time.Millisecond})
	r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "stream": true})
	evs := parseSSE(t, r.Body)
	if evs[len(evs)-1].name != "done" || len(evs) != 5 {
		t.Fatalf("events %+v", evs)
	}
	e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Chunks: []string{"a", "b"}, ChunkDelay: time.Second})
	r = e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "stream": true})
	evs = parseSSE(t, r.Body)
	if last := evs[len(evs)-1]; last.name != "error" || last.data["code"] != "stream_error" {
		t.Fatalf("events %+v", evs)
	}
	e.ledger.check(t)
}

// A stream that breaks or stalls before its first piece has delivered
// nothing: the next model answers (meta names it and what it replaced),
// and only the model that answered is charged. A refusal before the first
// piece is not retried and charges nothing; once a piece was delivered a
// break is a stream_error (TestStreamCutMidway).
func TestStreamFallbackBeforeFirstPiece(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  upstreamtest.Reply // gpt-4.1-mini's scripted stream
		second upstreamtest.Reply // claude-sonnet-4-0's
		// want is the answering model, or "" when the request fails with code.
		want, code string
		status     int
	}{
		{name: "cut before the first piece", first: upstreamtest.Reply{Text: "never said", CutBeforeFirst: true},
			second: upstreamtest.Reply{Text: "from sonnet", InputTokens: 10, OutputTokens: 2}, want: "claude-sonnet-4-0", status: 200},
		{name: "stalled before the first piece", first: upstreamtest.Reply{Text: "too late", FirstDelay: 2 * time.Second},
			second: upstreamtest.Reply{Text: "from sonnet", InputTokens: 10, OutputTokens: 2}, want: "claude-sonnet-4-0", status: 200},
		{name: "both broken", first: upstreamtest.Reply{Text: "x", CutBeforeFirst: true},
			second: upstreamtest.Reply{Text: "y", CutBeforeFirst: true}, code: "ai_provider_error", status: 502},
		{name: "refusal is not retried", first: upstreamtest.Reply{Refuse: true},
			second: upstreamtest.Reply{Text: "from sonnet"}, code: "ai_request_refused", status: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{configure: func(c *Config) { c.IdleTimeout = 150 * time.Millisecond }})
			e.openai.Set("gpt-4.1-mini", tc.first)
			e.anthropic.Set("claude-sonnet-4-0", tc.second)
			e.anthropic.Set("gpt-4o", upstreamtest.Reply{Status: 503})
			e.openai.Set("gpt-4o", upstreamtest.Reply{Status: 503})
			e.edge.Set("", upstreamtest.Reply{Status: 503})
			r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "model": "gpt-4.1-mini", "stream": true})
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			if tc.want == "" {
				if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || r.Code() != tc.code {
					t.Fatalf("want a JSON error %s, got %s %s", tc.code, r.Header.Get("Content-Type"), r.Body)
				}
				if c := e.ledger.chargedOf(e.Workspace); c != 0 {
					t.Fatalf("charged %d for no answer", c)
				}
				e.ledger.check(t)
				return
			}
			evs := parseSSE(t, r.Body)
			if evs[0].name != "meta" || evs[0].data["model"] != tc.want || evs[0].data["fellBackFrom"] != "gpt-4.1-mini" {
				t.Fatalf("meta %+v", evs[0])
			}
			for _, ev := range evs[1:] {
				if ev.name == "meta" || ev.name == "error" {
					t.Fatalf("events %+v", evs)
				}
			}
			done := evs[len(evs)-1]
			if done.name != "done" || done.data["modelUsed"] != tc.want {
				t.Fatalf("done %+v", done)
			}
			// 10 in x 3.00 + 2 out x 15.00 per million, plus the markup of
			// a third-party vendor model, if any: charged exactly as the event says.
			if got := e.ledger.chargedOf(e.Workspace); got == 0 || got != Micros(done.data["costMicros"].(float64)) {
				t.Fatalf("charged %d, done says %v", got, done.data["costMicros"])
			}
			e.ledger.check(t)
		})
	}
}

// Pieces that reach the gateway together leave in one write, yet none is
// held back while the upstream is silent: a slow stream's first piece
// arrives before the upstream sends the second.
func TestStreamFlushesBeforeWaiting(t *testing.T) {
	e := newEnv(t, envOptions{})
	hold := make(chan struct{})
	e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Chunks: []string{"one ", "two ", "three"}, HoldAfter: 1, Hold: hold})
	body, _ := json.Marshal(map[string]any{"prompt": "hi", "model": "gpt-4.1-mini", "stream": true})
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/ai/chat", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+ownerKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	rd := bufio.NewReader(res.Body)
	// The first delta must arrive while the upstream holds the rest.
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, `data: {"text":"one "}`) {
			break
		}
	}
	close(hold)
	rest, _ := io.ReadAll(rd)
	if !strings.Contains(string(rest), `"text":"three"`) || !strings.Contains(string(rest), "event: done") {
		t.Fatalf("rest of the stream %s", rest)
	}
	e.ledger.check(t)
}
