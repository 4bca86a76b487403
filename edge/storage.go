package edge

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/rules"
)

// The storage host (snapshot.Storage) is compiled, as the media playback
// host is, into a site of kind app whose origin is the control plane's
// public object route, so it is served exactly as an app is: the RFC 9111
// shared cache under the origin's Cache-Control (an object's own, or
// public, max-age=60), misses forwarded with the pooled client, ETag,
// Last-Modified, ranges and CORS passed through. What differs is decided
// before the cache is looked at (storageRefused), on every request against
// the table in force:
//
//   - Only GET and HEAD of /storage/<bucket id>/<key> are served; any other
//     path is answered 404 and another method 405 by the edge itself,
//     never forwarded, so the API is out of reach. Upgrades are refused.
//   - A query naming expires or signature is a signed URL: forwarded with
//     its query, and never stored (the origin answers it private; an
//     answer that is not is made so here).
//   - Any other query is dropped: the cache key of an object is its path.
//   - An unsigned request for a bucket not in the snapshot's public list is
//     answered 404 (no-store) by the edge without asking the control plane,
//     and a cached object of a bucket that left the list is never served:
//     a bucket made private or deleted stops being served by every edge at
//     its next snapshot.
//
// Like playback, the host is public and workspace-agnostic: no
// workspace's Shield applies there (rules nil) and nothing is counted per
// project; requests are counted in the edge's metrics with the apps and
// logged under the storage host.

// storageTargetPrefix starts the shared-cache target of the storage host
// (followed by the origin), so its entries never mix with a site's.
const storageTargetPrefix = "storage "

// Bounds of a storage path (the control plane's are tighter: bucket ids
// are bkt_ and 20 characters, keys at most 1024 bytes before encoding).
const (
	storageIDPrefix  = "bkt_"
	maxStorageIDLen  = 64
	maxStorageKeyLen = 4096
)

var (
	errStorageUpgrade   = errors.New("edge: the storage host does not forward upgrades")
	bodyStorageMethod   = []byte("405 method not allowed: the storage host answers GET and HEAD\n")
	paramExpires        = []byte("expires")
	paramSignature      = []byte("signature")
	valStoragePrivate   = []byte("private")
	valCCPrivateNoStore = []byte("private, no-store")
	strNoStore          = []byte("no-store")
	strStoragePrefix    = []byte(snapshot.StoragePathPrefix)
	strStorageIDPrefix  = []byte(storageIDPrefix)
)

// storageHost is the compiled storage host of a table.
type storageHost struct {
	// public holds the ids of the buckets served without a signature.
	public map[string]struct{}
}

// compileStorage adds the storage host of s (nil: none) to t. It takes the
// place of a project's site of the same host; it may not be the playback
// host m.
func compileStorage(t *table, s *snapshot.Storage, m *snapshot.Media) error {
	if s == nil {
		return nil
	}
	host := strings.ToLower(strings.TrimSuffix(s.Host, "."))
	if host == "" || strings.ContainsAny(host, ":/ ") {
		return fmt.Errorf("%w: storage host %q", errSnapshot, s.Host)
	}
	if m != nil && strings.EqualFold(strings.TrimSuffix(m.Host, "."), host) {
		return fmt.Errorf("%w: storage host %s is also the media playback host", errSnapshot, host)
	}
	base := strings.TrimRight(s.Origin, "/")
	o, err := storageOrigins.get(base)
	if err != nil {
		return fmt.Errorf("%w: storage host %s: %w", errSnapshot, host, err)
	}
	sh := &storageHost{public: make(map[string]struct{}, len(s.PublicBuckets))}
	for _, id := range s.PublicBuckets {
		sh.public[id] = struct{}{}
	}
	t.sites[host] = &site{host: host, kind: kindApp, target: rules.TargetServerApp, storage: sh,
		dep: &deployment{id: "storage", target: storageTargetPrefix + base, origin: o}}
	return nil
}

// storageOrigins are the control plane's storage origins.
var storageOrigins = newCPOriginPool(storageTargetPrefix, storageTransport{},
	func(next fwdClient) fwdClient { return storageFwd{next: next} }, errStorageUpgrade)

// storageRefused runs before the shared cache for a request to the storage
// host (st.storage set; for any other site it reports false at once). It
// answers the request itself and reports true for another path (404),
// another method (405), or an unsigned request for a bucket that is not
// public in the table in force (404). A signed request (its query names
// expires or signature) is let through as it is; any other query is
// dropped, so an object's cache key is its path. It does not allocate for
// a request without a query.
func (e *Edge) storageRefused(ctx *fasthttp.RequestCtx, st *site, p proto) bool {
	sh := st.storage
	if sh == nil {
		return false
	}
	req := &ctx.Request
	target := requestPath(req.Header.RequestURI())
	path, query, hasQuery := bytes.Cut(target, []byte{'?'})
	bucket, ok := storagePath(path)
	if !ok {
		e.plain(ctx, p, fasthttp.StatusNotFound, bodyNotFound)
		return true
	}
	if !req.Header.IsGet() && !req.Header.IsHead() {
		e.plain(ctx, p, fasthttp.StatusMethodNotAllowed, bodyStorageMethod)
		ctx.Response.Header.SetCanonical(hdrAllow, valAllowGetHead)
		return true
	}
	if hasQuery {
		if storageSigned(query) {
			return false // the control plane checks the signature
		}
		req.SetRequestURIBytes(path)
	}
	if _, public := sh.public[string(bucket)]; !public {
		e.plain(ctx, p, fasthttp.StatusNotFound, bodyNotFound)
		return true
	}
	return false
}

