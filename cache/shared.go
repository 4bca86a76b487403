package cache

import (
	"bytes"
	"encoding/binary"
	"net/url"
	"slices"
	"time"

	"github.com/valyala/fasthttp"
)

// State is what the edge does with a request after [Cache.Lookup].
type State uint8

// States of a [Result].
const (
	// Miss: nothing usable is stored. Forward the request, then call
	// [Cache.Store] with the response.
	Miss State = iota
	// Hit: serve Result.Entry with [SharedEntry.Respond].
	Hit
	// Revalidate: Result.Entry is stale or the request demands validation.
	// Forward the request made conditional with [SharedEntry.Conditional];
	// on 304 call [Cache.Revalidated], otherwise [Cache.Store].
	Revalidate
	// Bypass: the method is not served from the cache. Forward the request,
	// then call [Cache.Store], which invalidates on unsafe methods.
	Bypass
	// GatewayTimeout: the request has only-if-cached and nothing fresh is
	// stored: answer 504 without contacting the origin (RFC 9111 §5.2.1.7).
	GatewayTimeout
	// StaleWhileRevalidate: Result.Entry is stale but within its
	// stale-while-revalidate allowance (RFC 5861 §3): serve it now. When
	// Result.Refresh is set, this request won the refresh: revalidate in
	// the background (a copy of the request, made conditional with
	// [SharedEntry.Conditional]) and hand the answer to [Cache.Revalidated]
	// or [Cache.Store]. Other requests are served stale meanwhile.
	StaleWhileRevalidate
)

var stateNames = [...]string{Miss: "miss", Hit: "hit", Revalidate: "revalidate", Bypass: "bypass", GatewayTimeout: "gateway-timeout", StaleWhileRevalidate: "stale"}

// String returns a short stable name, fit for a log field.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// Result is the outcome of [Cache.Lookup].
type Result struct {
	// State says what to do.
	State State
	// Entry is the stored response for Hit, Revalidate and
	// StaleWhileRevalidate, nil otherwise. It is shared and immutable.
	Entry *SharedEntry
	// Stale is the stored response that was not served (Miss, Revalidate),
	// kept so that [Cache.StaleOnError] can answer with it when the origin
	// fails; nil when nothing is stored.
	Stale *SharedEntry
	// Refresh is set with StaleWhileRevalidate for the one request that
	// should revalidate the entry in the background.
	Refresh bool
}

// varyIndex is stored under a primary key whose responses vary: it names
// the selecting header fields, and its epoch is part of every variant's key
// so that variants stored before an invalidation are never found again.
type varyIndex struct {
	names []string
	epoch uint64
	until time.Time // by the cache's clock
}

// appendPrimaryKey appends the primary key of a request for target: the
// target id, the host (lower-cased) and the path and query as received.
// GET and HEAD share it: only GET responses are stored, and they answer
// HEAD requests too.
func appendPrimaryKey(dst []byte, target string, host, pathQuery []byte) []byte {
	dst = append(dst, keyPrimary)
	dst = appendPartString(dst, target)
	dst = appendPartLower(dst, host)
	return appendPart(dst, pathQuery)
}

// appendVariantKey turns a primary key in dst into the key of one variant.
func appendVariantKey(dst []byte, epoch uint64, names []string, h *fasthttp.RequestHeader) []byte {
	dst[0] = keyVariant
	dst = binary.BigEndian.AppendUint64(dst, epoch)
	return AppendVaryKey(dst, names, h)
}

// requestPath returns the path and query of a request target, stripping the
// scheme and authority of an absolute-form target.
func requestPath(uri []byte) []byte {
	rest, ok := afterScheme(uri)
	if !ok {
		return uri
	}
	i := 0
	for i < len(rest) && rest[i] != '/' && rest[i] != '?' {
		i++
	}
	if i == len(rest) {
		return strSlash
	}
	return rest[i:]
}

var strSlash = []byte("/")

// afterScheme returns what follows "http://" or "https://" (or "//").
func afterScheme(u []byte) ([]byte, bool) {
	switch {
	case len(u) >= 7 && equalFold(u[:7], "http://"):
		return u[7:], true
	case len(u) >= 8 && equalFold(u[:8], "https://"):
		return u[8:], true
	case len(u) >= 2 && u[0] == '/' && u[1] == '/':
		return u[2:], true
	}
	return nil, false
}

