package wasm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	fnModule  []byte
	buildErr  error
	cacheDir  string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasm-test-")
	if err != nil {
		panic(err)
	}
	cacheDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// exampleModule builds runtime/testdata/fn with the local Go toolchain
// (GOOS=wasip1 GOARCH=wasm) once per test binary.
func exampleModule(tb testing.TB) []byte {
	tb.Helper()
	buildOnce.Do(func() {
		out := filepath.Join(cacheDir, "fn.wasm")
		cmd := exec.Command("go", "build", "-o", out, "../testdata/fn")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = err
			tb.Logf("go build: %s", b)
			return
		}
		fnModule, buildErr = os.ReadFile(out)
	})
	if buildErr != nil {
		tb.Fatalf("build example function: %v", buildErr)
	}
	return fnModule
}

// asModule is testdata/fn-as.wasm, the AssemblyScript example built from
// testdata/fn-as (npm ci && npm run build there).
func asModule(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fn-as.wasm"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// newHost is a Host sharing the package's on-disk compilation cache, so
// the example module is compiled once per test binary.
func newHost(tb testing.TB, cfg Config) *Host {
	tb.Helper()
	cfg.CacheDir = filepath.Join(cacheDir, "compiled")
	h, err := New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}
