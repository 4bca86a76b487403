package wasm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRustExample builds runtime/testdata/fn-rust with rustc for
// wasm32-wasip1 when that target's standard library is installed
// (rustup target add wasm32-wasip1), and calls it like the Go example.
func TestRustExample(t *testing.T) {
	rustc, err := exec.LookPath("rustc")
	if err != nil {
		t.Skip("runtime/wasm: rustc not installed; the Rust example is not built")
	}
	sysroot, err := exec.Command(rustc, "--print", "sysroot").Output()
	if err != nil {
		t.Skipf("runtime/wasm: rustc --print sysroot: %v", err)
	}
	if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(sysroot)), "lib", "rustlib", "wasm32-wasip1")); err != nil {
		t.Skip("runtime/wasm: rustc has no wasm32-wasip1 standard library (rustup target add wasm32-wasip1); the Rust example is not built")
	}
	out := filepath.Join(t.TempDir(), "fn.wasm")
	if b, err := exec.Command(rustc, "--edition", "2021", "-O", "--target", "wasm32-wasip1", "../testdata/fn-rust/src/main.rs", "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("rustc: %v\n%s", err, b)
	}
	mod, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	h := newHost(t, Config{})
	ctx := context.Background()
	if err := h.Load(ctx, Deployment{ID: "dpl_rs", Project: "prj_rs", Module: mod, Env: map[string]string{"K": "v"}}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/hello": "hello from prj_rs\n", "/env?k=K": "v"} {
		p, q, _ := strings.Cut(path, "?")
		res, err := h.Call(ctx, "dpl_rs", &Request{Method: "GET", Path: p, RawQuery: q})
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Response.Body) != want {
			t.Fatalf("%s = %q, want %q", path, res.Response.Body, want)
		}
	}
}