// Lookup finds the stored response for a visitor's request to target (the
// app or function id; include its deployment id to start each deploy with
// an empty cache) and decides how to use it (RFC 9111 §4). It does not
// allocate on a hit. The request's Cache-Control directives no-cache,
// max-age and min-fresh force revalidation; max-stale is ignored: stale
// responses are served only as the origin allows (stale-while-revalidate,
// stale-if-error, see [Cache.StaleOnError]); only-if-cached gives
// GatewayTimeout when nothing fresh is stored.
func (c *Cache) Lookup(target string, req *fasthttp.Request) Result {
	h := &req.Header
	if !h.IsGet() && !h.IsHead() {
		return Result{State: Bypass}
	}
	rq := readRequestFacts(req)
	kb := getKeyBuf()
	kb.b = appendPrimaryKey(kb.b[:0], target, h.Host(), requestPath(h.RequestURI()))
	e := c.find(kb, h)
	putKeyBuf(kb)
	now := c.now()
	r := Result{State: evaluate(&rq, e, now)}
	switch r.State {
	case Hit:
		r.Entry = e
	case Revalidate:
		r.Entry, r.Stale = e, e
	case StaleWhileRevalidate:
		r.Entry, r.Refresh = e, e.claimRefresh(now)
	case Miss:
		r.Stale = e
	}
	if r.State == Hit || r.State == StaleWhileRevalidate {
		c.stats.hits[labelShared].Add(1)
	} else {
		c.stats.misses[labelShared].Add(1)
	}
	return r
}

// find returns the entry stored for the primary key in kb, following a Vary
// index. kb is clobbered.
func (c *Cache) find(kb *keyBuf, h *fasthttp.RequestHeader) *SharedEntry {
	it, ok := c.rc.Get(c.hash(kb.b))
	if !ok || it == nil || !bytes.Equal(it.key, kb.b) {
		return nil
	}
	switch it.kind {
	case kindShared:
		return it.shared
	case kindVary:
		kb.b = appendVariantKey(kb.b, it.vary.epoch, it.vary.names, h)
		if it = c.get(kb.b, kindShared); it != nil {
			return it.shared
		}
	}
	return nil
}

// RefreshClaim is how long one request's claim to revalidate a
// stale-while-revalidate entry in the background lasts; if no fresh
// response replaced the entry by then, the next request refreshes.
const RefreshClaim = 10 * time.Second

// claimRefresh reports whether the caller is the one to refresh the entry
// in the background: no other claim is current.
func (e *SharedEntry) claimRefresh(now time.Time) bool {
	n := now.UnixNano()
	cur := e.refreshUntil.Load()
	return n >= cur && e.refreshUntil.CompareAndSwap(cur, n+int64(RefreshClaim))
}

// evaluate decides how a stored response (nil when none) may answer a
// request (RFC 9111 §4.2, §5.2.1). A stale response is served only within
// its stale-while-revalidate allowance (RFC 5861 §3), never when the
// response forbids it (must-revalidate, proxy-revalidate, no-cache) or the
// request asks for validation or a fresher response.
func evaluate(rq *requestFacts, e *SharedEntry, now time.Time) State {
	if e == nil {
		if rq.cc.OnlyIfCached {
			return GatewayTimeout
		}
		return Miss
	}
	age := e.Age(now)
	usable := e.Fresh(now)
	byRequest := true
	switch {
	case rq.cc.NoCache, rq.pragmaNoCache, rq.cc.Invalid:
		usable = false // §5.2.1.4
	case rq.cc.MaxAge != Unset && age > seconds(rq.cc.MaxAge):
		usable = false // §5.2.1.1
	case rq.cc.MinFresh != Unset && e.lifetime-age < seconds(rq.cc.MinFresh):
		usable = false // §5.2.1.3
	default:
		byRequest = false
	}
	switch {
	case usable:
		return Hit
	case !byRequest && !e.noStale && e.swr > 0 && age < e.lifetime+e.swr:
		return StaleWhileRevalidate
	case rq.cc.OnlyIfCached:
		return GatewayTimeout
	case e.validators():
		return Revalidate
	}
	return Miss
}

// Store handles the origin's response to a forwarded request (RFC 9111 §3,
// §4.4); call it after every forwarded request, Bypass ones included.
// requestTime is when the request was sent, responseTime when the response
// arrived. A response the policy allows ([Decide]) and within
// Config.MaxEntryBytes is stored (a copy: the caller keeps resp); a
// non-error response to an unsafe method invalidates the target URI and
// same-origin Location and Content-Location. The Decision says what
// happened. resp.Body() is read, whether it came with a Content-Length or
// chunked: to forward a streamed body while storing it, use
// [Cache.Capture] instead.
func (c *Cache) Store(target string, req *fasthttp.Request, resp *fasthttp.Response, requestTime, responseTime time.Time) Decision {
	p, d := c.prepare(target, req, resp, requestTime, responseTime)
	if p == nil {
		return d
	}
	return p.commit(resp.Body())
}

