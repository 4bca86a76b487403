package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// LogFunc receives a function's log lines: stream "stderr" for what the
// function wrote, "platform" for the front's notes (failed calls).
type LogFunc func(stream, line string)

// Handler returns the HTTP face of deployment id: each request becomes one
// Call, and the outcome an HTTP answer. Errors map to statuses as the
// README's table says: ErrTimeout 504, ErrRequestTooLarge 413,
// ErrProjectBusy 429, ErrBusy and ErrNotLoaded 503 (a front exists only
// while its deployment is loaded or loading), anything else 502. The
// visitor's address and scheme are taken from X-Real-IP and
// X-Forwarded-Proto only when the peer is on loopback (the edge on the
// same machine); otherwise the peer's own.
func (h *Host) Handler(id string, logf LogFunc) http.Handler {
	if logf == nil {
		logf = func(string, string) {}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := h.cfg.MaxRequestBytes
		if r.ContentLength > limit {
			tooLarge(w, r, limit)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil {
			http.Error(w, "reading the request body failed", http.StatusBadRequest)
			return
		}
		if int64(len(body)) > limit {
			tooLarge(w, r, limit)
			return
		}
		req := &Request{Method: r.Method, Host: r.Host, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: body, RemoteAddr: r.RemoteAddr, HTTPS: r.TLS != nil}
		if peer, err := netip.ParseAddrPort(r.RemoteAddr); err == nil && peer.Addr().IsLoopback() {
			if ip, err := netip.ParseAddr(strings.TrimSpace(r.Header.Get("X-Real-IP"))); err == nil {
				req.RemoteAddr = ip.String()
			}
			req.HTTPS = req.HTTPS || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
		}
		res, err := h.Call(r.Context(), id, req)
		for _, line := range bytes.Split(bytes.TrimRight(res.Log, "\n"), []byte("\n")) {
			if len(line) > 0 {
				logf("stderr", string(line))
			}
		}
		if err != nil {
			status := StatusOf(err)
			logf("platform", fmt.Sprintf("%s %s: %d: %v", r.Method, req.Path, status, err))
			if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
				w.Header().Set("Retry-After", "1")
			}
			http.Error(w, http.StatusText(status)+": "+reason(err), status)
			return
		}
		hdr := w.Header()
		for k, vs := range res.Response.Header {
			hdr[k] = vs
		}
		w.WriteHeader(res.Response.Status)
		_, _ = w.Write(res.Response.Body)
	})
}

// Lingering close of a refused body (nginx's lingering_close, with its
// lingering_timeout and lingering_time): the front answers 413 at once,
// then reads and drops what the client still sends (until the body's end,
// a pause of lingerQuiet, or lingerTotal) before the connection closes. A
// client that writes its whole request before reading (the edge, relaying
// a visitor's upload) would otherwise meet a reset while writing and never
// see the answer.
const (
	lingerQuiet = 5 * time.Second
	lingerTotal = 30 * time.Second
)

// tooLarge answers 413 for a body over limit, then drains the body
// (lingering close) unless the client waits for 100 Continue, which it
// does not get: it then sends no body.
func tooLarge(w http.ResponseWriter, r *http.Request, limit int64) {
	rc := http.NewResponseController(w)
	drain := !strings.EqualFold(r.Header.Get("Expect"), "100-continue") && rc.EnableFullDuplex() == nil
	w.Header().Set("Connection", "close")
	http.Error(w, fmt.Sprintf("%s: the request body is larger than the function limit of %s",
		http.StatusText(http.StatusRequestEntityTooLarge), sizeText(limit)), http.StatusRequestEntityTooLarge)
	if !drain || rc.Flush() != nil {
		return
	}
	end := time.Now().Add(lingerTotal)
	buf := make([]byte, 32<<10)
	for {
		d := time.Now().Add(lingerQuiet)
		if d.After(end) {
			d = end
		}
		if rc.SetReadDeadline(d) != nil {
			return
		}
		if _, err := r.Body.Read(buf); err != nil {
			return
		}
	}
}

// sizeText writes n bytes the way limits are documented: "6 MiB",
// "64 KiB", else in bytes.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// StatusOf is the HTTP status the edge answers for a Call error.
func StatusOf(err error) int {
	switch {
	case errors.Is(err, ErrTimeout):
		return http.StatusGatewayTimeout
	case errors.Is(err, ErrRequestTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrProjectBusy):
		return http.StatusTooManyRequests
	case errors.Is(err, ErrBusy), errors.Is(err, ErrNotLoaded), errors.Is(err, ErrClosed):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}

// reason is the visitor-facing cause of a failed call: a fixed text (with
// the limit met), never the function's output.
func reason(err error) string {
	if se, ok := errSlot(err); ok {
		if se.Project {
			return fmt.Sprintf("this project's functions already run %d calls at once, its share of the %d this service runs at once; try again shortly", se.Limit, se.Max)
		}
		return fmt.Sprintf("all %d function calls this service runs at once are in use; try again shortly", se.Max)
	}
	switch {
	case errors.Is(err, ErrTimeout):
		return "the function ran past its time limit"
	case errors.Is(err, ErrRequestTooLarge):
		return "the request body is too large"
	case errors.Is(err, ErrBusy):
		return "the function is busy; try again"
	case errors.Is(err, ErrNotLoaded), errors.Is(err, ErrClosed):
		return "the function is not running"
	case errors.Is(err, ErrBadResponse):
		return "the function's answer is malformed"
	case errors.Is(err, ErrResponseTooLarge):
		return "the function's answer is too large"
	}
	return "the function failed"
}

// Front is a loopback HTTP listener serving one deployment's Handler: the
// origin address the edge forwards the function's requests to.
type Front struct {
	ln  net.Listener
	srv *http.Server
}

// ListenFront serves deployment id's Handler on a new 127.0.0.1 port.
func (h *Host) ListenFront(id string, logf LogFunc) (*Front, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("wasm: front of %s: %w", id, err)
	}
	f := &Front{ln: ln, srv: &http.Server{Handler: h.Handler(id, logf), ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

// Addr is the front's host:port.
func (f *Front) Addr() string { return f.ln.Addr().String() }

// Close stops accepting and waits (bounded by ctx) for calls in flight.
func (f *Front) Close(ctx context.Context) error {
	if err := f.srv.Shutdown(ctx); err != nil {
		_ = f.srv.Close()
		return fmt.Errorf("wasm: front: %w", err)
	}
	return nil
}
