package edge

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// The HTTP/3 bridge. quic-go's http3 server hands over a net/http
// request; the bridge copies it into a pooled fasthttp.RequestCtx, runs the
// very handler chain of the HTTP/1.1 listener (serve: Shield, cache,
// headers, counts), and writes the fasthttp response back. HTTP/1.1
// (fasthttp) and HTTP/2 (edge/internal/h2, h2_server.go) run that chain on
// fasthttp's own types, allocation-free; the bridge costs one header copy
// each way (see BenchmarkHTTP3Bridge).

// serveH3 answers one HTTP/3 request.
func (e *Edge) serveH3(w http.ResponseWriter, r *http.Request) {
	var remote net.Addr = &net.UDPAddr{}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		remote = net.UDPAddrFromAddrPort(ap)
	}
	e.serveBridged(w, r, protoH3, e.h3Local, remote)
}

// bridged is the pooled state of one bridged request: the RequestCtx and
// the pseudo connection fasthttp sees.
type bridged struct {
	ctx  fasthttp.RequestCtx
	conn bridgeConn
	body probedBody
}

// serveBridged answers one net/http request through serve, within the
// request's body and write deadlines (BodyTimeout, WriteTimeout).
func (e *Edge) serveBridged(w http.ResponseWriter, r *http.Request, p proto, local, remote net.Addr) {
	b, _ := e.ctxPool.Get().(*bridged)
	if b == nil {
		b = new(bridged)
	}
	ctx := &b.ctx
	defer func() {
		ctx.Request.Reset()
		ctx.Response.Reset() // closes a streamed body
		b.conn = bridgeConn{}
		b.body = probedBody{}
		e.ctxPool.Put(b)
	}()
	// The same bounds as over TCP: a body that never ends, a client that
	// never reads.
	now := time.Now()
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(now.Add(e.cfg.BodyTimeout))
	rc.SetWriteDeadline(now.Add(e.cfg.WriteTimeout))
	b.conn = bridgeConn{local: local, remote: remote, w: w}
	ctx.Init2(&b.conn, fastLogger{e.log}, false)
	toFastRequest(&ctx.Request, r, &b.body)
	e.serve(ctx, p)
	writeBridgedResponse(w, r, &ctx.Response)
}

// toFastRequest copies a net/http request into req; the body is streamed.
// A body of unknown length is read up to its first byte first (through
// pb), so a request without content is forwarded without one: HTTP/3
// gives no sign of it before the stream's end (quic-go sets no
// http.NoBody), and a GET would otherwise go to the
// origin as a chunked message, cut off invalid if the visitor goes away.
// Browsers and quic-go's client end the stream with the request's header,
// so the read returns at once; a body that is slow to start waits within
// the request's body deadline, as over HTTP/1.1.
func toFastRequest(req *fasthttp.Request, r *http.Request, pb *probedBody) {
	req.Header.SetMethod(r.Method)
	if r.RequestURI != "" && r.RequestURI[0] == '/' {
		req.Header.SetRequestURI(r.RequestURI) // as sent (:path)
	} else {
		req.Header.SetRequestURI(r.URL.RequestURI())
	}
	req.Header.SetHost(r.Host)
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	if r.ContentLength > 0 {
		req.SetBodyStream(r.Body, int(r.ContentLength))
		return
	}
	pb.r, pb.n, pb.err = r.Body, 0, nil
	for pb.n == 0 && pb.err == nil {
		pb.n, pb.err = r.Body.Read(pb.first[:])
	}
	if pb.n == 0 && pb.err == io.EOF {
		return // no content
	}
	req.SetBodyStream(pb, -1)
}

// probedBody is a request body whose first byte was read ahead (or the
// error that read met), then the rest of it.
type probedBody struct {
	first [1]byte
	n     int // bytes of first still to be read
	err   error
	r     io.Reader
}

func (b *probedBody) Read(p []byte) (int, error) {
	if b.n > 0 {
		if len(p) == 0 {
			return 0, nil
		}
		p[0] = b.first[0]
		b.n = 0
		return 1, nil
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.r.Read(p)
}

// bridgedHeaderNames interns the response header names the edge sets, so
// copying a response allocates no name strings for them.
var bridgedHeaderNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{"Accept-Ranges", "Age", "Alt-Svc", "Cache-Control", "Content-Encoding",
		"Content-Language", "Content-Location", "Content-Range", "Content-Security-Policy", "Content-Type",
		"Cross-Origin-Opener-Policy", "Cross-Origin-Resource-Policy", "Date", "Etag", "Expires", "Last-Modified",
		"Link", "Location", "Permissions-Policy", "Referrer-Policy", "Retry-After", "Server", "Set-Cookie",
		"Strict-Transport-Security", "Vary", "Www-Authenticate", "X-Cache", "X-Content-Type-Options",
		"X-Frame-Options", "X-Request-Id"} {
		m[n] = n
	}
	return m
}()

