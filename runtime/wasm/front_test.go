package wasm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFront: the loopback HTTP front turns requests into calls and call
// errors into the statuses the edge answers: 504 for a function past its
// time limit, 413 for a body over the limit, 503 when busy or not loaded,
// 502 for a failed or malformed function.
func TestFront(t *testing.T) {
	mod := exampleModule(t)
	h := newHost(t, Config{Timeout: 300 * time.Millisecond, MaxRequestBytes: 1024})
	ctx := context.Background()
	if err := h.Load(ctx, Deployment{ID: "dpl_f", Project: "prj_f", Module: mod, Env: map[string]string{"GREETING": "hi"}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs []string
	f, err := h.ListenFront("dpl_f", func(stream, line string) {
		mu.Lock()
		logs = append(logs, stream+": "+line)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close(ctx) })
	base := "http://" + f.Addr()
	c := &http.Client{Timeout: 10 * time.Second}
	tests := []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		want                     string
	}{
		{"hello", "GET", "/hello", "", nil, 200, "hello from prj_f\n"},
		{"pinned variable", "GET", "/env?k=GREETING", "", nil, 200, "hi"},
		{"visitor address from the edge", "GET", "/env?k=REMOTE_ADDR", "", map[string]string{"X-Real-IP": "203.0.113.7"}, 200, "203.0.113.7"},
		{"scheme from the edge", "GET", "/env?k=HTTPS", "", map[string]string{"X-Forwarded-Proto": "https"}, 200, "on"},
		{"echo", "POST", "/echo", "payload", map[string]string{"X-Test": "t"}, 201, "payload"},
		{"loop", "GET", "/loop", "", nil, 504, "time limit"},
		{"too large", "POST", "/echo", strings.Repeat("x", 1025), nil, 413, "larger than 1024 bytes"},
		{"exit", "GET", "/exit", "", nil, 502, "failed"},
		{"garbage", "GET", "/garbage", "", nil, 502, "malformed"},
		{"not found route", "GET", "/nope", "", nil, 404, "no route nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.want) {
				t.Fatalf("%d %q, want %d with %q", resp.StatusCode, b, tt.status, tt.want)
			}
		})
	}
	t.Run("log", func(t *testing.T) {
		if _, err := c.Get(base + "/log"); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		joined := strings.Join(logs, "\n")
		if !strings.Contains(joined, "stderr: a line for the deployment log") || !strings.Contains(joined, "platform: GET /loop: 504") {
			t.Fatalf("log:\n%s", joined)
		}
	})
	t.Run("not loaded", func(t *testing.T) {
		if err := h.Unload(ctx, "dpl_f"); err != nil {
			t.Fatal(err)
		}
		resp, err := c.Get(base + "/hello")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 {
			t.Fatalf("%d, want 503", resp.StatusCode)
		}
	})
}

func TestStatusOf(t *testing.T) {
	for err, want := range map[error]int{ErrTimeout: 504, ErrRequestTooLarge: 413, ErrBusy: 503, ErrNotLoaded: 503, ErrClosed: 503,
		ErrFailed: 502, ErrBadResponse: 502, ErrResponseTooLarge: 502, fmt.Errorf("wrapped: %w", ErrTimeout): 504} {
		if got := StatusOf(err); got != want {
			t.Errorf("StatusOf(%v) = %d, want %d", err, got, want)
		}
	}
}
