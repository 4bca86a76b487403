package cache

import (
	"time"

	"github.com/valyala/fasthttp"
)

// Reason says why a response may or may not be stored by the shared cache.
type Reason uint8

// Reasons returned in a [Decision]. Every reason but ReasonStorable means the
// response is not stored.
const (
	// ReasonStorable: the response is stored.
	ReasonStorable Reason = iota
	// ReasonMethod: only responses to GET are stored (RFC 9111 §3). HEAD
	// requests are answered from stored GET responses; HEAD responses carry
	// no content for a later GET and are not stored.
	ReasonMethod
	// ReasonStatus: the status code is not final, is 206 or 304, or is not
	// one this cache understands (§3).
	ReasonStatus
	// ReasonRequestNoStore: the request carries no-store (§5.2.1.5).
	ReasonRequestNoStore
	// ReasonNoStore: the response carries no-store (§5.2.2.5).
	ReasonNoStore
	// ReasonPrivate: the response carries private; this is a shared cache
	// (§5.2.2.7).
	ReasonPrivate
	// ReasonAuthorization: the request carries Authorization and the
	// response has none of public, s-maxage, must-revalidate (§3.5).
	ReasonAuthorization
	// ReasonSetCookie: the response sets a cookie. RFC 9111 allows storing
	// it, but like Cloudflare and Varnish this cache never stores a response
	// with Set-Cookie, so no visitor ever receives another's cookie.
	ReasonSetCookie
	// ReasonVaryStar: the response has Vary: *, which never matches a later
	// request (§4.1).
	ReasonVaryStar
	// ReasonNotExplicit: the origin did not mark the response cacheable: no
	// max-age, s-maxage or Expires (and, for a status code cacheable by
	// default, no no-cache, public or must-revalidate either). Heuristic
	// freshness (§4.2.2) is never used.
	ReasonNotExplicit
	// ReasonNoLifetime: the response is stale on arrival or must always be
	// revalidated (no-cache), and has neither ETag nor Last-Modified to
	// revalidate with, so a stored copy could never be used.
	ReasonNoLifetime
	// ReasonTooLarge: the entry would exceed Config.MaxEntryBytes.
	ReasonTooLarge
	// ReasonRejected: the cache dropped the write under contention.
	ReasonRejected
)

var reasonNames = [...]string{
	ReasonStorable:       "storable",
	ReasonMethod:         "method",
	ReasonStatus:         "status",
	ReasonRequestNoStore: "request-no-store",
	ReasonNoStore:        "no-store",
	ReasonPrivate:        "private",
	ReasonAuthorization:  "authorization",
	ReasonSetCookie:      "set-cookie",
	ReasonVaryStar:       "vary-star",
	ReasonNotExplicit:    "not-explicit",
	ReasonNoLifetime:     "no-lifetime",
	ReasonTooLarge:       "too-large",
	ReasonRejected:       "rejected",
}

// String returns a short stable name, fit for a log field.
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}

// Decision is the shared cache's verdict on an origin response.
type Decision struct {
	// Reason is ReasonStorable when the response is stored.
	Reason Reason
	// Lifetime is the freshness lifetime (RFC 9111 §4.2.1), 0 when none.
	Lifetime time.Duration
	// InitialAge is the corrected initial age (§4.2.3).
	InitialAge time.Duration
	// Revalidate reports that the stored response must be revalidated
	// before every use: no-cache (§5.2.2.4), or stale on arrival.
	Revalidate bool
	// Heuristic reports that Lifetime is a heuristic one (§4.2.2): the
	// response had Last-Modified and no explicit freshness.
	Heuristic bool
	// Targeted reports that the directives came from CDN-Cache-Control
	// (RFC 9213), Cache-Control and Expires being ignored.
	Targeted bool
	// StaleWhileRevalidate and StaleIfError are the RFC 5861 allowances
	// (0 when absent).
	StaleWhileRevalidate, StaleIfError time.Duration
	// NoStale reports that the response must never be served stale:
	// must-revalidate (§5.2.2.2), proxy-revalidate (§5.2.2.8) or no-cache.
	NoStale bool
	// SharedMaxAge reports s-maxage, which implies proxy-revalidate in a
	// shared cache (§5.2.2.10): no stale response when the origin is merely
	// unreachable; explicit RFC 5861 allowances still apply.
	SharedMaxAge bool
}

