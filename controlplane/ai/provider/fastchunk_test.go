package provider

import (
	"encoding/json"
	"testing"
)

var chunkSamples = []struct {
	name string
	in   string
	fast bool
}{
	{"plain", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1731000000,"model":"gpt-4.1-mini","system_fingerprint":null,"choices":[{"index":0,"delta":{"content":"word "},"logprobs":null,"finish_reason":null}]}`, true},
	{"role", `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}]}`, true},
	{"finish", `{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"length"}], "usage": null}`, true},
	{"no choices", ` {"id":"c","choices":[]} `, true},
	{"unicode", `{"choices":[{"delta":{"content":"héllo ✓"}}]}`, true},
	{"number forms", `{"created":-1.5e+3,"choices":[{"index":0e0,"delta":{"content":null}}]}`, true},
	{"escape", `{"choices":[{"delta":{"content":"a\nb"}}]}`, false},
	{"usage", `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}`, false},
	{"tool call", `{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"t","function":{"name":"f","arguments":"{}"}}]}}]}`, false},
	{"refusal", `{"choices":[{"delta":{"refusal":"no"}}]}`, false},
	{"error", `{"error":{"message":"x","type":"server_error"}}`, false},
	{"case", `{"Model":"m","choices":[]}`, false},
	{"duplicate", `{"model":"a","model":"b","choices":[]}`, false},
	{"two choices", `{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}`, false},
	{"trailing", `{"choices":[]} x`, false},
	{"bad utf8", "{\"choices\":[{\"delta\":{\"content\":\"\xff\"}}]}", false},
	{"bad number", `{"created":01,"choices":[]}`, false},
	{"truncated", `{"choices":[{"delta":{"content":"a"`, false},
}

func TestFastChunk(t *testing.T) {
	for _, tc := range chunkSamples {
		t.Run(tc.name, func(t *testing.T) {
			_, ok := decodeFastChunk([]byte(tc.in))
			if ok != tc.fast {
				t.Fatalf("fast path %v, want %v", ok, tc.fast)
			}
			checkFastChunk(t, []byte(tc.in))
		})
	}
	plain := []byte(chunkSamples[0].in)
	if n := testing.AllocsPerRun(100, func() { decodeFastChunk(plain) }); n != 0 {
		t.Fatalf("%v allocations per chunk", n)
	}
}

// checkFastChunk: whatever the fast path accepts, encoding/json decodes
// to the same thing.
func checkFastChunk(t *testing.T, in []byte) {
	c, ok := decodeFastChunk(in)
	if !ok {
		return
	}
	var a oaAnswer
	if err := json.Unmarshal(in, &a); err != nil {
		t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", err, in)
	}
	if a.Error != nil || a.Usage != nil || string(c.model) != a.Model || len(a.Choices) != c.choices {
		t.Fatalf("fast %+v, json %+v: %q", c, a, in)
	}
	if c.choices == 0 {
		return
	}
	ch := a.Choices[0]
	if ch.Delta.Refusal != nil || len(ch.Delta.ToolCalls) != 0 || (ch.Delta.Content != nil) != c.hasContent ||
		(c.hasContent && *ch.Delta.Content != string(c.content)) || (ch.FinishReason != nil) != c.hasFinish ||
		(c.hasFinish && *ch.FinishReason != string(c.finish)) {
		t.Fatalf("fast %+v, json %+v: %q", c, ch, in)
	}
}

// FuzzFastChunk: the hand-written chunk decoder never accepts anything
// encoding/json would read differently.
func FuzzFastChunk(f *testing.F) {
	for _, tc := range chunkSamples {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkFastChunk(t, in) })
}

func BenchmarkChunkDecode(b *testing.B) {
	in := []byte(chunkSamples[0].in)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeFastChunk(in)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a oaAnswer
			json.Unmarshal(in, &a)
		}
	})
}