// pending is a response the policy allows, waiting for its body: what
// Store and Capture keep of the request and response.
type pending struct {
	c       *Cache
	d       Decision
	status  int
	fields  []field
	primary []byte
	key     []byte
	idx     *varyIndex
	resp    time.Time
}

// prepare applies the policy and, for a storable response, copies what
// storing it needs. A nil pending comes with the final Decision (unsafe
// methods invalidate here).
func (c *Cache) prepare(target string, req *fasthttp.Request, resp *fasthttp.Response, requestTime, responseTime time.Time) (*pending, Decision) {
	h := &req.Header
	if !isSafe(h.Method()) {
		if s := resp.StatusCode(); s >= 200 && s < 400 {
			c.invalidateAfter(target, req, resp)
		}
		return nil, Decision{Reason: ReasonMethod}
	}
	d := Decide(req, resp, requestTime, responseTime)
	if !d.Storable() {
		return nil, d
	}
	if cl := resp.Header.ContentLength(); cl > 0 && int64(cl) > c.cfg.MaxEntryBytes {
		d.Reason = ReasonTooLarge
		return nil, d
	}
	names, _ := responseVary(&resp.Header)
	p := &pending{c: c, d: d, status: resp.StatusCode(), resp: responseTime}
	p.primary = appendPrimaryKey(nil, target, h.Host(), requestPath(h.RequestURI()))
	p.key = p.primary
	if len(names) > 0 {
		p.idx = c.varyIndex(p.primary, names)
		p.key = appendVariantKey(bytes.Clone(p.primary), p.idx.epoch, names, h)
	}
	p.fields = responseFields(nil, &resp.Header, skipStored)
	if !hasField(p.fields, strDate) {
		// RFC 9110 §6.6.1: a response without Date gets the time it was
		// received before it is cached or forwarded.
		p.fields = append(p.fields, field{name: strDate, value: AppendHTTPDate(nil, responseTime)})
	}
	return p, d
}

var strDate = []byte(fasthttp.HeaderDate)

// commit stores the response with body, copied.
func (p *pending) commit(body []byte) Decision {
	c, d := p.c, p.d
	e, cost := buildShared(p.key, p.status, p.fields, body, true)
	if cost > c.cfg.MaxEntryBytes {
		d.Reason = ReasonTooLarge
		return d
	}
	e.setDecision(&d, p.resp)
	ttl := c.sharedTTL(e)
	if p.idx != nil {
		c.setVaryIndex(p.primary, p.idx, ttl)
	}
	if !c.set(&item{kind: kindShared, key: e.key, cost: cost, shared: e}, ttl) {
		d.Reason = ReasonRejected
	}
	return d
}

// setDecision records the policy's verdict in a new entry.
func (e *SharedEntry) setDecision(d *Decision, responseTime time.Time) {
	e.lifetime, e.initialAge, e.responseTime, e.revalidate = d.Lifetime, d.InitialAge, responseTime, d.Revalidate
	e.swr, e.sie, e.noStale, e.sMaxAge, e.heuristic = d.StaleWhileRevalidate, d.StaleIfError, d.NoStale, d.SharedMaxAge, d.Heuristic
}

// Revalidated merges the origin's 304 answer to a conditional request made
// with stored.Conditional into the stored response (RFC 9111 §4.3.3,
// §4.3.4): header fields are updated, the age restarts from this response.
// It returns the updated response to serve, and false when resp is not a
// 304 or names another ETag than the stored one; then the edge fetches
// again without conditions. The updated response replaces the stored one
// when the policy still allows it, otherwise the stored one is removed.
func (c *Cache) Revalidated(req *fasthttp.Request, stored *SharedEntry, resp *fasthttp.Response, requestTime, responseTime time.Time) (*SharedEntry, bool) {
	if resp.StatusCode() != fasthttp.StatusNotModified || stored == nil {
		return nil, false
	}
	if etag := resp.Header.Peek(fasthttp.HeaderETag); len(etag) > 0 && !bytes.Equal(etag, stored.etag) {
		return nil, false
	}
	age := bytes.Clone(resp.Header.Peek(fasthttp.HeaderAge))
	date := bytes.Clone(resp.Header.Peek(fasthttp.HeaderDate))
	update := responseFields(nil, &resp.Header, skipUpdate)
	e, cost := buildShared(stored.key, stored.status, mergeFields(stored.fields, update), stored.body, false)

	rq := readRequestFacts(req)
	rq.get = true // a HEAD request revalidates the stored GET response
	rs := fieldsFacts(e.status, e.fields)
	rs.age, rs.date = age, date // the 304's, not the stored ones
	d := decide(&rq, &rs, requestTime, responseTime)
	e.setDecision(&d, responseTime)

	if d.Storable() && cost <= c.cfg.MaxEntryBytes {
		c.set(&item{kind: kindShared, key: e.key, cost: cost, shared: e}, c.sharedTTL(e))
	} else {
		c.del(stored.key)
	}
	return e, true
}