// Storable reports whether d.Reason is ReasonStorable.
func (d Decision) Storable() bool { return d.Reason == ReasonStorable }

// requestFacts is what the policy reads from a request.
type requestFacts struct {
	get           bool // method GET
	cc            CacheControl
	pragmaNoCache bool // Pragma: no-cache and no Cache-Control (RFC 9111 §5.4)
	authorization bool
}

// responseFacts is what the policy reads from a response.
type responseFacts struct {
	status       int
	cc           CacheControl
	expires      []byte // nil when absent
	date         []byte
	age          []byte
	etag         []byte
	lastModified []byte
	setCookie    bool
	varyStar     bool
	targeted     bool // cc came from CDN-Cache-Control
}

// target replaces the directives with those of a valid targeted field
// (RFC 9213 §2.2): Cache-Control and Expires are then ignored.
func (f *responseFacts) target(t *targeted) {
	if cc, ok := t.result(); ok {
		f.cc, f.expires, f.targeted = cc, nil, true
	}
}

func (f *responseFacts) validators() bool {
	return len(f.etag) > 0 || len(f.lastModified) > 0
}

var strNoCache = []byte("no-cache")

func readRequestFacts(req *fasthttp.Request) requestFacts {
	h := &req.Header
	f := requestFacts{get: h.IsGet()}
	f.cc.Reset()
	lines := h.PeekAll(fasthttp.HeaderCacheControl)
	for _, v := range lines {
		f.cc.Parse(v)
	}
	if len(lines) == 0 {
		f.pragmaNoCache = hasToken(h.Peek(fasthttp.HeaderPragma), strNoCache)
	}
	f.authorization = h.Peek(fasthttp.HeaderAuthorization) != nil
	return f
}

func readResponseFacts(resp *fasthttp.Response) responseFacts {
	h := &resp.Header
	f := responseFacts{status: h.StatusCode()}
	f.cc.Reset()
	for _, v := range h.PeekAll(fasthttp.HeaderCacheControl) {
		f.cc.Parse(v)
	}
	f.expires = present(h.Peek(fasthttp.HeaderExpires), h, fasthttp.HeaderExpires)
	var t targeted
	t.reset()
	for _, v := range h.PeekAll(HeaderCDNCacheControl) {
		t.add(v)
	}
	f.target(&t)
	f.date = h.Peek(fasthttp.HeaderDate)
	f.age = h.Peek(fasthttp.HeaderAge)
	f.etag = h.Peek(fasthttp.HeaderETag)
	f.lastModified = h.Peek(fasthttp.HeaderLastModified)
	for range h.Cookies() {
		f.setCookie = true
		break
	}
	for _, v := range h.PeekAll(fasthttp.HeaderVary) {
		if _, star := ParseVary(nil, v); star {
			f.varyStar = true
		}
	}
	return f
}

// present returns v, or an empty non-nil slice when the field is present
// with an empty value, so that nil always means absent.
func present(v []byte, h *fasthttp.ResponseHeader, name string) []byte {
	if v != nil {
		return v
	}
	if len(h.PeekAll(name)) > 0 {
		return emptyValue
	}
	return nil
}

var emptyValue = []byte{}

// defaultCacheable reports whether a status code is heuristically
// cacheable (RFC 9110 §15.1). 206 is among them but never stored here:
// ranges are answered from stored complete responses.
func defaultCacheable(status int) bool {
	switch status {
	case 200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501:
		return true
	}
	return false
}

// HeuristicCap bounds a heuristic freshness lifetime (RFC 9111 §4.2.2), so a
// page unchanged for years is still revalidated daily; RFC 9111 no longer
// asks for a warning past 24 hours, the cap keeps that bound anyway.
const HeuristicCap = 24 * time.Hour

// HeuristicFraction is the share of the time since Last-Modified used as a
// heuristic freshness lifetime, in percent (RFC 9111 §4.2.2 suggests 10%).
const HeuristicFraction = 10

