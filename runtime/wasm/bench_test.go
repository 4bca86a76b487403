package wasm

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// processCPU is the process's user and system time so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds cpu-ns/op, the process's CPU time per iteration since
// cpu0: on a shared machine a steadier figure than the wall clock.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// guests are the hello-world functions benchmarked: the Go example (a Go
// runtime starts in every instance) and the AssemblyScript one
// (testdata/fn-as: no language runtime).
func guests(b *testing.B) []struct {
	name string
	mod  []byte
} {
	return []struct {
		name string
		mod  []byte
	}{{"go", exampleModule(b)}, {"assemblyscript", asModule(b)}}
}

// BenchmarkColdStart: a fresh host compiles the module (no cache) and
// serves its first request: what the first call after a deploy costs.
func BenchmarkColdStart(b *testing.B) {
	for _, g := range guests(b) {
		b.Run(g.name, func(b *testing.B) {
			ctx := context.Background()
			req := &Request{Method: "GET", Path: "/hello"}
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				h, err := New(ctx, Config{})
				if err != nil {
					b.Fatal(err)
				}
				if err := h.Load(ctx, Deployment{ID: "d", Project: "p", Module: g.mod}); err != nil {
					b.Fatal(err)
				}
				if _, err := h.Call(ctx, "d", req); err != nil {
					b.Fatal(err)
				}
				_ = h.Close(ctx)
			}
			reportCPU(b, cpu0)
		})
	}
}

// BenchmarkFirstCall: a fresh host loads a module it compiled before (the
// compilation cache on disk, as after a restart or a redeploy of the same
// module) and serves one request: a deploy's first call, without the
// compilation that happens before the deploy is live.
func BenchmarkFirstCall(b *testing.B) {
	for _, g := range guests(b) {
		b.Run(g.name, func(b *testing.B) {
			ctx := context.Background()
			req := &Request{Method: "GET", Path: "/hello"}
			warm := newHost(b, Config{}) // fills the cache
			if err := warm.Load(ctx, Deployment{ID: "d", Project: "p", Module: g.mod}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				h := newHost(b, Config{})
				if err := h.Load(ctx, Deployment{ID: "d", Project: "p", Module: g.mod}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := h.Call(ctx, "d", req); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				_ = h.Close(ctx)
				b.StartTimer()
			}
		})
	}
}

// BenchmarkWarmCall: a request to a loaded (compiled) function: a fresh
// instance per request.
func BenchmarkWarmCall(b *testing.B) {
	for _, g := range guests(b) {
		b.Run(g.name, func(b *testing.B) {
			ctx := context.Background()
			h := newHost(b, Config{})
			if err := h.Load(ctx, Deployment{ID: "d", Project: "p", Module: g.mod}); err != nil {
				b.Fatal(err)
			}
			req := &Request{Method: "GET", Path: "/hello"}
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				if _, err := h.Call(ctx, "d", req); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0)
		})
	}
}
