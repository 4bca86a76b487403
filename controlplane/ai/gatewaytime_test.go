package ai

import (
	"strconv"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/ai/upstreamtest"
)

// Every chat answer, plain or streamed, native or compatible, carries the
// gateway's own time in HeaderGatewayMs, and that time leaves out the
// upstream's: the mock waits 150 ms before its headers and, streamed, 150 ms
// more before the first piece, and the header stays far below that while
// the whole call takes longer.
func TestGatewayTimeHeader(t *testing.T) {
	const upstreamWait = 150 * time.Millisecond
	for _, tc := range []struct {
		name, path string
		body       map[string]any
	}{
		{"native plain", "/api/ai/chat", map[string]any{"prompt": "hi", "model": "gpt-4.1-mini"}},
		{"native stream", "/api/ai/chat", map[string]any{"prompt": "hi", "model": "gpt-4.1-mini", "stream": true}},
		{"compatible plain", "/api/ai/v1/chat/completions", map[string]any{"model": "gpt-4.1-mini", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
		{"compatible stream", "/api/ai/v1/chat/completions", map[string]any{"model": "gpt-4.1-mini", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Text: "one two three", InputTokens: 5, OutputTokens: 3,
				HeaderDelay: upstreamWait, FirstDelay: upstreamWait})
			start := time.Now()
			r := e.do(ownerKey, "POST", tc.path, tc.body)
			took := time.Since(start)
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			v := r.Header.Get(HeaderGatewayMs)
			ms, err := strconv.ParseFloat(v, 64)
			if err != nil || ms < 0 {
				t.Fatalf("%s = %q, want milliseconds", HeaderGatewayMs, v)
			}
			if took < upstreamWait {
				t.Fatalf("the call took %v, less than the upstream's wait %v", took, upstreamWait)
			}
			if ms >= float64(upstreamWait/time.Millisecond)/2 {
				t.Fatalf("%s = %s ms with the upstream waiting %v: the upstream's time is counted", HeaderGatewayMs, v, upstreamWait)
			}
			e.ledger.check(t)
		})
	}
}

// A refused request (no model named that) is an error answer, without the
// header: nothing was relayed.
func TestGatewayTimeHeaderAbsentOnRefusal(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "model": "no-such-model"})
	if r.Status < 400 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if v := r.Header.Get(HeaderGatewayMs); v != "" {
		t.Fatalf("%s = %q on a refusal", HeaderGatewayMs, v)
	}
}

func TestGatewayMsFormat(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0.000"}, {-time.Millisecond, "0.000"}, {1500 * time.Microsecond, "1.500"}, {42*time.Millisecond + 7*time.Microsecond, "42.007"},
	} {
		if got := gatewayMs(tc.d); got != tc.want {
			t.Errorf("gatewayMs(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
