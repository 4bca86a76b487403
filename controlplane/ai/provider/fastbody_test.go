package provider

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

func ptr[T any](v T) *T { return &v }

var bodySamples = []struct {
	name string
	r    ChatRequest
	fast bool
}{
	{"plain", ChatRequest{Model: "gpt-4.1-mini", Messages: []Message{{Role: "user", Content: "hello"}}, MaxTokens: 64}, true},
	{"system and turns", ChatRequest{Model: "m", System: "be <brief> & kind", Messages: []Message{{Role: "user", Content: "a\"b\\c\n\t\r\b\f\x01\x1f"},
		{Role: "assistant", Content: "é ✓ \u2028 \u2029 \xff end"}, {Role: "tool", Content: "{}", ToolCallID: "call_1"}}, Temperature: ptr(0.7)}, true},
	{"zero temperature", ChatRequest{Model: "m", Messages: []Message{{Role: "user", Content: "x"}}, Temperature: ptr(0.0), MaxTokens: 8192}, true},
	{"empty content", ChatRequest{Model: "", Messages: []Message{{Role: "user"}}}, true},
	{"tiny temperature", ChatRequest{Model: "m", Messages: []Message{{Role: "user", Content: "x"}}, Temperature: ptr(1e-9)}, false},
	{"nan", ChatRequest{Model: "m", Messages: []Message{{Role: "user", Content: "x"}}, Temperature: ptr(math.NaN())}, false},
	{"tools", ChatRequest{Model: "m", Messages: []Message{{Role: "user", Content: "x"}}, Tools: []Tool{{Name: "f"}}}, false},
	{"tool choice", ChatRequest{Model: "m", Messages: []Message{{Role: "user", Content: "x"}}, ToolChoice: "none"}, false},
	{"tool calls", ChatRequest{Model: "m", Messages: []Message{{Role: "assistant", ToolCalls: []ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}}}}, false},
}

func TestFastBody(t *testing.T) {
	for _, tc := range bodySamples {
		t.Run(tc.name, func(t *testing.T) {
			if ok := fastBodyOK(&tc.r); ok != tc.fast {
				t.Fatalf("fast path %v, want %v", ok, tc.fast)
			}
			for _, stream := range []bool{false, true} {
				checkFastBody(t, &tc.r, stream)
			}
		})
	}
	r := &bodySamples[0].r
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { oaFastBody{r: r}.appendJSON(buf[:0]) }); n != 0 {
		t.Fatalf("%v allocations per body", n)
	}
}

// checkFastBody: the appended body reads as the same JSON value as what
// encoding/json writes for the same request.
func checkFastBody(t *testing.T, r *ChatRequest, stream bool) {
	t.Helper()
	if !fastBodyOK(r) {
		return
	}
	p := &OpenAI{}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p.body(r, stream)); err != nil {
		t.Fatalf("encoding/json refuses what the fast path takes: %v", err)
	}
	got := (oaFastBody{r: r, stream: stream}).appendJSON(nil)
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil || got[len(got)-1] != '\n' {
		t.Fatalf("fast body is not one JSON value and a newline (%v): %q", err, got)
	}
	if err := json.Unmarshal(want.Bytes(), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("fast body\n%s\nencoding/json\n%s", got, want.Bytes())
	}
}

// FuzzFastBody: any strings, token budget and temperature are written as
// encoding/json writes them.
func FuzzFastBody(f *testing.F) {
	f.Add("gpt-4.1-mini", "", "user", "hello", "", 64, 0.7, true)
	f.Add("m", "sys\u2028", "tool", "a\"\\\n\x00\xff", "call_1", 0, 1e-7, false)
	f.Fuzz(func(t *testing.T, model, system, role, content, toolCallID string, maxTokens int, temp float64, withTemp bool) {
		r := &ChatRequest{Model: model, System: system, Messages: []Message{{Role: role, Content: content, ToolCallID: toolCallID},
			{Role: "user", Content: content + system}}, MaxTokens: maxTokens}
		if withTemp {
			r.Temperature = &temp
		}
		checkFastBody(t, r, false)
		checkFastBody(t, r, true)
	})
}

func BenchmarkBodyEncode(b *testing.B) {
	r := &ChatRequest{Model: "gpt-4.1-mini", System: "You are brief.", Messages: []Message{{Role: "user", Content: "hello, how are you today?"}}, MaxTokens: 64}
	buf := make([]byte, 0, 1024)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = oaFastBody{r: r}.appendJSON(buf[:0])
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		p := &OpenAI{}
		var out bytes.Buffer
		b.ReportAllocs()
		for b.Loop() {
			out.Reset()
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			enc.Encode(p.body(r, false))
		}
	})
}
