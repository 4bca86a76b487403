package wasm

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
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
		{"too large", "POST", "/echo", strings.Repeat("x", 1025), nil, 413, "larger than the function limit of 1 KiB"},
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

// TestFrontRefusesLargeBody: a body over the limit (the default 6 MiB) is
// answered 413 naming the limit, also to a client that writes its whole
// request before it reads the answer (as the edge does): the front reads
// and drops the rest of the body instead of resetting the connection.
func TestFrontRefusesLargeBody(t *testing.T) {
	h := newHost(t, Config{})
	f, err := h.ListenFront("dpl_big", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	body := bytes.Repeat([]byte("x"), 7<<20)
	var chunked bytes.Buffer
	for rest := body; len(rest) > 0; {
		n := min(len(rest), 64<<10)
		fmt.Fprintf(&chunked, "%x\r\n%s\r\n", n, rest[:n])
		rest = rest[n:]
	}
	chunked.WriteString("0\r\n\r\n")
	tests := []struct {
		name, header string
		body         []byte
	}{
		{"declared length", "Content-Length: " + strconv.Itoa(len(body)), body},
		{"chunked", "Transfer-Encoding: chunked", chunked.Bytes()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", f.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			req := "POST /echo HTTP/1.1\r\nHost: fn.example\r\nContent-Type: application/octet-stream\r\n" + tc.header + "\r\n\r\n"
			if _, err := c.Write(append([]byte(req), tc.body...)); err != nil {
				t.Fatalf("writing the request: %v", err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "limit of 6 MiB") {
				t.Fatalf("%d %q, want 413 naming the 6 MiB limit", resp.StatusCode, b)
			}
		})
	}
}

func TestStatusOf(t *testing.T) {
	for err, want := range map[error]int{ErrTimeout: 504, ErrRequestTooLarge: 413, ErrProjectBusy: 429, ErrBusy: 503, ErrNotLoaded: 503, ErrClosed: 503,
		ErrFailed: 502, ErrBadResponse: 502, ErrResponseTooLarge: 502, fmt.Errorf("wrapped: %w", ErrTimeout): 504,
		&SlotError{Project: true, Limit: 8, Max: 16}: 429, &SlotError{Limit: 16, Max: 16}: 503} {
		if got := StatusOf(err); got != want {
			t.Errorf("StatusOf(%v) = %d, want %d", err, got, want)
		}
	}
}