// StaleOnError returns the stored response the edge may serve instead of
// an origin failure, for a request whose [Cache.Lookup] gave r. status is
// the origin's status code, or 0 when the origin could not be reached or
// did not answer in time. A stored response is served stale:
//
//   - for 500, 502, 503, 504 or 0, within the stale-if-error allowance of
//     the response or of the request, the larger (RFC 5861 §4);
//   - for 0 (the cache is disconnected, RFC 9111 §4.2.4) without such an
//     allowance, as long as the cache keeps it, unless it has s-maxage,
//     which implies proxy-revalidate in a shared cache (§5.2.2.10);
//
// and never when the response has must-revalidate (§5.2.2.2),
// proxy-revalidate (§5.2.2.8) or no-cache (§5.2.2.4), or the request
// no-cache (§5.2.1.4). The entry's Age tells the client it is stale.
func (c *Cache) StaleOnError(req *fasthttp.Request, r Result, status int) (*SharedEntry, bool) {
	e := r.Stale
	if e == nil {
		e = r.Entry
	}
	if e == nil || e.noStale {
		return nil, false
	}
	switch status {
	case 0, 500, 502, 503, 504:
	default:
		return nil, false
	}
	rq := readRequestFacts(req)
	if rq.cc.NoCache || rq.pragmaNoCache {
		return nil, false
	}
	staleness := e.Age(c.now()) - e.lifetime
	allowance, explicit := e.sie, e.sie > 0
	if rq.cc.StaleIfError != Unset {
		allowance, explicit = max(allowance, seconds(rq.cc.StaleIfError)), true
	}
	switch {
	case explicit && staleness <= allowance:
		return e, true
	case status == 0 && !e.sMaxAge:
		return e, true
	}
	return nil, false
}

// Invalidate removes the responses stored for target at host and pathQuery
// (the path and query of the request target), every Vary variant included.
func (c *Cache) Invalidate(target string, host, pathQuery []byte) {
	c.del(appendPrimaryKey(nil, target, host, requestPath(pathQuery)))
}

// invalidateAfter invalidates after a non-error response to an unsafe
// method (RFC 9111 §4.4): the target URI, and the Location and
// Content-Location URIs of the same origin, relative references resolved
// against the target URI.
func (c *Cache) invalidateAfter(target string, req *fasthttp.Request, resp *fasthttp.Response) {
	host := req.Header.Host()
	uri := req.Header.RequestURI()
	c.Invalidate(target, host, uri)
	for _, name := range [...]string{fasthttp.HeaderLocation, fasthttp.HeaderContentLocation} {
		if p, ok := sameOriginPath(resp.Header.Peek(name), host, requestPath(uri)); ok {
			c.Invalidate(target, host, p)
		}
	}
}

// sameOriginPath is [sameHostPath], with relative references ("b",
// "../c?x") resolved against base, the path and query of the target URI
// (RFC 3986 §5.2).
func sameOriginPath(ref, host, base []byte) ([]byte, bool) {
	if p, ok := sameHostPath(ref, host); ok {
		return p, true
	}
	ref = trimOWS(ref)
	if i := bytes.IndexByte(ref, '#'); i >= 0 {
		ref = ref[:i]
	}
	if len(ref) == 0 || ref[0] == '/' {
		return nil, false
	}
	r, err := url.Parse(string(ref))
	if err != nil || r.Scheme != "" || r.Host != "" || r.Opaque != "" {
		return nil, false
	}
	b, err := url.Parse(string(base))
	if err != nil {
		return nil, false
	}
	u := b.ResolveReference(r)
	return []byte(u.RequestURI()), true
}

