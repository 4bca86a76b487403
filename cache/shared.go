package cache

import (
	"bytes"
	"encoding/binary"
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
)

var stateNames = [...]string{Miss: "miss", Hit: "hit", Revalidate: "revalidate", Bypass: "bypass", GatewayTimeout: "gateway-timeout"}

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
	// Entry is the stored response for Hit and Revalidate, nil otherwise.
	// It is shared and immutable.
	Entry *SharedEntry
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
// max-age and min-fresh force revalidation; max-stale is ignored, as this
// cache never serves a stale response; only-if-cached gives GatewayTimeout
// when nothing fresh is stored.
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
	r := Result{State: evaluate(&rq, e, c.now())}
	if r.State == Hit || r.State == Revalidate {
		r.Entry = e
	}
	if r.State == Hit {
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

// evaluate decides how a stored response (nil when none) may answer a
// request (RFC 9111 §4.2, §5.2.1). A stale response is never served.
func evaluate(rq *requestFacts, e *SharedEntry, now time.Time) State {
	if e == nil {
		if rq.cc.OnlyIfCached {
			return GatewayTimeout
		}
		return Miss
	}
	age := e.Age(now)
	usable := e.Fresh(now)
	switch {
	case rq.cc.NoCache, rq.pragmaNoCache, rq.cc.Invalid:
		usable = false // §5.2.1.4
	case rq.cc.MaxAge != Unset && age > seconds(rq.cc.MaxAge):
		usable = false // §5.2.1.1
	case rq.cc.MinFresh != Unset && e.lifetime-age < seconds(rq.cc.MinFresh):
		usable = false // §5.2.1.3
	}
	switch {
	case usable:
		return Hit
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
// same-host Location and Content-Location. The Decision says what happened.
// resp.Body() is read: for a streamed body, skip Store when Content-Length
// is unknown or above [Cache.MaxEntryBytes].
func (c *Cache) Store(target string, req *fasthttp.Request, resp *fasthttp.Response, requestTime, responseTime time.Time) Decision {
	h := &req.Header
	if !isSafe(h.Method()) {
		if s := resp.StatusCode(); s >= 200 && s < 400 {
			c.invalidateAfter(target, req, resp)
		}
		return Decision{Reason: ReasonMethod}
	}
	d := Decide(req, resp, requestTime, responseTime)
	if !d.Storable() {
		return d
	}
	names, _ := responseVary(&resp.Header)
	primary := appendPrimaryKey(nil, target, h.Host(), requestPath(h.RequestURI()))
	key := primary
	var idx *varyIndex
	if len(names) > 0 {
		idx = c.varyIndex(primary, names)
		key = appendVariantKey(bytes.Clone(primary), idx.epoch, names, h)
	}
	fields := responseFields(nil, &resp.Header, skipStored)
	e, cost := buildShared(key, resp.StatusCode(), fields, resp.Body(), true)
	if cost > c.cfg.MaxEntryBytes {
		d.Reason = ReasonTooLarge
		return d
	}
	e.lifetime, e.initialAge, e.responseTime, e.revalidate = d.Lifetime, d.InitialAge, responseTime, d.Revalidate
	ttl := c.sharedTTL(e)
	if idx != nil {
		c.setVaryIndex(primary, idx, ttl)
	}
	if !c.set(&item{kind: kindShared, key: e.key, cost: cost, shared: e}, ttl) {
		d.Reason = ReasonRejected
	}
	return d
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
	e.lifetime, e.initialAge, e.responseTime, e.revalidate = d.Lifetime, d.InitialAge, responseTime, d.Revalidate

	if d.Storable() && cost <= c.cfg.MaxEntryBytes {
		c.set(&item{kind: kindShared, key: e.key, cost: cost, shared: e}, c.sharedTTL(e))
	} else {
		c.del(stored.key)
	}
	return e, true
}

// Invalidate removes the responses stored for target at host and pathQuery
// (the path and query of the request target), every Vary variant included.
func (c *Cache) Invalidate(target string, host, pathQuery []byte) {
	c.del(appendPrimaryKey(nil, target, host, requestPath(pathQuery)))
}

// invalidateAfter invalidates after a non-error response to an unsafe
// method (RFC 9111 §4.4): the target URI, and the Location and
// Content-Location URIs on the same host.
func (c *Cache) invalidateAfter(target string, req *fasthttp.Request, resp *fasthttp.Response) {
	host := req.Header.Host()
	c.Invalidate(target, host, req.Header.RequestURI())
	for _, name := range [...]string{fasthttp.HeaderLocation, fasthttp.HeaderContentLocation} {
		if p, ok := sameHostPath(resp.Header.Peek(name), host); ok {
			c.Invalidate(target, host, p)
		}
	}
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
// plus the revalidation window when it has validators.
func (c *Cache) sharedTTL(e *SharedEntry) time.Duration {
	var ttl time.Duration
	if !e.revalidate {
		ttl = max(e.lifetime-e.initialAge, 0)
	}
	if e.validators() {
		ttl += c.cfg.revalidateWindow()
	}
	return max(ttl, time.Second)
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
		e.fields[i] = field{n, v}
		if e.etag == nil && equalFold(n, "etag") {
			e.etag = v
		}
		if e.lastModified == nil && equalFold(n, "last-modified") {
			e.lastModified = v
		}
	}
	if copyBody {
		_, e.body = appendField(buf, body)
	} else {
		e.body = body
	}
	cost := int64(size) + entryOverhead + fieldOverhead*int64(len(fs))
	if !copyBody {
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
