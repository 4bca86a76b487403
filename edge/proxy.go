package edge

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/cache"
	"github.com/svcplatform/platform/edge/internal/forward"
)

// Hop-by-hop header fields (RFC 9110 §7.6.1), never forwarded.
var hopByHop = [...][]byte{
	[]byte("Connection"), []byte("Keep-Alive"), []byte("Proxy-Connection"), []byte("Proxy-Authenticate"),
	[]byte("Proxy-Authorization"), []byte("TE"), []byte("Trailer"), []byte("Transfer-Encoding"), []byte("Upgrade"),
}

var (
	hdrXForwardedProto = []byte("X-Forwarded-Proto")
	hdrXForwardedHost  = []byte("X-Forwarded-Host")
	hdrXRealIP         = []byte("X-Real-Ip") // fasthttp's canonical form
	hdrXForwardedFor   = []byte(headerXFF)
	hdrConnection      = []byte("Connection")
	hdrExpect          = []byte("Expect")
	valHTTPS           = []byte("https")
	valRevalidated     = []byte("REVALIDATED")
	valStale           = []byte("STALE")
)

// proxy answers a request for a server app or function after Shield: from
// the RFC 9111 shared cache when the origin allowed it (fresh, or stale
// within stale-while-revalidate with one background refresh, or stale
// instead of an origin failure where RFC 5861 §4 and RFC 9111 §4.2.4 allow
// it), otherwise forwarded to the origin with the pooled client, the
// request body streamed, the response streamed back (and captured for the
// cache when it has no Content-Length) unless it is stored whole first. It
// returns the time the origin took to answer (0 when it was not asked).
func (e *Edge) proxy(ctx *fasthttp.RequestCtx, st *site, client netip.Addr, p proto) (upstream time.Duration) {
	dep := st.dep
	req := &ctx.Request
	if cl := req.Header.ContentLength(); cl > 0 && int64(cl) > e.cfg.MaxBodyBytes {
		e.plain(ctx, p, fasthttp.StatusRequestEntityTooLarge, bodyTooLarge)
		closeUnread(ctx)
		return
	}
	if p == protoHTTPS && isUpgrade(&req.Header) {
		t0 := time.Now()
		e.upgrade(ctx, st, client, p)
		return time.Since(t0)
	}
	// A key the origin answered as never storable a moment ago passes
	// (fwd_pass.go): no lookup, no storage decision.
	var pk uint64
	pass := false
	if pt := dep.origin.pass; pt != nil && passable(req) {
		pk = pt.hash(dep.target, &req.Header)
		pass = pt.passes(pk, e.now())
		if pass {
			e.metrics.passes.Inc()
		}
	}
	res := cache.Result{State: cache.Miss}
	if !pass {
		res = e.cache.Lookup(dep.target, req)
	}
	switch res.State {
	case cache.Hit:
		e.respondShared(ctx, st, res.Entry, valHit, p)
		return
	case cache.StaleWhileRevalidate: // RFC 5861 §3
		e.respondShared(ctx, st, res.Entry, valStale, p)
		if res.Refresh {
			e.refresh(ctx, st, res.Entry, client)
		}
		return
	case cache.GatewayTimeout:
		e.originError(ctx, st, p, fasthttp.StatusGatewayTimeout)
		return
	}
	out := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(out)
	e.outbound(out, ctx, dep.origin, client)
	if res.State == cache.Revalidate {
		res.Entry.Conditional(&out.Header)
	}
	if req.Header.IsGet() {
		if links := e.hints.get(dep.target, ctx.Path()); links != nil {
			e.sendEarlyHints(ctx, p, links)
		}
	}
	resp := fasthttp.AcquireResponse()
	sent := e.now()
	t0 := time.Now()
	err := e.doOriginAt(dep.origin, out, resp, t0)
	upstream = time.Since(t0)
	received := e.now()
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		e.failed(ctx, st, p, res, err)
		return
	}
	if res.State == cache.Revalidate && resp.StatusCode() == fasthttp.StatusNotModified {
		if ent, ok := e.cache.Revalidated(req, res.Entry, resp, sent, received); ok {
			fasthttp.ReleaseResponse(resp)
			e.respondShared(ctx, st, ent, valRevalidated, p)
			return
		}
		// The 304 names another representation: ask again without
		// conditions.
		e.outbound(out, ctx, dep.origin, client)
		sent = e.now()
		err := e.doOrigin(dep.origin, out, resp)
		upstream = time.Since(t0)
		if err != nil {
			fasthttp.ReleaseResponse(resp)
			e.failed(ctx, st, p, res, err)
			return
		}
		received = e.now()
	}
	status := resp.StatusCode()
	e.metrics.originStatus(st.kind, status)
	if res.Entry != nil || res.Stale != nil {
		// RFC 5861 §4: a stored response may stand in for a 5xx.
		if ent, ok := e.cache.StaleOnError(req, res, status); ok {
			fasthttp.ReleaseResponse(resp)
			e.metrics.staleServed.Inc()
			e.respondShared(ctx, st, ent, valStale, p)
			return
		}
	}
	buffered := false
	var capture *cache.Capture
	if req.Header.IsGet() {
		e.hints.learn(dep.target, ctx.Path(), &resp.Header)
		if pass {
			// Passing: nothing is stored for this key (fwd_pass.go).
		} else if d := cache.Decide(req, resp, sent, received); d.Storable() {
			cl := resp.Header.ContentLength()
			if !resp.IsBodyStream() || cl >= 0 && int64(cl) <= e.cache.MaxEntryBytes() {
				resp.Body() // read the whole body to store it
				buffered = true
				e.cache.Store(dep.target, req, resp, sent, received)
			} else {
				// Chunked (or announced past the bound, which Capture
				// refuses): stored while it streams (RFC 9111 §3).
				capture, _ = e.cache.Capture(dep.target, req, resp, sent, received)
			}
		} else if pk != 0 && res.Entry == nil && res.Stale == nil && passReason(d.Reason) {
			dep.origin.pass.mark(pk, received)
		}
	} else {
		e.cache.Store(dep.target, req, resp, sent, received) // invalidates on unsafe methods (RFC 9111 §4.4)
	}
	rh := &ctx.Response.Header
	resp.Header.CopyTo(rh)
	stripHopByHop(rh)
	scopeCookies(rh, st.host)    // setcookie.go: cookies stay on this site
	cache.KeepDate(rh, received) // the origin's Date, unchanged (RFC 9110 §6.6.1)
	cache.StripTargeted(rh)      // CDN-Cache-Control is for this cache only (RFC 9213)
	rh.SetCanonical(hdrXCache, valMiss)
	e.securityHeaders(rh, p, true)
	if req.Header.IsHead() || buffered || !resp.IsBodyStream() {
		cl := resp.Header.ContentLength()
		if !req.Header.IsHead() {
			ctx.Response.SetBody(resp.Body())
		} else {
			ctx.Response.SkipBody = true
			if cl >= 0 {
				rh.SetContentLength(cl)
			}
		}
		if capture != nil {
			capture.Abort()
		}
		fasthttp.ReleaseResponse(resp)
		return
	}
	ob := originBodyPool.Get().(*originBody)
	ob.resp, ob.r, ob.cp = resp, resp.BodyStream(), capture
	if resp.Header.ContentLength() == -1 {
		ob.chunked = forward.ResponseConn(resp)
	}
	ctx.Response.SetBodyStream(ob, resp.Header.ContentLength())
	return upstream
}

