package h2

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// testHandler answers by path:
//
//	/echo       the request body, with its length and SHA-256 in headers
//	/big?n=N    N octets (SetBodyRaw)
//	/stream?n=N N octets from a body stream (length unknown)
//	/sized?n=N  N octets from a body stream of declared length
//	/trailer    a body, then a trailer field
//	/status?c=C an empty answer of status C
//	/cookies    the request's cookies
//	/hints      a 103 with a Link, then the page
//	/headers    the request's header fields, one per line
//	/block      waits for release (or 10 s), then "released"
type testHandler struct {
	release  chan struct{}
	started  chan struct{}
	closed   atomic.Int32  // body streams closed
	closings chan struct{} // one per body stream closed
}

func newTestHandler() *testHandler {
	return &testHandler{release: make(chan struct{}), started: make(chan struct{}, 16), closings: make(chan struct{}, 64)}
}

func (h *testHandler) serve(ctx *fasthttp.RequestCtx) {
	n, _ := strconv.Atoi(string(ctx.QueryArgs().Peek("n")))
	switch string(ctx.Path()) {
	case "/echo":
		body := ctx.Request.Body()
		sum := sha256.Sum256(body)
		ctx.Response.Header.Set("X-Length", strconv.Itoa(len(body)))
		ctx.Response.Header.Set("X-Sum", hex.EncodeToString(sum[:]))
		ctx.SetBody(body)
	case "/big":
		ctx.Response.SetBodyRaw(pattern(n))
	case "/stream":
		ctx.SetBodyStream(&closeCounter{Reader: bytes.NewReader(pattern(n)), h: h}, -1)
	case "/sized":
		ctx.SetBodyStream(&closeCounter{Reader: bytes.NewReader(pattern(n)), h: h}, n)
	case "/trailer":
		ctx.Response.Header.SetTrailer("X-Checksum")
		ctx.Response.Header.Set("X-Checksum", "abc123")
		ctx.SetBodyString("body before the trailer")
	case "/status":
		c, _ := strconv.Atoi(string(ctx.QueryArgs().Peek("c")))
		ctx.SetStatusCode(c)
	case "/cookies":
		var b strings.Builder
		for k, v := range ctx.Request.Header.Cookies() {
			fmt.Fprintf(&b, "%s=%s;", k, v)
		}
		ctx.SetBodyString(b.String())
	case "/hints":
		ctx.Response.Header.Add("Link", "</a.css>; rel=preload; as=style")
		if !EarlyHints(ctx) {
			ctx.Error("not HTTP/2", 500)
			return
		}
		ctx.Response.Header.Del("Link")
		ctx.SetBodyString("page")
	case "/headers":
		var b strings.Builder
		for k, v := range ctx.Request.Header.All() {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
		fmt.Fprintf(&b, "Host: %s\nURI: %s\nMethod: %s\n", ctx.Host(), ctx.RequestURI(), ctx.Method())
		ctx.SetBodyString(b.String())
	case "/block":
		h.started <- struct{}{}
		select {
		case <-h.release:
		case <-time.After(10 * time.Second):
		}
		ctx.SetBodyString("released")
	default:
		ctx.SetBodyString("hello")
	}
}

type closeCounter struct {
	io.Reader
	h *testHandler
}

func (c *closeCounter) Close() error {
	c.h.closed.Add(1)
	select {
	case c.h.closings <- struct{}{}:
	default:
	}
	return nil
}

// pattern returns n octets of a repeating, position-dependent pattern.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// TestGoClient: Go's HTTP/2 client against the server, over cleartext
// with prior knowledge, with small windows so that flow control is
// exercised both ways.
func TestGoClient(t *testing.T) {
	h := newTestHandler()
	srv := &Server{Handler: h.serve, StreamWindow: 64 << 10, ConnWindow: 256 << 10, MaxHeaderListSize: 8 << 10}
	addr := startServer(t, srv)
	c := h2cClient(t)
	big := pattern(3 << 20)
	bigSum := sha256.Sum256(big)
	type want struct {
		status  int
		body    []byte
		header  map[string]string
		trailer map[string]string
	}
	for _, tc := range []struct {
		name     string
		method   string
		path     string
		body     func() io.Reader
		length   int64 // of body; -1: unknown
		trailer  http.Header
		header   map[string]string
		want     want
		checkLen bool // only the body's length is compared
	}{
		{name: "get", method: "GET", path: "/", want: want{status: 200, body: []byte("hello")}},
		{name: "head keeps the length", method: "HEAD", path: "/big?n=1234", want: want{status: 200, header: map[string]string{"Content-Length": "1234"}}},
		{name: "small body", method: "POST", path: "/echo", body: func() io.Reader { return strings.NewReader("ping") }, length: 4,
			want: want{status: 200, body: []byte("ping"), header: map[string]string{"X-Length": "4"}}},
		{name: "body past the windows", method: "PUT", path: "/echo", body: func() io.Reader { return bytes.NewReader(big) }, length: int64(len(big)),
			want: want{status: 200, header: map[string]string{"X-Sum": hex.EncodeToString(bigSum[:])}}, checkLen: true},
		{name: "body of unknown length", method: "POST", path: "/echo", body: func() io.Reader { return io.MultiReader(strings.NewReader("a"), strings.NewReader("bc")) }, length: -1,
			want: want{status: 200, body: []byte("abc")}},
		{name: "request trailers", method: "POST", path: "/echo", body: func() io.Reader { return strings.NewReader("xyz") }, length: -1,
			trailer: http.Header{"X-Trailer": {"t"}}, want: want{status: 200, body: []byte("xyz")}},
		{name: "response past the windows", method: "GET", path: "/big?n=3000000", want: want{status: 200, body: pattern(3000000)}},
		{name: "streamed response", method: "GET", path: "/stream?n=1000000", want: want{status: 200, body: pattern(1000000)}},
		{name: "streamed response of known length", method: "GET", path: "/sized?n=70000", want: want{status: 200, body: pattern(70000), header: map[string]string{"Content-Length": "70000"}}},
		{name: "empty streamed response", method: "GET", path: "/stream?n=0", want: want{status: 200, body: []byte{}}},
		{name: "response trailers", method: "GET", path: "/trailer", want: want{status: 200, body: []byte("body before the trailer"), trailer: map[string]string{"X-Checksum": "abc123"}}},
		{name: "204", method: "GET", path: "/status?c=204", want: want{status: 204, body: []byte{}}},
		{name: "304", method: "GET", path: "/status?c=304", want: want{status: 304, body: []byte{}}},
		{name: "418", method: "GET", path: "/status?c=418", want: want{status: 418, body: []byte{}}},
		{name: "cookies", method: "GET", path: "/cookies", header: map[string]string{"Cookie": "a=1; b=2"}, want: want{status: 200, body: []byte("a=1;b=2;")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != nil {
				body = tc.body()
			}
			req, _ := http.NewRequest(tc.method, "http://"+addr+tc.path, body)
			if body != nil {
				req.ContentLength = tc.length
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			req.Trailer = tc.trailer
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.ProtoMajor != 2 || resp.StatusCode != tc.want.status {
				t.Fatalf("%s %d, want HTTP/2 %d", resp.Proto, resp.StatusCode, tc.want.status)
			}
			if tc.checkLen && len(b) != len(big) || !tc.checkLen && tc.want.body != nil && !bytes.Equal(b, tc.want.body) {
				t.Fatalf("body of %d octets %.40q, want %d", len(b), b, len(tc.want.body))
			}
			for k, v := range tc.want.header {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			for k, v := range tc.want.trailer {
				if got := resp.Trailer.Get(k); got != v {
					t.Errorf("trailer %s: %q, want %q (trailer %v)", k, got, v, resp.Trailer)
				}
			}
			if resp.Header.Get("Date") == "" {
				t.Errorf("no Date: %v", resp.Header)
			}
		})
	}
	if n := h.closed.Load(); n != 3 {
		t.Errorf("%d body streams closed, want 3", n)
	}
}

// TestEarlyHints: a handler's EarlyHints reaches the client as a 103
// before the final answer.
func TestEarlyHints(t *testing.T) {
	h := newTestHandler()
	addr := startServer(t, &Server{Handler: h.serve})
	var hints []string
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, hdr textproto.MIMEHeader) error {
		if code == 103 {
			hints = append(hints, hdr.Values("Link")...)
		}
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "http://"+addr+"/hints", nil)
	resp, err := h2cClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "page" || len(hints) != 1 || hints[0] != "</a.css>; rel=preload; as=style" || resp.Header.Get("Link") != "" {
		t.Fatalf("%d %q, hints %q, Link %q", resp.StatusCode, b, hints, resp.Header.Get("Link"))
	}
}

// TestRequestFields: what the handler sees of a request: method, URI as
// sent, :authority as Host, fields canonical, cookies joined.
func TestRequestFields(t *testing.T) {
	h := newTestHandler()
	addr := startServer(t, &Server{Handler: h.serve})
	req, _ := http.NewRequest("GET", "http://"+addr+"/headers?a=b&c=%20d", nil)
	req.Host = "www.example.test"
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Add("Accept", "text/html")
	req.Header.Add("Accept", "*/*")
	resp, err := h2cClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"Host: www.example.test\n", "URI: /headers?a=b&c=%20d\n", "Method: GET\n",
		"X-Forwarded-For: 203.0.113.9\n", "Accept: text/html\n", "Accept: */*\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("handler saw:\n%s\nwithout %q", b, want)
		}
	}
}

