package edge

import (
	"bytes"
	"context"
	"net/http"
	"strconv"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// serveHTTP is the handler of the plain-HTTP listener: ACME http-01
// challenges are answered, a known host is redirected to HTTPS (308, so a
// form's method and body survive; 301 for GET and HEAD), and an unknown
// host gets a plain 404.
func (e *Edge) serveHTTP(ctx *fasthttp.RequestCtx) {
	if e.acme != nil && bytes.HasPrefix(ctx.Path(), []byte(acmeChallengePrefix)) {
		// autocert's handler derives a context from the request, here
		// fasthttp's RequestCtx, which races with fasthttp's Shutdown: the
		// challenge is answered under a context of its own instead.
		h := e.acme.HTTPHandler(nil)
		fasthttpadaptor.NewFastHTTPHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r.WithContext(context.WithoutCancel(r.Context())))
		}))(ctx)
		return
	}
	var buf [256]byte
	host, ok := normalizeHost(buf[:0], ctx.Request.Header.Host())
	if !ok || e.table.Load().lookupHost(host) == nil {
		e.plain(ctx, protoHTTP, fasthttp.StatusNotFound, bodyUnknownHost)
		return
	}
	loc := make([]byte, 0, 16+len(host)+len(ctx.Request.Header.RequestURI()))
	loc = append(loc, "https://"...)
	loc = append(loc, host...)
	if e.httpsPort != 443 {
		loc = append(loc, ':')
		loc = strconv.AppendInt(loc, int64(e.httpsPort), 10)
	}
	loc = append(loc, requestPath(ctx.Request.Header.RequestURI())...)
	status := fasthttp.StatusPermanentRedirect
	if ctx.IsGet() || ctx.IsHead() {
		status = fasthttp.StatusMovedPermanently
	}
	rh := &ctx.Response.Header
	rh.SetStatusCode(status)
	rh.SetBytesV(fasthttp.HeaderLocation, loc)
	rh.SetCanonical(hdrCacheControl, valNoStore)
	e.securityHeaders(rh, protoHTTP, false)
}