// failed answers a forward that got no response: the stored response
// when it may stand in (RFC 5861 §4, RFC 9111 §4.2.4: the origin is
// unreachable or timed out), otherwise the error.
func (e *Edge) failed(ctx *fasthttp.RequestCtx, st *site, p proto, res cache.Result, err error) {
	if !errors.Is(err, forward.ErrBodyLimit) && (res.Entry != nil || res.Stale != nil) {
		if ent, ok := e.cache.StaleOnError(&ctx.Request, res, 0); ok {
			e.metrics.staleServed.Inc()
			e.log.Warn("edge: origin failed; served a stored response", "site", st.host, "kind", st.kind.String(),
				"origin", st.dep.origin.base, "err", err)
			e.respondShared(ctx, st, ent, valStale, p)
			return
		}
	}
	e.forwardError(ctx, st, p, err)
}

// doOrigin sends req to o within OriginTimeout through its forwarding
// transport (edge/internal/forward). A request that met pooled connections the
// origin had closed (forward.ErrStaleConn: nothing of it was sent, its streamed
// body not read) goes again on another one whatever its method, so a POST
// after an idle pause reaches the origin once instead of failing with 502;
// after another connection error, retryOrigin decides (never a streamed
// body, never a POST that may have reached the origin).
func (e *Edge) doOrigin(o *origin, req *fasthttp.Request, resp *fasthttp.Response) error {
	return e.doOriginAt(o, req, resp, time.Now())
}