// HeuristicLifetime returns a heuristic freshness lifetime (RFC 9111
// §4.2.2) for a response with a valid Last-Modified and no explicit
// freshness: HeuristicFraction percent of the time between Last-Modified
// and Date (the response time when Date is absent or invalid), at most
// HeuristicCap, 0 when Last-Modified is not in the past. ok is false when
// Last-Modified is absent or invalid. Use it only for heuristically
// cacheable status codes (RFC 9110 §15.1).
func HeuristicLifetime(lastModified, date []byte, responseTime time.Time) (time.Duration, bool) {
	lm, ok := parseHTTPDate(lastModified)
	if !ok {
		return 0, false
	}
	base, ok := parseHTTPDate(date)
	if !ok {
		base = responseTime
	}
	return min(max(base.Sub(lm), 0)/100*HeuristicFraction, HeuristicCap), true
}

// understood reports whether the cache understands a final status code well
// enough to store a response with it (RFC 9111 §3). Partial content (206)
// is not stored; 304 only updates a stored response.
func understood(status int) bool {
	return status >= 200 && status <= 599 && status != 206 && status != 304
}

// Decide applies the shared cache's storage policy (RFC 9111 §3) to an
// origin response: requestTime is when the request was sent to the origin,
// responseTime when the response arrived. It does not look at the cache and
// does not check the entry size limit.
func Decide(req *fasthttp.Request, resp *fasthttp.Response, requestTime, responseTime time.Time) Decision {
	rq := readRequestFacts(req)
	rs := readResponseFacts(resp)
	return decide(&rq, &rs, requestTime, responseTime)
}

func decide(rq *requestFacts, rs *responseFacts, requestTime, responseTime time.Time) Decision {
	cc := &rs.cc
	switch {
	case !rq.get:
		return Decision{Reason: ReasonMethod}
	case !understood(rs.status):
		return Decision{Reason: ReasonStatus}
	case rq.cc.NoStore:
		return Decision{Reason: ReasonRequestNoStore}
	case cc.NoStore:
		return Decision{Reason: ReasonNoStore}
	case cc.Private:
		return Decision{Reason: ReasonPrivate}
	case rq.authorization && !cc.Public && cc.SMaxAge == Unset && !cc.MustRevalidate:
		return Decision{Reason: ReasonAuthorization}
	case rs.setCookie:
		return Decision{Reason: ReasonSetCookie}
	case rs.varyStar:
		return Decision{Reason: ReasonVaryStar}
	}
	lifetime, explicit := FreshnessLifetime(cc, rs.expires, rs.date, responseTime)
	heuristic := false
	if !explicit && defaultCacheable(rs.status) {
		lifetime, heuristic = HeuristicLifetime(rs.lastModified, rs.date, responseTime)
	}
	marked := explicit || heuristic ||
		defaultCacheable(rs.status) && (cc.NoCache || cc.Public || cc.MustRevalidate || cc.ProxyRevalidate)
	if !marked {
		return Decision{Reason: ReasonNotExplicit}
	}
	d := Decision{
		Reason:       ReasonStorable,
		Lifetime:     lifetime,
		InitialAge:   InitialAge(rs.age, rs.date, requestTime, responseTime),
		Heuristic:    heuristic,
		Targeted:     rs.targeted,
		NoStale:      cc.MustRevalidate || cc.ProxyRevalidate || cc.NoCache,
		SharedMaxAge: cc.SMaxAge != Unset,
	}
	if cc.StaleWhileRevalidate != Unset {
		d.StaleWhileRevalidate = seconds(cc.StaleWhileRevalidate)
	}
	if cc.StaleIfError != Unset {
		d.StaleIfError = seconds(cc.StaleIfError)
	}
	d.Revalidate = cc.NoCache || d.Lifetime <= d.InitialAge
	if d.Revalidate && !rs.validators() {
		d.Reason = ReasonNoLifetime
	}
	return d
}

// hasToken reports whether the comma-separated list v holds tok, ignoring
// ASCII case.
func hasToken(v, tok []byte) bool {
	for len(v) > 0 {
		i := 0
		for i < len(v) && v[i] != ',' {
			i++
		}
		if equalFoldBytes(trimOWS(v[:i]), tok) {
			return true
		}
		if i == len(v) {
			break
		}
		v = v[i+1:]
	}
	return false
}

func trimOWS(v []byte) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}
