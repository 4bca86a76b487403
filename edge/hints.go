package edge

import (
	"bytes"
	"net/http"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/edge/internal/h2"
)

// 103 Early Hints (RFC 8297). fasthttp's client reads and drops the
// interim responses an origin sends before its final one
// (Response.ReadLimitBody consumes every 1xx but 101), so an origin's 103
// cannot be relayed as it arrives. The edge does what Cloudflare does
// instead: it remembers the preload and preconnect Link fields of an app's
// last final HTML answer for a path (frameworks send the same links in
// their 103 and their final answer) and, on the next request for that
// path that goes to the origin, sends them at once as a 103 to the visitor
// (HTTP/1.1 through fasthttp, HTTP/2 and HTTP/3 through the bridge) while
// the origin works. A 103 is never stored in the cache, and a cache hit
// needs none. Remembered links are bounded: maxHintPaths paths (then
// forgotten wholesale), maxHintBytes of links per path.

const (
	maxHintPaths = 10_000
	maxHintBytes = 4 << 10
)

var hdrLink = []byte("Link")

// hintStore maps deployment (the shared-cache target) and path to the Link
// values to send early.
type hintStore struct {
	mu sync.RWMutex
	m  map[string]map[string][][]byte
	n  int
}

// get returns the links for path of target; nil when none. It does not
// allocate.
func (h *hintStore) get(target string, path []byte) [][]byte {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.m[target][string(path)]
}

// learn records the preload and preconnect links of a final answer for
// path (a 2xx HTML answer to a GET), or forgets the path's links when it
// has none.
func (h *hintStore) learn(target string, path []byte, resp *fasthttp.ResponseHeader) {
	if resp.StatusCode() < 200 || resp.StatusCode() > 299 || !bytes.HasPrefix(resp.ContentType(), []byte("text/html")) {
		return
	}
	var links [][]byte
	size := 0
	for _, v := range resp.PeekAll(string(hdrLink)) {
		lv := bytes.ToLower(v)
		if !bytes.Contains(lv, []byte("preload")) && !bytes.Contains(lv, []byte("preconnect")) {
			continue
		}
		if size += len(v); size > maxHintBytes {
			break
		}
		links = append(links, bytes.Clone(v))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	byPath := h.m[target]
	if len(links) == 0 {
		if _, ok := byPath[string(path)]; ok {
			delete(byPath, string(path))
			h.n--
		}
		return
	}
	if h.m == nil || h.n >= maxHintPaths {
		h.m, h.n = map[string]map[string][][]byte{}, 0
		byPath = nil
	}
	if byPath == nil {
		byPath = map[string][][]byte{}
		h.m[target] = byPath
	}
	if _, ok := byPath[string(path)]; !ok {
		h.n++
	}
	byPath[string(path)] = links
}

// sendEarlyHints sends links to the visitor as a 103 before the final
// answer.
func (e *Edge) sendEarlyHints(ctx *fasthttp.RequestCtx, p proto, links [][]byte) {
	if bc, ok := ctx.Conn().(*bridgeConn); ok {
		if bc.w != nil {
			h := bc.w.Header()
			for _, l := range links {
				h.Add("Link", string(l))
			}
			bc.w.WriteHeader(http.StatusEarlyHints)
			h.Del("Link")
		}
		return
	}
	if p != protoHTTPS && p != protoH2 {
		return
	}
	rh := &ctx.Response.Header
	for _, l := range links {
		rh.AddBytesKV(hdrLink, l)
	}
	if p == protoH2 {
		h2.EarlyHints(ctx)
	} else {
		ctx.EarlyHints()
	}
	rh.DelBytes(hdrLink)
}
