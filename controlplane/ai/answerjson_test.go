package ai

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"

	"github.com/svcplatform/platform/controlplane/ai/provider"
)

// checkAppendAnswer: encoding/json reads the hand-written answer as the
// same value as its own encoding of a (numbers compared as written).
func checkAppendAnswer(t *testing.T, a *Answer) {
	t.Helper()
	got := appendAnswer(nil, a)
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(a); err != nil {
		t.Fatal(err)
	}
	read := func(b []byte) any {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil || dec.More() {
			t.Fatalf("not one JSON value (%v): %q", err, b)
		}
		return v
	}
	if got[len(got)-1] != '\n' || !reflect.DeepEqual(read(got), read(want.Bytes())) {
		t.Fatalf("appended\n%s\nencoding/json\n%s", got, want.Bytes())
	}
}

func TestAppendAnswer(t *testing.T) {
	for name, a := range map[string]*Answer{
		"plain": {ID: "air_1", Output: "word word ", ModelUsed: "gpt-4.1-mini", Provider: "openai", FinishReason: "stop",
			TokensIn: 10, TokensOut: 20, Cost: 1234, CostMicros: 1234, LatencyMs: 3},
		"everything": {ID: "air_\"2", Output: "a\nb\t\"c\" \\ é \u2028 \x00\x7f\b\f \xff", ToolCalls: []provider.ToolCall{{ID: "c1", Name: "f", Arguments: `{"x":1}`}, {ID: "c2", Name: "g"}},
			ModelUsed: "m", Provider: "p", FinishReason: "length", Truncated: true, Note: truncatedNote, TokensIn: -1, TokensOut: math.MaxInt64,
			Cost: USD(12*MicrosPerDollar + 5), CostMicros: 12*MicrosPerDollar + 5, LatencyMs: -7, FellBackFrom: "x", ProjectID: "prj_a"},
		"negative cost": {Cost: -1_500_001, CostMicros: -1},
		"zero":          {},
		"dollars":       {Cost: USD(MicrosPerDollar), CostMicros: MicrosPerDollar},
	} {
		t.Run(name, func(t *testing.T) { checkAppendAnswer(t, a) })
	}
	t.Run("written", func(t *testing.T) {
		rec := httptest.NewRecorder()
		writeAnswer(rec, &Answer{ID: "air_1", Output: "hi"})
		if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" || rec.Header().Get("Cache-Control") != "no-store" || rec.Code != 200 {
			t.Fatalf("status %d, headers %v", rec.Code, rec.Header())
		}
		big := &Answer{Output: string(bytes.Repeat([]byte("x"), 5000))}
		rec = httptest.NewRecorder()
		writeAnswer(rec, big)
		if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(len(appendAnswer(nil, big))) {
			t.Fatalf("no Content-Length on a large answer: %v", rec.Header())
		}
		if rec.Body.Len() != len(appendAnswer(nil, big)) {
			t.Fatalf("wrote %d bytes", rec.Body.Len())
		}
	})
}

// FuzzAppendAnswer: any text and amounts read back as encoding/json's.
func FuzzAppendAnswer(f *testing.F) {
	f.Add("air_1", "word \n\"x\"", "gpt-4.1-mini", "", int64(1234), int64(10), true)
	f.Add("\xff\x7f", "\u2028\b", "", "prj", int64(-1), int64(-5), false)
	f.Fuzz(func(t *testing.T, id, output, model, project string, cost, tokens int64, truncated bool) {
		checkAppendAnswer(t, &Answer{ID: id, Output: output, ModelUsed: model, ProjectID: project, Note: output, FellBackFrom: model,
			Truncated: truncated, TokensIn: tokens, TokensOut: -tokens, Cost: USD(cost), CostMicros: Micros(cost), LatencyMs: tokens,
			ToolCalls: []provider.ToolCall{{ID: id, Name: model, Arguments: output}}})
	})
}
