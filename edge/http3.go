package edge

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// The HTTP/3 bridge. quic-go's http3 server hands over a net/http request;
// the bridge copies it into a pooled fasthttp.RequestCtx, runs the very
// handler chain of the TCP listener (serve), and writes the fasthttp
// response back. The TCP path stays pure fasthttp and allocation-free; the
// bridge costs one header copy each way (see BenchmarkHTTP3Bridge).

// serveH3 answers one HTTP/3 request.
func (e *Edge) serveH3(w http.ResponseWriter, r *http.Request) {
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
	var remote net.Addr = &net.UDPAddr{}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		remote = net.UDPAddrFromAddrPort(ap)
	}
	ctx.Init2(&h3Conn{local: e.h3Local, remote: remote}, fastLogger{e.log}, false)
	toFastRequest(&ctx.Request, r)
	e.serve(ctx, protoH3)
	writeH3Response(w, r, &ctx.Response)
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

// writeH3Response copies a fasthttp response to an HTTP/3 response writer.
func writeH3Response(w http.ResponseWriter, r *http.Request, resp *fasthttp.Response) {
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

// h3Conn gives fasthttp the addresses of an HTTP/3 request; nothing is
// read or written through it.
type h3Conn struct {
	local, remote net.Addr
}

func (c *h3Conn) Read([]byte) (int, error)         { return 0, io.EOF }
func (c *h3Conn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *h3Conn) Close() error                     { return nil }
func (c *h3Conn) LocalAddr() net.Addr              { return c.local }
func (c *h3Conn) RemoteAddr() net.Addr             { return c.remote }
func (c *h3Conn) SetDeadline(time.Time) error      { return nil }
func (c *h3Conn) SetReadDeadline(time.Time) error  { return nil }
func (c *h3Conn) SetWriteDeadline(time.Time) error { return nil }

var _ net.Conn = (*h3Conn)(nil)
