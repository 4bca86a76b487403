package ai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("%d %s", r.status, r.body)
			}
			evs := parseSSE(t, r.body)
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
			evs := parseSSE(t, r.body)
			last := evs[len(evs)-1]
			if last.name != "error" || last.data["code"] != "stream_error" {
				t.Fatalf("last event %+v", last)
			}
			// 8 bytes delivered -> 2 output tokens.
			if last.data["tokensOut"] != float64(2) {
				t.Fatalf("charged for %v output tokens: %+v", last.data["tokensOut"], last.data)
			}
			charged := e.ledger.chargedOf(e.ws)
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
	if got := e.ledger.chargedOf(e.ws); got != 4 {
		t.Fatalf("charged %d, want 4", got)
	}
	e.ledger.check(t)
}

// Slow streams are relayed piece by piece; a stalled one ends in stream_error.
func TestSlowAndStalledStreams(t *testing.T) {
	e := newEnv(t, envOptions{configure: func(c *Config) { c.IdleTimeout = 150 * time.Millisecond }})
	e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Chunks: []string{"a", "b", "c"}, ChunkDelay: 20 * time.Millisecond})
	r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "stream": true})
	evs := parseSSE(t, r.body)
	if evs[len(evs)-1].name != "done" || len(evs) != 5 {
		t.Fatalf("events %+v", evs)
	}
	e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Chunks: []string{"a", "b"}, ChunkDelay: time.Second})
	r = e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "stream": true})
	evs = parseSSE(t, r.body)
	if last := evs[len(evs)-1]; last.name != "error" || last.data["code"] != "stream_error" {
		t.Fatalf("events %+v", evs)
	}
	e.ledger.check(t)
}
