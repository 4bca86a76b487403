package edge

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// The HTTP/3 and HTTP/2 bridge. quic-go's http3 server and net/http's
// HTTP/2 server hand over a net/http request; the bridge copies it into a
// pooled fasthttp.RequestCtx, runs the very handler chain of the HTTP/1.1
// listener (serve: Shield, cache, headers, counts), and writes the
// fasthttp response back. The HTTP/1.1 path stays pure fasthttp and
// allocation-free; the bridge costs one header copy each way (see
// BenchmarkHTTP3Bridge).

// serveH3 answers one HTTP/3 request.
func (e *Edge) serveH3(w http.ResponseWriter, r *http.Request) {
	var remote net.Addr = &net.UDPAddr{}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		remote = net.UDPAddrFromAddrPort(ap)
	}
	e.serveBridged(w, r, protoH3, e.h3Local, remote)
}

// serveH2 answers one HTTP/2 request (over TLS, negotiated by ALPN).
func (e *Edge) serveH2(w http.ResponseWriter, r *http.Request) {
	var remote net.Addr = &net.TCPAddr{}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		remote = net.TCPAddrFromAddrPort(ap)
	}
	var local net.Addr
	if e.httpsLn != nil {
		local = e.httpsLn.Addr()
	}
	e.serveBridged(w, r, protoH2, local, remote)
}

// serveBridged answers one net/http request through serve.
func (e *Edge) serveBridged(w http.ResponseWriter, r *http.Request, p proto, local, remote net.Addr) {
	ctx, _ := e.ctxPool.Get().(*fasthttp.RequestCtx)
	if ctx == nil {
		ctx = new(fasthttp.RequestCtx)
	}
	defer func() {
		ctx.Request.Reset()
		ctx.Response.Reset() // closes a streamed body
		e.ctxPool.Put(ctx)
	}()
	// The same bounds as over TCP: a body that never ends, a client that
	// never reads.
	now := time.Now()
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(now.Add(e.cfg.BodyTimeout))
	rc.SetWriteDeadline(now.Add(e.cfg.WriteTimeout))
	ctx.Init2(&bridgeConn{local: local, remote: remote, w: w}, fastLogger{e.log}, false)
	toFastRequest(&ctx.Request, r)
	e.serve(ctx, p)
	writeBridgedResponse(w, r, &ctx.Response)
}

// toFastRequest copies a net/http request into req; the body is streamed.
func toFastRequest(req *fasthttp.Request, r *http.Request) {
	req.Header.SetMethod(r.Method)
	req.Header.SetRequestURI(r.URL.RequestURI())
	req.Header.SetHost(r.Host)
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		req.SetBodyStream(r.Body, int(r.ContentLength))
	}
}

// writeBridgedResponse copies a fasthttp response to a net/http response
// writer (HTTP/3, HTTP/2).
func writeBridgedResponse(w http.ResponseWriter, r *http.Request, resp *fasthttp.Response) {
	h := w.Header()
	for k, v := range resp.Header.All() {
		switch string(k) {
		case fasthttp.HeaderContentLength, fasthttp.HeaderConnection, fasthttp.HeaderTransferEncoding, "Keep-Alive":
			continue
		}
		h.Add(string(k), string(v))
	}
	if h.Get("Date") == "" {
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	status := resp.StatusCode()
	stream := resp.IsBodyStream()
	noBody := r.Method == http.MethodHead || resp.SkipBody || status == http.StatusNotModified || status == http.StatusNoContent
	if !stream {
		if cl := len(resp.Body()); !noBody || r.Method == http.MethodHead {
			if r.Method == http.MethodHead && resp.Header.ContentLength() >= 0 && cl == 0 {
				cl = resp.Header.ContentLength()
			}
			if status != http.StatusNotModified && status != http.StatusNoContent {
				h.Set("Content-Length", strconv.Itoa(cl))
			}
		}
	} else if cl := resp.Header.ContentLength(); cl >= 0 {
		h.Set("Content-Length", strconv.Itoa(cl))
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

// newH2Server returns the HTTP/2 server of the HTTPS listener: net/http's
// (the maintained implementation), for connections that negotiated "h2",
// with the edge's limits; per-request body and write deadlines are set by
// the bridge as for HTTP/3.
func (e *Edge) newH2Server() *http.Server {
	var protos http.Protocols
	protos.SetHTTP2(true)
	return &http.Server{
		Handler:           http.HandlerFunc(e.serveH2),
		TLSConfig:         e.tlsConfig, // names h2, so Serve sets HTTP/2 up
		Protocols:         &protos,
		ReadHeaderTimeout: e.cfg.ReadTimeout,
		IdleTimeout:       e.cfg.IdleTimeout,
		MaxHeaderBytes:    e.cfg.MaxHeaderBytes,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: 250},
		ErrorLog:          slog.NewLogLogger(e.log.Handler(), slog.LevelDebug),
	}
}
