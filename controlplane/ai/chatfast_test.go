package ai

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/svcplatform/platform/controlplane/api"
)

var chatBodies = []struct {
	name string
	in   string
	fast bool
}{
	{"prompt", `{"model":"gpt-4.1-mini","prompt":"hello","max_tokens":64}`, true},
	{"stream", `{"model":"gpt-4.1-mini","prompt":"hello","max_tokens":64,"stream":true}`, true},
	{"messages", ` {"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"a \"quoted\"\nline é \ud83d\ude00"}],
		"temperature":0.7,"tier":"fast","projectId":"prj_a","system":"s","stream":false} `, true},
	{"empty messages", `{"messages":[]}`, true},
	{"numbers", `{"prompt":"x","max_tokens":-3,"temperature":1e-2}`, true},
	{"tools", `{"prompt":"x","tools":[{"type":"function","function":{"name":"f"}}]}`, false},
	{"parts", `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, false},
	{"null content", `{"messages":[{"role":"assistant","content":null}]}`, false},
	{"null prompt", `{"prompt":null}`, false},
	{"unknown", `{"prompt":"hi","bogus":1}`, false},
	{"case", `{"Prompt":"hi"}`, false},
	{"duplicate", `{"prompt":"a","prompt":"b"}`, false},
	{"float tokens", `{"prompt":"a","max_tokens":1.5}`, false},
	{"huge temperature", `{"prompt":"a","temperature":1e400}`, false},
	{"bad utf8", "{\"prompt\":\"\xff\"}", false},
	{"trailing", `{"prompt":"a"} {}`, false},
	{"empty", ``, false},
	{"array", `[]`, false},
	{"tool call id", `{"messages":[{"role":"tool","content":"x","tool_call_id":"c"}]}`, false},
}

func TestDecodeChatFast(t *testing.T) {
	for _, tc := range chatBodies {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := decodeChatFast([]byte(tc.in)); ok != tc.fast {
				t.Fatalf("fast path %v, want %v", ok, tc.fast)
			}
			checkDecodeChatFast(t, []byte(tc.in))
		})
	}
}

// checkDecodeChatFast: whatever the fast path accepts, api.DecodeBytes
// accepts and decodes to the same request, and both build the same input.
func checkDecodeChatFast(t *testing.T, in []byte) {
	t.Helper()
	fast, ok := decodeChatFast(in)
	if !ok {
		return
	}
	var slow ChatRequest
	if err := api.DecodeBytes(in, &slow, false); err != nil {
		t.Fatalf("fast path accepted what api.DecodeBytes refuses (%v): %q", err, in)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("fast %+v\nslow %+v\n%q", fast, slow, in)
	}
	fi, ferr := fast.input("", SurfaceChat)
	si, serr := slow.input("", SurfaceChat)
	if (ferr == nil) != (serr == nil) || !reflect.DeepEqual(fi, si) {
		t.Fatalf("inputs differ: %+v (%v) / %+v (%v)", fi, ferr, si, serr)
	}
	for i := range fast.Messages {
		raw := fast.Messages[i].Content
		if s, ok := plainString(raw); ok {
			var want string
			if err := json.Unmarshal(raw, &want); err != nil || want != s {
				t.Fatalf("plain string %q, encoding/json %q (%v)", s, want, err)
			}
		}
	}
}

// FuzzDecodeChatFast: the hand-written chat request decoder never accepts
// anything api.DecodeBytes reads differently.
func FuzzDecodeChatFast(f *testing.F) {
	for _, tc := range chatBodies {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkDecodeChatFast(t, in) })
}
