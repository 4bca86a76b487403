package wasm

import (
	"context"
	"testing"
)

// BenchmarkColdStart: a fresh host compiles the module (no cache) and
// serves its first request: what the first call after a deploy costs.
func BenchmarkColdStart(b *testing.B) {
	mod := exampleModule(b)
	ctx := context.Background()
	req := &Request{Method: "GET", Path: "/hello"}
	for b.Loop() {
		h, err := New(ctx, Config{})
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Load(ctx, Deployment{ID: "d", Project: "p", Module: mod}); err != nil {
			b.Fatal(err)
		}
		if _, err := h.Call(ctx, "d", req); err != nil {
			b.Fatal(err)
		}
		_ = h.Close(ctx)
	}
}

// BenchmarkWarmCall: a request to a loaded (compiled) function: a fresh
// instance per request.
func BenchmarkWarmCall(b *testing.B) {
	mod := exampleModule(b)
	ctx := context.Background()
	h := newHost(b, Config{})
	if err := h.Load(ctx, Deployment{ID: "d", Project: "p", Module: mod}); err != nil {
		b.Fatal(err)
	}
	req := &Request{Method: "GET", Path: "/hello"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Call(ctx, "d", req); err != nil {
			b.Fatal(err)
		}
	}
}
