package provider

import (
	"errors"
	"reflect"
	"testing"
)

var answerSamples = []struct {
	name string
	in   string
	fast bool
}{
	{"plain", `{"id":"chatcmpl-mock","object":"chat.completion","created":1731000000,"model":"gpt-4.1-mini","choices":[{"index":0,"message":{"role":"assistant","content":"word word "},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30}}` + "\n", true},
	{"vendor", `{
  "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
  "object": "chat.completion",
  "created": 1741570283,
  "model": "gpt-4o-2024-08-06",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": "The image shows a wooden boardwalk path.\nIt runs \"straight\" \\ on \u00e9t\u00e9 \ud83d\ude00 \/ \t\b\f\r.",
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 1117,
    "completion_tokens": 46,
    "total_tokens": 1163,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default",
  "system_fingerprint": "fp_fc9f1d7035"
}`, true},
	{"no usage", `{"choices":[{"message":{"content":"hi"},"finish_reason":"length"}]}`, true},
	{"null content", `{"model":null,"choices":[{"message":{"role":"assistant","content":null},"finish_reason":null}],"usage":{}}`, true},
	{"content filter", `{"choices":[{"message":{"content":""},"finish_reason":"content_filter"}]}`, true},
	{"unicode", `{"choices":[{"message":{"content":"héllo ✓"}}]}`, true},
	{"negative", `{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":-1,"completion_tokens":0}}`, true},
	{"tool call", `{"choices":[{"message":{"content":null,"tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`, false},
	{"refusal", `{"choices":[{"message":{"content":null,"refusal":"no"}}]}`, false},
	{"error", `{"error":{"message":"x","type":"server_error"}}`, false},
	{"no choices", `{"choices":[]}`, false},
	{"two choices", `{"choices":[{"message":{"content":"a"}},{"message":{"content":"b"}}]}`, false},
	{"case", `{"Model":"m","choices":[{"message":{"content":"a"}}]}`, false},
	{"duplicate", `{"model":"a","model":"b","choices":[{"message":{"content":"a"}}]}`, false},
	{"unknown key", `{"choices":[{"message":{"content":"a","audio":null}}]}`, false},
	{"float tokens", `{"choices":[{"message":{"content":"a"}}],"usage":{"prompt_tokens":1.0}}`, false},
	{"exponent tokens", `{"choices":[{"message":{"content":"a"}}],"usage":{"prompt_tokens":1e3}}`, false},
	{"huge tokens", `{"choices":[{"message":{"content":"a"}}],"usage":{"prompt_tokens":99999999999999999999}}`, false},
	{"lone surrogate", `{"choices":[{"message":{"content":"\ud83d x"}}]}`, false},
	{"low surrogate", `{"choices":[{"message":{"content":"\ude00"}}]}`, false},
	{"bad escape", `{"choices":[{"message":{"content":"\x"}}]}`, false},
	{"bad utf8", "{\"choices\":[{\"message\":{\"content\":\"\xff\"}}]}", false},
	{"bad utf8 escaped", "{\"choices\":[{\"message\":{\"content\":\"\\n\xff\"}}]}", false},
	{"control", "{\"choices\":[{\"message\":{\"content\":\"a\nb\"}}]}", false},
	{"trailing", `{"choices":[{"message":{"content":"a"}}]} x`, false},
	{"truncated", `{"choices":[{"message":{"content":"a\n`, false},
}

func TestFastAnswer(t *testing.T) {
	for _, tc := range answerSamples {
		t.Run(tc.name, func(t *testing.T) {
			_, ok := decodeFastAnswer([]byte(tc.in))
			if ok != tc.fast {
				t.Fatalf("fast path %v, want %v", ok, tc.fast)
			}
			checkFastAnswer(t, []byte(tc.in))
		})
	}
	plain := []byte(answerSamples[0].in)
	p := &OpenAI{cfg: Config{Name: "allocs"}}
	if n := testing.AllocsPerRun(100, func() { fa, _ := decodeFastAnswer(plain); p.fastAnswer(&fa) }); n > 3 {
		t.Fatalf("%v allocations per answer, want at most 3 (the answer, its model and its text)", n)
	}
}

// checkFastAnswer: whatever the fast path accepts, Chat's encoding/json
// path reads as the same answer or the same error.
func checkFastAnswer(t *testing.T, in []byte) {
	t.Helper()
	fa, ok := decodeFastAnswer(in)
	if !ok {
		return
	}
	p := &OpenAI{cfg: Config{Name: "fuzz"}}
	fast, ferr := p.fastAnswer(&fa)
	slow, serr := p.answer(in)
	if (ferr == nil) != (serr == nil) {
		t.Fatalf("fast error %v, encoding/json error %v: %q", ferr, serr, in)
	}
	if ferr != nil {
		var fe, se *Error
		if !errors.As(ferr, &fe) || !errors.As(serr, &se) || fe.Kind != se.Kind || fe.Message != se.Message {
			t.Fatalf("fast error %v, encoding/json error %v: %q", ferr, serr, in)
		}
		return
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("fast %+v, encoding/json %+v: %q", fast, slow, in)
	}
}

// FuzzFastAnswer: the hand-written answer decoder never accepts anything
// encoding/json would read differently.
func FuzzFastAnswer(f *testing.F) {
	for _, tc := range answerSamples {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkFastAnswer(t, in) })
}

func BenchmarkAnswerDecode(b *testing.B) {
	in := []byte(answerSamples[1].in)
	p := &OpenAI{cfg: Config{Name: "bench"}}
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fa, _ := decodeFastAnswer(in)
			p.fastAnswer(&fa)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.answer(in)
		}
	})
}
