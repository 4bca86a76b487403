package edge

import (
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/cache"
)

// Hit-for-pass (Varnish's name): when an origin answers a GET for which
// nothing was stored with a response it marks as never storable by a
// shared cache, whatever the request (no-store, private, Set-Cookie,
// Vary: *), the edge remembers "pass" for that cache key for passTTL, and
// the requests for the key in that time go straight to the origin: no
// cache lookup, no storage decision, nothing stored. An API that answers
// no-store (bench/ workload 4) then costs no cache work per request.
//
// What a pass mark may change, and why it is safe:
//   - A pass is only taken for a request without Cache-Control (so
//     only-if-cached, RFC 9111 §5.2.1.7, still gets its 504 from the
//     cache), and only for keys where the lookup found nothing, fresh or
//     stale: while a key passes, nothing is stored for it, so a lookup
//     would have missed too and there is no stale response to fall back
//     on; the visitor gets exactly what the origin says.
//   - If the origin starts answering with a storable response, it is
//     stored at the first request after the mark expires (passTTL).
//   - Marks live in a fixed table of atomic slots indexed by a hash of the
//     key; a collision or a torn read can only make a request pass that
//     would have been looked up (a miss forwarded to the origin: correct,
//     just not cached), never serve a stored response for the wrong key.
//   - The edge does not coalesce concurrent misses onto one origin
//     answer, so no request ever waits on an answer that turns out
//     uncacheable.

// passTTL is how long a pass mark lasts.
const passTTL = 10 * time.Second

// passSlots is the size of an origin's pass table (a power of two).
const passSlots = 4096

// passTable holds the pass marks of one origin's cache keys.
type passTable struct {
	seed  maphash.Seed
	keys  [passSlots]atomic.Uint64 // key hash, 0 when empty
	until [passSlots]atomic.Int64  // UnixNano the mark lasts until
}

func newPassTable() *passTable { return &passTable{seed: maphash.MakeSeed()} }

// hash is the slot key of a request: the cache's primary key (target,
// host, path and query), never 0.
func (t *passTable) hash(target string, h *fasthttp.RequestHeader) uint64 {
	var mh maphash.Hash
	mh.SetSeed(t.seed)
	mh.WriteString(target)
	mh.WriteByte(0)
	mh.Write(h.Host())
	mh.WriteByte(0)
	mh.Write(requestPath(h.RequestURI()))
	k := mh.Sum64()
	if k == 0 {
		k = 1
	}
	return k
}

// passes reports whether the request with key k passes at now.
func (t *passTable) passes(k uint64, now time.Time) bool {
	i := k & (passSlots - 1)
	return t.keys[i].Load() == k && now.UnixNano() < t.until[i].Load()
}

// mark makes key k pass until now+passTTL.
func (t *passTable) mark(k uint64, now time.Time) {
	i := k & (passSlots - 1)
	t.until[i].Store(now.Add(passTTL).UnixNano())
	t.keys[i].Store(k)
}

// passable reports whether req may use (or set) a pass mark: a GET or
// HEAD without Cache-Control.
func passable(req *fasthttp.Request) bool {
	h := &req.Header
	return (h.IsGet() || h.IsHead()) && len(h.PeekBytes(hdrCacheControl)) == 0
}

// passReason reports whether a storage decision's reason is one of the
// response's own, which makes it unstorable for any request.
func passReason(r cache.Reason) bool {
	switch r {
	case cache.ReasonNoStore, cache.ReasonPrivate, cache.ReasonSetCookie, cache.ReasonVaryStar:
		return true
	}
	return false
}
