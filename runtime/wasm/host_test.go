package wasm

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestCall(t *testing.T) {
	mod := exampleModule(t)
	// The time limit is tested elsewhere; here it only bounds a call, with
	// room for a loaded machine under -race.
	h := newHost(t, Config{Timeout: 20 * time.Second, MemoryLimitBytes: 64 << 20, MaxRequestBytes: 1 << 10})
	ctx := context.Background()
	if err := h.Load(ctx, Deployment{ID: "dpl_1", Project: "prj_1", Module: mod,
		Env: map[string]string{"API_TOKEN": "s3cret", "SERVICE_PROJECT_ID": "prj_forged", "PATH_INFO": "/forged", "EQUALS": "a=b=c", "EMPTY": ""}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		req        Request
		wantErr    error
		wantStatus int
		wantBody   string
		wantHeader map[string]string
		wantLog    string
	}{
		{name: "hello sees its project", req: Request{Method: "GET", Path: "/hello"}, wantStatus: 200, wantBody: "hello from prj_1\n",
			wantHeader: map[string]string{"Content-Type": "text/plain"}},
		{name: "pinned variable", req: Request{Method: "GET", Path: "/env", RawQuery: "k=API_TOKEN"}, wantStatus: 200, wantBody: "s3cret"},
		{name: "a value holding '='", req: Request{Method: "GET", Path: "/env", RawQuery: "k=EQUALS"}, wantStatus: 200, wantBody: "a=b=c"},
		{name: "an empty value is set", req: Request{Method: "GET", Path: "/env", RawQuery: "k=EMPTY"}, wantStatus: 200, wantBody: ""},
		{name: "a CGI variable", req: Request{Method: "DELETE", Path: "/env", RawQuery: "k=REQUEST_METHOD"}, wantStatus: 200, wantBody: "DELETE"},
		{name: "a header", req: Request{Method: "GET", Path: "/env", RawQuery: "k=HTTP_X_TEST", Header: http.Header{"X-Test": {"v1", "v2"}}}, wantStatus: 200, wantBody: "v1, v2"},
		{name: "SERVICE_PROJECT_ID is not overridden", req: Request{Method: "GET", Path: "/env", RawQuery: "k=SERVICE_PROJECT_ID"}, wantStatus: 200, wantBody: "prj_1"},
		{name: "the platform's own environment is not passed", req: Request{Method: "GET", Path: "/env", RawQuery: "k=HOME"}, wantStatus: 404},
		{name: "body, method and headers in; status and headers out",
			req:        Request{Method: "POST", Path: "/echo", Header: http.Header{"X-Test": {"yes"}, "Content-Type": {"text/plain"}}, Body: []byte("ping")},
			wantStatus: 201, wantBody: "ping", wantHeader: map[string]string{"X-Method": "POST", "X-Test": "yes"}},
		{name: "stderr goes to the log", req: Request{Method: "GET", Path: "/log"}, wantStatus: 200, wantLog: "a line for the deployment log\n"},
		{name: "not found is the function's answer", req: Request{Method: "GET", Path: "/nope"}, wantStatus: 404},
		{name: "non-zero exit", req: Request{Method: "GET", Path: "/exit"}, wantErr: ErrFailed},
		{name: "output that is not CGI", req: Request{Method: "GET", Path: "/garbage"}, wantErr: ErrBadResponse},
		{name: "memory limit traps", req: Request{Method: "GET", Path: "/alloc"}, wantErr: ErrFailed},
		{name: "request too large", req: Request{Method: "POST", Path: "/echo", Body: make([]byte, 2<<10)}, wantErr: ErrRequestTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := h.Call(ctx, "dpl_1", &tc.req)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("call: %v (log %q)", err, res.Log)
			}
			if res.Response.Status != tc.wantStatus {
				t.Fatalf("status = %d, want %d (body %q)", res.Response.Status, tc.wantStatus, res.Response.Body)
			}
			if tc.wantBody != "" && string(res.Response.Body) != tc.wantBody {
				t.Fatalf("body = %q, want %q", res.Response.Body, tc.wantBody)
			}
			for k, v := range tc.wantHeader {
				if got := res.Response.Header.Get(k); got != v {
					t.Fatalf("header %s = %q, want %q", k, got, v)
				}
			}
			if tc.wantLog != "" && string(res.Log) != tc.wantLog {
				t.Fatalf("log = %q, want %q", res.Log, tc.wantLog)
			}
		})
	}
}