// storageSigned reports whether a raw query string names expires or
// signature (as received, not decoded: a name the edge does not see as
// signed is dropped with the rest of the query, never forwarded unsigned
// to a private bucket's object).
func storageSigned(query []byte) bool {
	for len(query) > 0 {
		var pair []byte
		pair, query, _ = bytes.Cut(query, []byte{'&'})
		name, _, _ := bytes.Cut(pair, []byte{'='})
		if bytes.Equal(name, paramExpires) || bytes.Equal(name, paramSignature) {
			return true
		}
	}
	return false
}

// storagePath reports whether p (a request path as received, without its
// query) is an object path, /storage/<bucket id>/<key>, and returns the
// bucket id. The id is bkt_ and lower-case letters and digits; the key is
// 1 to maxStorageKeyLen bytes of visible ASCII (percent-encoding allowed:
// keys are sent encoded) without '\', an empty segment, or a "." or ".."
// segment.
func storagePath(p []byte) (bucket []byte, ok bool) {
	rest, ok := bytes.CutPrefix(p, strStoragePrefix)
	if !ok {
		return nil, false
	}
	id, key, ok := bytes.Cut(rest, []byte{'/'})
	if !ok || !bytes.HasPrefix(id, strStorageIDPrefix) || len(id) == len(storageIDPrefix) || len(id) > maxStorageIDLen ||
		len(key) == 0 || len(key) > maxStorageKeyLen {
		return nil, false
	}
	for _, c := range id[len(storageIDPrefix):] {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return nil, false
		}
	}
	start := 0
	for i := 0; i <= len(key); i++ {
		if i < len(key) {
			c := key[i]
			if c <= ' ' || c >= 0x7f || c == '\\' || c == '#' || c == '?' {
				return nil, false
			}
			if c != '/' {
				continue
			}
		}
		switch seg := key[start:i]; {
		case len(seg) == 0, len(seg) == 1 && seg[0] == '.', len(seg) == 2 && seg[0] == '.' && seg[1] == '.':
			return nil, false
		}
		start = i + 1
	}
	return id, true
}

// storageFilter checks a request about to be forwarded to the storage
// origin again (GET or HEAD of an object path; storageRefused answered
// every other before the cache) and answers anything else itself into
// resp: 404 for another path, 405 for another method. It reports whether
// req is to be forwarded, and whether it is signed.
func storageFilter(req *fasthttp.Request, resp *fasthttp.Response) (forward, signed bool) {
	path, query, hasQuery := bytes.Cut(requestPath(req.Header.RequestURI()), []byte{'?'})
	if _, ok := storagePath(path); !ok {
		localAnswer(resp, fasthttp.StatusNotFound, bodyNotFound)
		return false, false
	}
	if !req.Header.IsGet() && !req.Header.IsHead() {
		localAnswer(resp, fasthttp.StatusMethodNotAllowed, bodyStorageMethod)
		resp.Header.SetCanonical(hdrAllow, valAllowGetHead)
		return false, false
	}
	return true, hasQuery && storageSigned(query)
}

// keepPrivate makes the answer to a signed request one no shared cache
// keeps, whatever the origin said (it says private, max-age=<seconds
// left>).
func keepPrivate(resp *fasthttp.Response) {
	cc := resp.Header.PeekBytes(hdrCacheControl)
	if !bytes.Contains(cc, valStoragePrivate) && !bytes.Contains(cc, strNoStore) {
		resp.Header.SetCanonical(hdrCacheControl, valCCPrivateNoStore)
	}
}

// storageFwd is the storage origin's forwarding transport (forward.Client):
// the edge's own, behind storageFilter.
type storageFwd struct{ next fwdClient }

func (s storageFwd) RoundTrip(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) (bool, error) {
	fwd, signed := storageFilter(req, resp)
	if !fwd {
		return false, nil
	}
	retry, err := s.next.RoundTrip(req, resp, deadline)
	if err == nil && signed {
		keepPrivate(resp)
	}
	return retry, err
}

// storageTransport puts storageFilter in front of fasthttp's transport for
// requests sent with the HostClient's own Do.
type storageTransport struct{}

// RoundTrip implements fasthttp.RoundTripper.
func (storageTransport) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	fwd, signed := storageFilter(req, resp)
	if !fwd {
		return false, nil
	}
	retry, err := fasthttp.DefaultTransport.RoundTrip(hc, req, resp)
	if err == nil && signed {
		keepPrivate(resp)
	}
	return retry, err
}

var (
	_ fasthttp.RoundTripper = storageTransport{}
	_ fwdClient             = storageFwd{}
)