// sameHostPath returns the path and query of a URI reference from a
// Location or Content-Location field when it is an absolute path or names
// host (RFC 9111 §4.4 forbids invalidating other hosts). Relative paths
// are not resolved and not invalidated.
func sameHostPath(ref, host []byte) ([]byte, bool) {
	ref = trimOWS(ref)
	if i := bytes.IndexByte(ref, '#'); i >= 0 {
		ref = ref[:i]
	}
	if len(ref) == 0 {
		return nil, false
	}
	rest, abs := afterScheme(ref)
	if !abs {
		if ref[0] != '/' {
			return nil, false
		}
		return ref, true
	}
	i := 0
	for i < len(rest) && rest[i] != '/' && rest[i] != '?' {
		i++
	}
	if !equalFoldBytes(rest[:i], host) {
		return nil, false
	}
	switch {
	case i == len(rest):
		return strSlash, true
	case rest[i] == '?':
		return append([]byte{'/'}, rest[i:]...), true
	}
	return rest[i:], true
}

// isSafe reports whether a method is safe (RFC 9110 §9.2.1); every other
// method, unknown ones included, invalidates (RFC 9111 §4.4).
func isSafe(m []byte) bool {
	switch string(m) {
	case fasthttp.MethodGet, fasthttp.MethodHead, fasthttp.MethodOptions, fasthttp.MethodTrace:
		return true
	}
	return false
}

// varyIndex returns the Vary index to store variants of key under: the
// stored one when it names the same fields, else a new one with a new
// epoch.
func (c *Cache) varyIndex(key []byte, names []string) *varyIndex {
	if it := c.get(key, kindVary); it != nil && slices.Equal(it.vary.names, names) {
		return it.vary
	}
	return &varyIndex{names: names, epoch: c.epoch.Add(1)}
}

// setVaryIndex stores idx under key, for at least ttl from now.
func (c *Cache) setVaryIndex(key []byte, idx *varyIndex, ttl time.Duration) {
	now := c.now()
	until := now.Add(ttl)
	if !idx.until.IsZero() && !until.After(idx.until) {
		return // the stored index outlives this variant
	}
	next := &varyIndex{names: idx.names, epoch: idx.epoch, until: until}
	cost := int64(len(key)) + entryOverhead
	for _, n := range idx.names {
		cost += int64(len(n)) + 16
	}
	c.set(&item{kind: kindVary, key: key, cost: cost, vary: next}, ttl)
}

// sharedTTL is how long ristretto keeps an entry: its remaining freshness,
// plus the longest time it may still be used stale: the revalidation
// window when it has validators, its stale-while-revalidate and
// stale-if-error allowances (RFC 5861).
func (c *Cache) sharedTTL(e *SharedEntry) time.Duration {
	var ttl time.Duration
	if !e.revalidate {
		ttl = max(e.lifetime-e.initialAge, 0)
	}
	var extra time.Duration
	if e.validators() {
		extra = c.cfg.revalidateWindow()
	}
	if !e.noStale {
		extra = max(extra, e.swr, e.sie)
	}
	return max(ttl+extra, time.Second)
}

// buildShared copies key, fields and (when copyBody) body into one
// allocation and returns the entry and its cost. Without copyBody the entry
// shares the body of the immutable entry it updates (a 304 merge), which
// keeps that entry's small header buffer alive, uncounted.
func buildShared(key []byte, status int, fs []field, body []byte, copyBody bool) (*SharedEntry, int64) {
	size := len(key)
	for _, f := range fs {
		size += len(f.name) + len(f.value)
	}
	if copyBody {
		size += len(body)
	}
	buf := make([]byte, 0, size)
	var k []byte
	buf, k = appendField(buf, key)
	e := &SharedEntry{key: k, status: status, fields: make([]field, len(fs))}
	for i, f := range fs {
		var n, v []byte
		buf, n = appendField(buf, f.name)
		buf, v = appendField(buf, f.value)
		hidden := equalFold(n, "cdn-cache-control")
		switch {
		case equalFold(n, "date"):
			hidden = true // written by SetDate
			if e.date == nil {
				e.date = v
			}
		case e.etag == nil && equalFold(n, "etag"):
			e.etag = v
		case e.lastModified == nil && equalFold(n, "last-modified"):
			e.lastModified = v
		}
		e.fields[i] = field{name: n, value: v, hidden: hidden}
	}
	if copyBody {
		_, e.body = appendField(buf, body)
	} else {
		e.body = body
	}
	e.buildTemplate()
	// The template holds a second copy of the header bytes.
	cost := 2*int64(size-len(key)) + int64(len(key)) + entryOverhead + 2*fieldOverhead*int64(len(fs))
	if copyBody {
		cost -= int64(len(body))
	} else {
		cost += int64(len(body))
	}
	return e, cost
}

// equalFoldString reports whether b equals s ignoring ASCII case.
func equalFoldString(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}