// doOriginAt is doOrigin for a request whose wait started at start (the
// caller's own clock reading, so the forwarding path reads the clock once
// less).
func (e *Edge) doOriginAt(o *origin, req *fasthttp.Request, resp *fasthttp.Response, start time.Time) error {
	deadline := start.Add(e.cfg.OriginTimeout)
	stream := req.IsBodyStream()
	stale, attempts := 0, 1
	for {
		retry, err := o.fwd.RoundTrip(req, resp, deadline)
		if err == nil || !retry {
			return err
		}
		if errors.Is(err, forward.ErrStaleConn) {
			if stale >= forward.MaxStaleRetries {
				return err
			}
			stale++
			e.metrics.staleRetries.Inc()
			continue
		}
		if stream || attempts >= forward.MaxAttempts {
			return err
		}
		if _, again := forward.RetryIf(req, attempts, err); !again {
			return err
		}
		attempts++
	}
}

// outbound builds the request sent to the origin: the visitor's method,
// path and query as received, its header without hop-by-hop fields, the
// original Host, X-Forwarded-For/-Proto/-Host, and the body streamed with
// a bound.
func (e *Edge) outbound(out *fasthttp.Request, ctx *fasthttp.RequestCtx, o *origin, client netip.Addr) {
	out.Reset()
	in := &ctx.Request
	copyRequestHeader(&out.Header, &in.Header) // fwd_headers.go
	// The target goes out as received: set on the header only, so the URI
	// is never parsed (nor re-serialised) on the way; the pool knows where
	// the origin is.
	out.SetRequestURIBytes(requestPath(in.Header.RequestURI()))
	if host := in.Header.Host(); len(host) > 0 {
		out.Header.SetHostBytes(host)
	} else {
		out.Header.SetHostBytes(o.host)
	}
	out.UseHostHeader = true

	peer := peerAddr(ctx)
	// X-Forwarded-For: a trusted proxy's list with the peer appended, else
	// the peer alone. Built on the stack (fasthttp copies the value), so a
	// usual list costs no allocation.
	var buf [256]byte
	xff := buf[:0]
	if e.trusted.trusted(peer) {
		if prior := in.Header.Peek(headerXFF); len(prior) > 0 {
			xff = append(append(xff, prior...), ", "...)
		}
	}
	xff = peer.AppendTo(xff)
	// The names are canonical: SetCanonical skips normalising them.
	out.Header.SetCanonical(hdrXForwardedFor, xff)
	out.Header.SetCanonical(hdrXRealIP, client.AppendTo(buf[:0]))
	out.Header.SetCanonical(hdrXForwardedProto, valHTTPS)
	out.Header.SetCanonical(hdrXForwardedHost, in.Header.Host())

	cl := in.Header.ContentLength()
	if s := ctx.RequestBodyStream(); s != nil && cl != 0 {
		out.SetBodyStream(&limitReader{r: s, n: e.cfg.MaxBodyBytes}, cl)
	} else if body := in.Body(); len(body) > 0 {
		out.SetBodyRaw(body)
	}
}

// requestPath returns the path and query of a request target, without the
// scheme and authority of an absolute-form target.
func requestPath(uri []byte) []byte {
	if len(uri) > 0 && uri[0] == '/' {
		return uri
	}
	for _, scheme := range [...]string{"http://", "https://"} {
		if len(uri) >= len(scheme) && equalFoldASCII(uri[:len(scheme)], scheme) {
			rest := uri[len(scheme):]
			for i, c := range rest {
				if c == '/' || c == '?' {
					if c == '?' {
						return append([]byte{'/'}, rest[i:]...)
					}
					return rest[i:]
				}
			}
			return []byte{'/'}
		}
	}
	return uri
}