// TestStoppedAtTimeLimit: a call is stopped at its time limit wherever it
// is: running wasm code, or waiting in a host call (the Go runtime's idle
// wait in poll_oneoff, a minute long here).
func TestStoppedAtTimeLimit(t *testing.T) {
	mod := exampleModule(t)
	const limit = 300 * time.Millisecond
	h := newHost(t, Config{Timeout: limit})
	ctx := context.Background()
	if err := h.Load(ctx, Deployment{ID: "dpl_loop", Project: "prj_1", Module: mod}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, query string
	}{
		{"a busy loop", "/loop", ""},
		{"a sleep in a host call", "/sleep", "d=1m"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res, err := h.Call(ctx, "dpl_loop", &Request{Method: "GET", Path: tc.path, RawQuery: tc.query})
			took := time.Since(start)
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("err = %v, want ErrTimeout", err)
			}
			// The bound leaves room for a loaded machine under -race; the
			// sleep lasts far longer.
			if res.Duration < limit || took > 10*time.Second {
				t.Fatalf("ran %v (call took %v), want stopped at the %v limit", res.Duration, took, limit)
			}
			// The host still serves after a stopped instance.
			if _, err := h.Call(ctx, "dpl_loop", &Request{Method: "GET", Path: "/hello"}); err != nil {
				t.Fatalf("call after timeout: %v", err)
			}
		})
	}
}

func TestLoadAndUnload(t *testing.T) {
	mod := exampleModule(t)
	h := newHost(t, Config{})
	ctx := context.Background()
	tests := []struct {
		name    string
		d       Deployment
		wantErr error
	}{
		{name: "not wasm", d: Deployment{ID: "a", Module: []byte("#!/bin/sh\necho hi\n")}, wantErr: ErrInvalidModule},
		{name: "a module without _start", d: Deployment{ID: "b", Module: []byte("\x00asm\x01\x00\x00\x00")}, wantErr: ErrInvalidModule},
		{name: "empty id", d: Deployment{Module: mod}, wantErr: ErrInvalidModule},
		{name: "ok", d: Deployment{ID: "c", Module: mod}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := h.Load(ctx, tc.d)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil && h.Loaded(tc.d.ID) {
				t.Fatal("a refused module is loaded")
			}
		})
	}
	if err := h.Unload(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Call(ctx, "c", &Request{Method: "GET", Path: "/hello"}); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("call after unload: %v, want ErrNotLoaded", err)
	}
	if err := h.Unload(ctx, "c"); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("second unload: %v, want ErrNotLoaded", err)
	}
}

// TestVariablesPinnedPerDeployment: each deployment keeps the variables it
// was deployed with; a redeploy with changed variables does not change the
// older one.
func TestVariablesPinnedPerDeployment(t *testing.T) {
	mod := exampleModule(t)
	h := newHost(t, Config{})
	ctx := context.Background()
	for id, v := range map[string]string{"dpl_old": "1", "dpl_new": "2"} {
		if err := h.Load(ctx, Deployment{ID: id, Project: "prj_1", Module: mod, Env: map[string]string{"LEVEL": v}}); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range map[string]string{"dpl_old": "1", "dpl_new": "2"} {
		res, err := h.Call(ctx, id, &Request{Method: "GET", Path: "/env", RawQuery: "k=LEVEL"})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(res.Response.Body); got != want {
			t.Fatalf("%s: LEVEL = %q, want %q", id, got, want)
		}
	}
}

func TestBusy(t *testing.T) {
	mod := exampleModule(t)
	h := newHost(t, Config{MaxConcurrent: 1, QueueTimeout: 20 * time.Millisecond})
	ctx := context.Background()
	if err := h.Load(ctx, Deployment{ID: "d", Module: mod}); err != nil {
		t.Fatal(err)
	}
	release, err := h.slots.acquire(ctx, "prj_other", -1) // the only slot is taken
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Call(ctx, "d", &Request{Method: "GET", Path: "/hello"}); !errors.Is(err, ErrBusy) || errors.Is(err, ErrProjectBusy) {
		t.Fatalf("err = %v, want ErrBusy", err)
	}
	release()
	if _, err := h.Call(ctx, "d", &Request{Method: "GET", Path: "/hello"}); err != nil {
		t.Fatalf("after the slot frees: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{name: "zero value", cfg: Config{}, ok: true},
		{name: "negative timeout", cfg: Config{Timeout: -1}},
		{name: "memory below a page", cfg: Config{MemoryLimitBytes: 100}},
		{name: "memory above 4 GiB", cfg: Config{MemoryLimitBytes: 8 << 30}},
		{name: "negative bound", cfg: Config{MaxResponseBytes: -1}},
		{name: "per-project share above the total", cfg: Config{MaxConcurrent: 4, MaxConcurrentPerProject: 5}},
		{name: "negative per-project share", cfg: Config{MaxConcurrentPerProject: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Provision()
			if (err == nil) != tc.ok {
				t.Fatalf("Provision() = %v, ok want %v", err, tc.ok)
			}
		})
	}
}

func TestClosedHost(t *testing.T) {
	h := newHost(t, Config{})
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Call(context.Background(), "d", &Request{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("call on closed host: %v", err)
	}
	if err := h.Load(context.Background(), Deployment{ID: "d", Module: exampleModule(t)}); !errors.Is(err, ErrClosed) {
		t.Fatalf("load on closed host: %v", err)
	}
}