// TestConcurrentStreams: many streams at once on one connection, bodies
// both ways, answered in full and in any order.
func TestConcurrentStreams(t *testing.T) {
	h := newTestHandler()
	addr := startServer(t, &Server{Handler: h.serve, StreamWindow: 32 << 10, ConnWindow: 128 << 10,
		Inline: func(ctx *fasthttp.RequestCtx) bool { return string(ctx.Path()) == "/" }})
	c := h2cClient(t)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Go(func() {
			var resp *http.Response
			var err error
			var want []byte
			switch i % 4 {
			case 0:
				want = bytes.Repeat([]byte{byte('a' + i%26)}, 1000*(i%50))
				resp, err = c.Post("http://"+addr+"/echo", "application/octet-stream", bytes.NewReader(want))
			case 1:
				want = pattern(100000 + i)
				resp, err = c.Get("http://" + addr + "/stream?n=" + strconv.Itoa(len(want)))
			case 2:
				want = pattern(50000 + i)
				resp, err = c.Get("http://" + addr + "/big?n=" + strconv.Itoa(len(want)))
			default:
				want = []byte("hello")
				resp, err = c.Get("http://" + addr + "/")
			}
			if err != nil {
				errs <- err
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || !bytes.Equal(b, want) {
				errs <- fmt.Errorf("request %d: %d, %d octets of %d, %v", i, resp.StatusCode, len(b), len(want), err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestResetMidResponse: a client that cancels a request while its body
// streams resets the stream; the server stops sending, closes the body
// stream, and the connection serves on with no stream left open.
func TestResetMidResponse(t *testing.T) {
	h := newTestHandler()
	srv := &Server{Handler: h.serve}
	addr := startServer(t, srv)
	c := h2cClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/stream?n=200000000", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-h.closings:
	case <-time.After(10 * time.Second):
		t.Fatal("the body stream of a reset stream was not closed")
	}
	resp, err = c.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hello" {
		t.Fatalf("after the reset: %q", b)
	}
	// A graceful shutdown ends the connection, which the client keeps
	// open, only once no stream is left.
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		t.Fatalf("a stream was left open: Shutdown: %v", err)
	}
}

// TestGracefulShutdown: Shutdown sends GOAWAY; the request in flight is
// answered in full, the connection then ends, and Shutdown returns.
func TestGracefulShutdown(t *testing.T) {
	h := newTestHandler()
	srv := &Server{Handler: h.serve}
	addr := startServer(t, srv)
	c := h2cClient(t)
	type result struct {
		body string
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := c.Get("http://" + addr + "/block")
		if err != nil {
			res <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		res <- result{string(b), err}
	}()
	<-h.started
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	// The GOAWAY reaches the client: its next request goes on a new
	// connection, which the stopping server refuses.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := c.Get("http://" + addr + "/")
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("requests still answered after Shutdown")
		}
	}
	close(h.release)
	if r := <-res; r.err != nil || r.body != "released" {
		t.Fatalf("in-flight request: %q %v", r.body, r.err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	a, b := net.Pipe()
	defer b.Close()
	if err := srv.ServeConn(a); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("ServeConn after Shutdown: %v", err)
	}
}

// TestInlineTakeOver: a handler run on the connection's goroutine
// (Inline) that takes longer than InlineLimit does not hold up the
// connection's other streams: reading moves to another goroutine, the
// other requests are answered, then the slow one when it is done; the
// connection ends cleanly.
func TestInlineTakeOver(t *testing.T) {
	h := newTestHandler()
	var mu sync.Mutex
	peers := map[string]bool{}
	handler := func(ctx *fasthttp.RequestCtx) {
		mu.Lock()
		peers[ctx.RemoteAddr().String()] = true
		mu.Unlock()
		h.serve(ctx)
	}
	srv := &Server{Handler: handler, Inline: func(*fasthttp.RequestCtx) bool { return true }, InlineLimit: 5 * time.Millisecond}
	addr := startServer(t, srv)
	c := h2cClient(t)
	get := func(path string) (string, error) {
		resp, err := c.Get("http://" + addr + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if b, err := get("/"); err != nil || b != "hello" { // the connection, made
		t.Fatalf("%q %v", b, err)
	}
	slow := make(chan string, 2)
	for range 2 { // twice: reading moves on again
		go func() {
			b, err := get("/block")
			if err != nil {
				b = err.Error()
			}
			slow <- b
		}()
		select {
		case <-h.started:
		case <-time.After(5 * time.Second):
			t.Fatal("a request never reached its handler: the connection's reading is held up")
		}
	}
	for i := range 20 {
		if b, err := get("/big?n=100000"); err != nil || len(b) != 100000 {
			t.Fatalf("request %d while slow handlers run inline: %d octets, %v", i, len(b), err)
		}
	}
	close(h.release)
	for range 2 {
		if b := <-slow; b != "released" {
			t.Fatalf("the slow requests: %q", b)
		}
	}
	if len(peers) != 1 {
		t.Errorf("requests came on %d connections, want 1: the connection broke", len(peers))
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}