// splitTokens splits a comma-separated header value into trimmed tokens.
func splitTokens(v []byte) [][]byte {
	var out [][]byte
	for len(v) > 0 {
		var t []byte
		i := 0
		for i < len(v) && v[i] != ',' {
			i++
		}
		t, v = trimSpace(v[:i]), v[min(i+1, len(v)):]
		if len(t) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// respondShared answers from a shared-cache entry: 304 when the visitor's
// own validators match it, 206 or 416 for a Range, else the whole stored
// response, with the origin's Date and the entry's Age. A stored response
// never sets a cookie, but one revalidated by a 304 carries the 304's
// fields, which may: they are scoped to st like any origin's. It does not
// allocate.
func (e *Edge) respondShared(ctx *fasthttp.RequestCtx, st *site, ent *cache.SharedEntry, xcache []byte, p proto) {
	ent.RespondTo(&ctx.Response, &ctx.Request.Header, e.now())
	rh := &ctx.Response.Header
	scopeCookies(rh, st.host)
	rh.SetCanonical(hdrXCache, xcache)
	e.securityHeaders(rh, p, true)
}

// forwardError answers a failed forward: 413 for a body past the limit,
// 504 for an origin that did not answer in time, 503 when every connection
// to it is busy, 502 otherwise.
func (e *Edge) forwardError(ctx *fasthttp.RequestCtx, st *site, p proto, err error) {
	status := fasthttp.StatusBadGateway
	var ne net.Error
	switch {
	case errors.Is(err, forward.ErrBodyLimit):
		e.plain(ctx, p, fasthttp.StatusRequestEntityTooLarge, bodyTooLarge)
		closeUnread(ctx)
		return
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout),
		errors.As(err, &ne) && ne.Timeout():
		status = fasthttp.StatusGatewayTimeout
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		status = fasthttp.StatusServiceUnavailable
	}
	e.metrics.originError(st.kind, status)
	e.log.Warn("edge: origin failed", "site", st.host, "kind", st.kind.String(), "origin", st.dep.origin.base,
		"status", status, "err", err)
	e.originError(ctx, st, p, status)
}

// originError answers a clear error page for an origin failure.
func (e *Edge) originError(ctx *fasthttp.RequestCtx, st *site, p proto, status int) {
	rh := &ctx.Response.Header
	rh.SetStatusCode(status)
	rh.SetContentTypeBytes(valTextHTML)
	rh.SetCanonical(hdrCacheControl, valNoStore)
	e.securityHeaders(rh, p, false)
	ctx.Response.SetBodyString(errorPage(status, st.kind))
}

// originBody streams an origin's response body to the visitor and returns
// the response (and its connection) to the pool when done. With cp, the
// body is copied into the shared cache as it passes and stored at a clean
// end (EOF); an error, or a close before the end, drops the copy.
//
// fasthttp's streamed chunked reader reports a body cut by the origin
// between two chunks (the connection closed before the last chunk) as
// io.EOF, like a complete one. For a chunked body, chunked is the origin
// connection: when it met its end or an error, the body was cut, and
// originBody reports io.ErrUnexpectedEOF instead, so the visitor's
// response is cut too (no last chunk is written) and nothing is stored.
type originBody struct {
	resp    *fasthttp.Response
	r       io.Reader
	cp      *cache.Capture
	chunked *forward.Conn
}

func (b *originBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF && b.chunked != nil && b.chunked.Ended() {
		err = io.ErrUnexpectedEOF
	}
	if b.cp != nil {
		if n > 0 {
			b.cp.Write(p[:n])
		}
		switch {
		case err == io.EOF:
			b.cp.Finish()
			b.cp = nil
		case err != nil:
			b.cp.Abort()
			b.cp = nil
		}
	}
	return n, err
}

// Close releases the response and returns b to its pool; fasthttp calls
// it once, when the body is written or the connection failed.
func (b *originBody) Close() error {
	if b.cp != nil {
		b.cp.Abort() // the visitor went away or the body was cut
	}
	if b.resp != nil {
		fasthttp.ReleaseResponse(b.resp)
	}
	*b = originBody{}
	originBodyPool.Put(b)
	return nil
}

var originBodyPool = sync.Pool{New: func() any { return new(originBody) }}

// limitReader fails with forward.ErrBodyLimit past n bytes.
type limitReader struct {
	r io.Reader
	n int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, forward.ErrBodyLimit
		}
		return 0, err
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

var (
	_ io.ReadCloser = (*originBody)(nil)
	_ io.Reader     = (*limitReader)(nil)
)
