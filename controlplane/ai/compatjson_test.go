package ai

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/ai/provider"
	"github.com/svcplatform/platform/controlplane/api"
)

var completionBodies = []struct {
	name string
	in   string
	fast bool
}{
	{"plain", `{"model":"bench-model","stream":false,"max_tokens":64,"messages":[{"role":"user","content":"Say a few words."}]}`, true},
	{"stream usage", `{"model":"gpt-4.1-mini","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`, true},
	{"all fields", ` {"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"a \"quoted\"\nline é \ud83d\ude00"}],
		"max_tokens":1,"max_completion_tokens":2,"temperature":0.7,"stream":false,"stream_options":{},"tier":"fast","projectId":"prj_a"} `, true},
	{"empty messages", `{"messages":[]}`, true},
	{"empty object", `{}`, true},
	{"no content", `{"messages":[{"role":"assistant"}]}`, true},
	{"numbers", `{"messages":[{"role":"user","content":"x"}],"max_tokens":-3,"temperature":1e-2}`, true},
	{"n", `{"messages":[{"role":"user","content":"x"}],"n":2}`, false},
	{"tools", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}]}`, false},
	{"parts", `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, false},
	{"null content", `{"messages":[{"role":"assistant","content":null}]}`, false},
	{"null model", `{"model":null}`, false},
	{"null stream options", `{"stream_options":null}`, false},
	{"other stream option", `{"stream_options":{"include_obfuscation":true}}`, false},
	{"unknown", `{"model":"m","top_p":1}`, false},
	{"case", `{"Model":"m"}`, false},
	{"duplicate", `{"model":"a","model":"b"}`, false},
	{"float tokens", `{"max_tokens":1.5}`, false},
	{"huge tokens", `{"max_tokens":99999999999999999999}`, false},
	{"huge temperature", `{"temperature":1e400}`, false},
	{"bad utf8", "{\"model\":\"\xff\"}", false},
	{"trailing", `{"model":"a"} {}`, false},
	{"empty", ``, false},
	{"spaces", "  \n", false},
	{"array", `[]`, false},
	{"tool call id", `{"messages":[{"role":"tool","content":"x","tool_call_id":"c"}]}`, false},
	{"name", `{"messages":[{"role":"user","content":"x","name":"n"}]}`, false},
}

func TestDecodeCompletionFast(t *testing.T) {
	for _, tc := range completionBodies {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := decodeCompletionFast([]byte(tc.in)); ok != tc.fast {
				t.Fatalf("fast path %v, want %v", ok, tc.fast)
			}
			checkDecodeCompletionFast(t, []byte(tc.in))
		})
	}
}

// TestDecodeCompletion: the handler's reading (pooled buffer, fast path,
// json.Unmarshal otherwise) gives what readBody gives, refusals included.
func TestDecodeCompletion(t *testing.T) {
	for _, tc := range completionBodies {
		t.Run(tc.name, func(t *testing.T) {
			var got, want CompletionRequest
			gerr := decodeCompletion(httptest.NewRequest("POST", "/", strings.NewReader(tc.in)), &got)
			werr := readBody(httptest.NewRequest("POST", "/", strings.NewReader(tc.in)), &want)
			if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("decodeCompletion %+v (%v), readBody %+v (%v)", got, gerr, want, werr)
			}
			if gerr != nil && api.AsError(gerr).Kind != api.AsError(werr).Kind {
				t.Fatalf("error kind %v, readBody's %v", api.AsError(gerr).Kind, api.AsError(werr).Kind)
			}
		})
	}
}

// checkDecodeCompletionFast: whatever the fast path accepts,
// json.Unmarshal accepts and decodes to the same request.
func checkDecodeCompletionFast(t *testing.T, in []byte) {
	t.Helper()
	fast, ok := decodeCompletionFast(in)
	if !ok {
		return
	}
	var slow CompletionRequest
	if err := json.Unmarshal(in, &slow); err != nil {
		t.Fatalf("fast path accepted what json.Unmarshal refuses (%v): %q", err, in)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("fast %+v\nslow %+v\n%q", fast, slow, in)
	}
}

// FuzzDecodeCompletionFast: the hand-written compatible request decoder
// never accepts anything json.Unmarshal reads differently.
func FuzzDecodeCompletionFast(f *testing.F) {
	for _, tc := range completionBodies {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkDecodeCompletionFast(t, in) })
}

