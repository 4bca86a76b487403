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
	protoH2                 // HTTP/2 over TLS (edge/internal/h2)
)

// Header names and values the edge sets, as bytes so that setting them does
// not allocate.
var (
	hdrHSTS           = []byte("Strict-Transport-Security")
	hdrNoSniff        = []byte("X-Content-Type-Options")
	hdrRobots         = []byte("X-Robots-Tag")
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
	valNoIndex       = []byte("noindex")
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
// HTTP/3 on HTTPS over TCP (HTTP/1.1 and HTTP/2). With keep, a value the
// origin set is kept: the fields present are found in one pass over h. It
// does not allocate.
func (e *Edge) securityHeaders(h *fasthttp.ResponseHeader, p proto, keep bool) {
	var have uint8
	if keep {
		have = presentSecurityHeaders(h)
	}
	if p != protoHTTP && have&haveHSTS == 0 {
		h.SetCanonical(hdrHSTS, valHSTS)
	}
	if have&haveNoSniff == 0 {
		h.SetCanonical(hdrNoSniff, valNoSniff)
	}
	if have&haveFrameOptions == 0 {
		h.SetCanonical(hdrFrameOptions, valFrameOptions)
	}
	if have&haveReferrer == 0 {
		h.SetCanonical(hdrReferrer, valReferrer)
	}
	if (p == protoHTTPS || p == protoH2) && len(e.altSvc) > 0 {
		h.SetCanonical(hdrAltSvc, e.altSvc)
	}
}

// The security headers found in a response (presentSecurityHeaders).
const (
	haveHSTS uint8 = 1 << iota
	haveNoSniff
	haveFrameOptions
	haveReferrer
)

// presentSecurityHeaders returns which security headers h holds, looked
// up by a switch on each field name's length.
func presentSecurityHeaders(h *fasthttp.ResponseHeader) uint8 {
	var have uint8
	for k := range h.All() {
		switch len(k) {
		case len(hdrHSTS):
			if equalFoldASCII(k, "strict-transport-security") {
				have |= haveHSTS
			}
		case len(hdrNoSniff):
			if equalFoldASCII(k, "x-content-type-options") {
				have |= haveNoSniff
			}
		case len(hdrFrameOptions): // and Referrer-Policy, of the same length
			if equalFoldASCII(k, "x-frame-options") {
				have |= haveFrameOptions
			} else if equalFoldASCII(k, "referrer-policy") {
				have |= haveReferrer
			}
		}
	}
	return have
}
