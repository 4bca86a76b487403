package edge

import (
	"github.com/valyala/fasthttp"
)

// proto is the listener a request came in on.
type proto uint8

const (
	protoHTTP  proto = iota // plain HTTP: redirects only
	protoHTTPS              // HTTP/1.1 over TLS
	protoH3                 // HTTP/3 over QUIC
	protoH2                 // HTTP/2 over TLS (bridged)
)

// Header names and values the edge sets, as bytes so that setting them does
// not allocate.
var (
	hdrHSTS           = []byte("Strict-Transport-Security")
	hdrNoSniff        = []byte("X-Content-Type-Options")
	hdrFrameOptions   = []byte("X-Frame-Options")
	hdrReferrer       = []byte("Referrer-Policy")
	hdrAltSvc         = []byte("Alt-Svc")
	hdrCacheControl   = []byte("Cache-Control")
	hdrVary           = []byte("Vary")
	hdrAcceptRanges   = []byte("Accept-Ranges")
	hdrContentRange   = []byte("Content-Range")
	hdrETag           = []byte("Etag") // fasthttp's canonical form, so Peek finds it
	hdrLastModified   = []byte("Last-Modified")
	hdrRetryAfter     = []byte("Retry-After")
	hdrAllow          = []byte("Allow")
	hdrXCache         = []byte("X-Cache")
	hdrAcceptEncoding = []byte("Accept-Encoding")

	valHSTS          = []byte("max-age=31536000")
	valNoSniff       = []byte("nosniff")
	valFrameOptions  = []byte("SAMEORIGIN")
	valReferrer      = []byte("strict-origin-when-cross-origin")
	valBytes         = []byte("bytes")
	valNoStore       = []byte("no-store")
	valHit           = []byte("HIT")
	valMiss          = []byte("MISS")
	valGetHead       = []byte("GET, HEAD")
	valTextPlain     = []byte("text/plain; charset=utf-8")
	valTextHTML      = []byte("text/html; charset=utf-8")
	valAcceptEncoded = []byte("Accept-Encoding")
)

// securityHeaders sets the headers every answer carries: HSTS on HTTPS and
// HTTP/3, nosniff, the frame and referrer policies, and Alt-Svc advertising
// HTTP/3 on HTTPS over TCP (HTTP/1.1 and HTTP/2). With keep, a value the origin set is kept. It
// does not allocate.
func (e *Edge) securityHeaders(h *fasthttp.ResponseHeader, p proto, keep bool) {
	set := func(k, v []byte) {
		if keep && h.PeekBytes(k) != nil {
			return
		}
		h.SetCanonical(k, v)
	}
	if p != protoHTTP {
		set(hdrHSTS, valHSTS)
	}
	set(hdrNoSniff, valNoSniff)
	set(hdrFrameOptions, valFrameOptions)
	set(hdrReferrer, valReferrer)
	if (p == protoHTTPS || p == protoH2) && len(e.altSvc) > 0 {
		h.SetCanonical(hdrAltSvc, e.altSvc)
	}
}