var completionAnswers = []struct {
	name      string
	a         Answer
	requested string
	exact     bool // no string escaped differently by jsonesc and encoding/json
}{
	{"plain", Answer{ID: "air_1", Output: "tok0 tok1 ", ModelUsed: "llama-3.1-8b-instruct", Provider: "edge", FinishReason: "stop",
		TokensIn: 12, TokensOut: 21, Cost: 1234, CostMicros: 1234, LatencyMs: 3}, "llama-3.1-8b-instruct", true},
	{"router", Answer{ID: "air_2", Output: "", ModelUsed: "gpt-4.1-mini", Provider: "openai", FinishReason: provider.FinishLength,
		Truncated: true, Note: truncatedNote, FellBackFrom: "claude", ProjectID: "prj_1"}, "", true},
	{"escapes", Answer{ID: "air_\"3\"", Output: "a\nb\t\"c\" <html> & \u2028 \x7f é \U0001F600 \xff", ModelUsed: "m\\", Provider: "p",
		FinishReason: "content_filter", Cost: 5_000_000_123, CostMicros: 5_000_000_123}, "m\u2029", false},
	{"tool calls", Answer{ID: "air_4", ModelUsed: "m", Provider: "p", FinishReason: provider.FinishToolCalls,
		ToolCalls: []provider.ToolCall{{ID: "call_1", Name: "get", Arguments: `{"a":1}`}, {Arguments: ""}, {ID: "c", Name: "", Arguments: "x"}}}, "m", true},
	{"negative", Answer{ID: "air_5", Cost: -1, CostMicros: -1, TokensIn: -2, LatencyMs: -3}, "m", true},
}

// TestAppendCompletion: encoding/json reads the hand-written compatible
// answer as the same value as the one api.WriteJSON writes.
func TestAppendCompletion(t *testing.T) {
	for _, tc := range completionAnswers {
		t.Run(tc.name, func(t *testing.T) { checkAppendCompletion(t, &tc.a, tc.requested, 1_700_000_000, tc.exact) })
	}
}

// checkAppendCompletion: encoding/json reads appendCompletion's JSON as
// the same value as api.WriteJSON's; exact: byte for byte the same (the
// strings differ only where the two escape differently: DEL, invalid
// UTF-8).
func checkAppendCompletion(t *testing.T, a *Answer, requested string, created int64, exact bool) {
	t.Helper()
	rec := httptest.NewRecorder()
	api.WriteJSON(rec, 200, completion(a, requested, created))
	want := rec.Body.Bytes()
	got := appendCompletion(nil, a, requested, created)
	if !bytes.HasSuffix(got, []byte("}\n")) || bytes.Count(got, []byte("\n")) != 1 {
		t.Fatalf("not one line ending in a newline: %q", got)
	}
	var g, w any
	dg, dw := json.NewDecoder(bytes.NewReader(got)), json.NewDecoder(bytes.NewReader(want))
	dg.UseNumber()
	dw.UseNumber()
	if err := dg.Decode(&g); err != nil {
		t.Fatalf("invalid JSON (%v): %s", err, got)
	}
	if err := dw.Decode(&w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("hand-written\n%s\nencoding/json\n%s", got, want)
	}
	if exact && !bytes.Equal(got, want) {
		t.Fatalf("not byte for byte what encoding/json writes\n%s\n%s", got, want)
	}
}

// FuzzAppendCompletion: whatever the strings of an answer, the hand-written
// compatible answer is valid JSON that reads as api.WriteJSON's does.
func FuzzAppendCompletion(f *testing.F) {
	for _, tc := range completionAnswers {
		f.Add(tc.a.ID, tc.a.Output, tc.a.ModelUsed, tc.a.FinishReason, tc.requested, int64(tc.a.Cost), tc.a.TokensIn, tc.a.Truncated)
	}
	f.Fuzz(func(t *testing.T, id, output, model, finish, requested string, cost, tokens int64, truncated bool) {
		a := &Answer{ID: id, Output: output, ModelUsed: model, Provider: model, FinishReason: finish, FellBackFrom: requested,
			Cost: USD(cost), CostMicros: Micros(cost), TokensIn: tokens, TokensOut: tokens / 2, Truncated: truncated,
			ToolCalls: []provider.ToolCall{{ID: id, Name: output, Arguments: finish}}}
		checkAppendCompletion(t, a, requested, tokens, false)
	})
}

// BenchmarkCompletionJSON: reading the bench's compatible request and
// writing its plain answer, by hand and by encoding/json.
//
//	go test -run '^$' -bench CompletionJSON -benchmem ./controlplane/ai/
func BenchmarkCompletionJSON(b *testing.B) {
	body := completionBodies[0].in
	a := &completionAnswers[0].a
	w := &discardWriter{h: map[string][]string{}}
	r := httptest.NewRequest("POST", "/", nil)
	sr := strings.NewReader(body)
	r.Body = io.NopCloser(sr)
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req CompletionRequest
			sr.Reset(body)
			if err := decodeCompletion(r, &req); err != nil {
				b.Fatal(err)
			}
			writeCompletion(w, a, req.Model, 1)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req CompletionRequest
			sr.Reset(body)
			if err := readBody(r, &req); err != nil {
				b.Fatal(err)
			}
			api.WriteJSON(w, 200, completion(a, req.Model, 1))
		}
	})
}
