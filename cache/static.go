package cache

import (
	"time"

	"github.com/valyala/fasthttp"
)

// StaticKey identifies a static-site response. Because it holds the
// deployment id, a deploy or a rollback starts from other keys and never
// serves the bytes of another deployment.
type StaticKey struct {
	// Deployment is the id of the deployment serving the site.
	Deployment string
	// Path is the request path, or the resolved file path; the edge picks
	// one and uses it consistently. It is copied when stored.
	Path []byte
	// Encoding is the content-encoding variant: "" (identity), "gzip",
	// "br", ...
	Encoding string
}

func appendStaticKey(dst []byte, k StaticKey) []byte {
	dst = append(dst, keyStatic)
	dst = appendPartString(dst, k.Deployment)
	dst = appendPart(dst, k.Path)
	return appendPartString(dst, k.Encoding)
}

// StaticResponse is what the edge needs to answer a static-site request.
type StaticResponse struct {
	// Status is the status code, 200 or 404 (the site's 404 page).
	Status int
	// ContentType is the Content-Type field value.
	ContentType []byte
	// ETag is the ETag field value, with its quotes.
	ETag []byte
	// LastModified is the Last-Modified field value, an HTTP-date.
	LastModified []byte
	// ContentEncoding is the Content-Encoding field value; empty for
	// identity.
	ContentEncoding []byte
	// Body is the content.
	Body []byte
}

// StaticEntry is a stored static-site response. It is immutable: callers
// must not modify its fields or the bytes they refer to.
type StaticEntry struct {
	StaticResponse
	// Stored is when the entry was stored, by the cache's clock.
	Stored time.Time
	// Expires is when the entry stops being served: Stored plus the TTL.
	Expires time.Time
}

// Age returns how long the entry has been stored at now.
func (e *StaticEntry) Age(now time.Time) time.Duration {
	return max(now.Sub(e.Stored), 0)
}

// Respond writes the entry to resp: status, Content-Type,
// Content-Encoding, ETag, Last-Modified, Age and the body (not copied:
// resp must not modify it). The edge adds Cache-Control and its other
// headers. It does not allocate once resp has held such a response.
func (e *StaticEntry) Respond(resp *fasthttp.Response, now time.Time) {
	h := &resp.Header
	h.SetStatusCode(e.Status)
	if len(e.ContentType) > 0 {
		h.SetContentTypeBytes(e.ContentType)
	}
	if len(e.ContentEncoding) > 0 {
		h.SetContentEncodingBytes(e.ContentEncoding)
	}
	if len(e.ETag) > 0 {
		h.SetBytesV(fasthttp.HeaderETag, e.ETag)
	}
	if len(e.LastModified) > 0 {
		h.SetBytesV(fasthttp.HeaderLastModified, e.LastModified)
	}
	var buf [20]byte
	h.SetBytesV(fasthttp.HeaderAge, AppendAge(buf[:0], e.Age(now)))
	resp.SetBodyRaw(e.Body)
}

// StaticTTL returns how long the edge keeps a static-site response under a
// workspace's CDN settings: cacheTTLSeconds, or 0 (nothing kept) when the
// CDN is disabled or the TTL is not positive.
func StaticTTL(enabled bool, cacheTTLSeconds int) time.Duration {
	if !enabled || cacheTTLSeconds <= 0 {
		return 0
	}
	return time.Duration(cacheTTLSeconds) * time.Second
}

// GetStatic returns the entry stored under k if it has not expired by the
// cache's clock. It does not allocate. The entry is shared and immutable.
func (c *Cache) GetStatic(k StaticKey) (*StaticEntry, bool) {
	kb := getKeyBuf()
	kb.b = appendStaticKey(kb.b[:0], k)
	it := c.get(kb.b, kindStatic)
	putKeyBuf(kb)
	if it == nil || !c.now().Before(it.static.Expires) {
		c.stats.misses[labelStatic].Add(1)
		return nil, false
	}
	c.stats.hits[labelStatic].Add(1)
	return it.static, true
}

// SetStatic stores a copy of r under k for ttl, the deployment's pinned
// cacheTtlSeconds (see [StaticTTL]). A ttl of 0 or less stores nothing, as
// does an entry larger than Config.MaxEntryBytes; SetStatic reports whether
// the entry was handed to the cache, which may still refuse it under
// memory pressure. The caller keeps ownership of r's slices.
func (c *Cache) SetStatic(k StaticKey, r StaticResponse, ttl time.Duration) bool {
	if ttl <= 0 {
		return false
	}
	keyLen := len(appendStaticKey(nil, k))
	size := keyLen + len(r.ContentType) + len(r.ETag) + len(r.LastModified) + len(r.ContentEncoding) + len(r.Body)
	cost := int64(size) + entryOverhead
	if cost > c.cfg.MaxEntryBytes {
		return false
	}
	// One allocation holds the key and every byte of the response.
	buf := make([]byte, 0, size)
	buf = appendStaticKey(buf, k)
	key := buf[:keyLen:keyLen]
	e := &StaticEntry{Stored: c.now()}
	e.Expires = e.Stored.Add(ttl)
	e.Status = r.Status
	buf, e.ContentType = appendField(buf, r.ContentType)
	buf, e.ETag = appendField(buf, r.ETag)
	buf, e.LastModified = appendField(buf, r.LastModified)
	buf, e.ContentEncoding = appendField(buf, r.ContentEncoding)
	_, e.Body = appendField(buf, r.Body)
	return c.set(&item{kind: kindStatic, key: key, cost: cost, static: e}, ttl)
}

// appendField appends v to buf, which must have room, and returns the
// capacity-limited copy.
func appendField(buf, v []byte) ([]byte, []byte) {
	start := len(buf)
	buf = append(buf, v...)
	return buf, buf[start:len(buf):len(buf)]
}