// writeBridgedResponse copies a fasthttp response to a net/http response
// writer (HTTP/3). The header values, the Content-Length included,
// share one string and one []string backing array (two allocations for any
// number of headers). The origin's Date (cache.KeepDate) is passed on
// unchanged: the HTTP/3 server adds a Date only when there is
// none (RFC 9110 §6.6.1). A body known in full is written with one Write,
// its length declared, so the server sends it with the header and ends the
// stream with it.
func writeBridgedResponse(w http.ResponseWriter, r *http.Request, resp *fasthttp.Response) {
	h := w.Header()
	status := resp.StatusCode()
	stream := resp.IsBodyStream()
	head := r.Method == http.MethodHead
	noBody := head || resp.SkipBody || status == http.StatusNotModified || status == http.StatusNoContent
	cl := -1 // the Content-Length to declare, -1 for none
	switch {
	case status == http.StatusNotModified || status == http.StatusNoContent:
	case stream:
		cl = resp.Header.ContentLength()
	case !noBody || head:
		cl = len(resp.Body())
		if head && cl == 0 && resp.Header.ContentLength() >= 0 {
			cl = resp.Header.ContentLength()
		}
	}
	var clBuf [20]byte
	clv := clBuf[:0]
	if cl >= 0 {
		clv = strconv.AppendInt(clv, int64(cl), 10)
	}
	n, size := 0, len(clv)
	for k, v := range resp.Header.All() {
		if !skipBridgedHeader(k) {
			n++
			size += len(v)
		}
	}
	if len(clv) > 0 {
		n++
	}
	var vals []string
	var all string
	if n > 0 {
		vals = make([]string, n)
		var sb strings.Builder
		sb.Grow(size)
		for k, v := range resp.Header.All() {
			if !skipBridgedHeader(k) {
				sb.Write(v)
			}
		}
		sb.Write(clv)
		all = sb.String()
	}
	i, off := 0, 0
	for k, v := range resp.Header.All() {
		if skipBridgedHeader(k) {
			continue
		}
		name, ok := bridgedHeaderNames[string(k)]
		if !ok {
			name = http.CanonicalHeaderKey(string(k))
		}
		vals[i] = all[off : off+len(v)]
		off += len(v)
		if prev, ok := h[name]; ok {
			h[name] = append(prev, vals[i])
		} else {
			h[name] = vals[i : i+1 : i+1]
		}
		i++
	}
	if len(clv) > 0 {
		vals[i] = all[off:]
		h["Content-Length"] = vals[i : i+1 : i+1]
	}
	if _, ok := h["Date"]; !ok {
		h["Date"] = bridgeDate(time.Now())
	}
	w.WriteHeader(status)
	if noBody {
		return
	}
	if stream {
		io.Copy(w, resp.BodyStream())
		return
	}
	w.Write(resp.Body())
}

// bridgeDateCache is the Date header value of the current second.
type bridgeDateCache struct {
	unix int64
	v    []string // len 1, cap 1: an Add to it copies
}

var bridgeDateNow atomic.Pointer[bridgeDateCache]

// bridgeDate returns the Date header value for now, formatted once a
// second and shared (read-only) by the responses of that second.
func bridgeDate(now time.Time) []string {
	sec := now.Unix()
	if c := bridgeDateNow.Load(); c != nil && c.unix == sec {
		return c.v
	}
	c := &bridgeDateCache{unix: sec, v: []string{string(fasthttp.AppendHTTPDate(nil, now))}}
	bridgeDateNow.Store(c)
	return c.v
}

// skipBridgedHeader reports the HTTP/1.1 connection headers a bridged
// response leaves out (the HTTP/3 server sets the length).
func skipBridgedHeader(k []byte) bool {
	switch string(k) {
	case fasthttp.HeaderContentLength, fasthttp.HeaderConnection, fasthttp.HeaderTransferEncoding, "Keep-Alive":
		return true
	}
	return false
}

// bridgeConn gives fasthttp the addresses of a bridged request; nothing is
// read or written through it.
type bridgeConn struct {
	local, remote net.Addr
	w             http.ResponseWriter // for 103 Early Hints
}

func (c *bridgeConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (c *bridgeConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *bridgeConn) Close() error                     { return nil }
func (c *bridgeConn) LocalAddr() net.Addr              { return c.local }
func (c *bridgeConn) RemoteAddr() net.Addr             { return c.remote }
func (c *bridgeConn) SetDeadline(time.Time) error      { return nil }
func (c *bridgeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *bridgeConn) SetWriteDeadline(time.Time) error { return nil }

var _ net.Conn = (*bridgeConn)(nil)
