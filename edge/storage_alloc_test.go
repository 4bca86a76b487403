//go:build !race

package edge

import (
	"maps"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestStorageHitDoesNotAllocate: a public object answered from the shared
// cache on the storage host (whole, 304 to the visitor's validators, a
// Range, HEAD) allocates nothing, the public bucket check included.
func TestStorageHitDoesNotAllocate(t *testing.T) {
	obj := "/storage/" + bktPublic + "/img/logo.png"
	e := newStorageEdge(t, newStorageOrigin(t).url, bktPublic, bktPrivate)
	for _, tc := range []struct {
		name, method string
		header       map[string]string
		status       int
	}{
		{"hit", "GET", nil, 200},
		{"HEAD", "HEAD", nil, 200},
		{"revalidation 304", "GET", map[string]string{"If-None-Match": `"o1"`}, 304},
		{"range", "GET", map[string]string{"Range": "bytes=10-99"}, 206},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			maps.Copy(h, benchHeader)
			maps.Copy(h, tc.header)
			var ctx fasthttp.RequestCtx
			request(&ctx, tc.method, storageHostName, obj, "127.0.0.1:40000", h)
			e.serve(&ctx, protoHTTPS) // a miss the first time: fills the cache
			e.cache.Wait()
			ctx.Response.Reset()
			e.serve(&ctx, protoHTTPS)
			if got := string(ctx.Response.Header.Peek("X-Cache")); got != "HIT" || ctx.Response.StatusCode() != tc.status {
				t.Fatalf("X-Cache %q status %d, want HIT %d", got, ctx.Response.StatusCode(), tc.status)
			}
			allocs := testing.AllocsPerRun(200, func() {
				ctx.Response.Reset()
				e.serve(&ctx, protoHTTPS)
			})
			if allocs != 0 {
				t.Fatalf("storage host %s allocates %.1f times per request, want 0", tc.name, allocs)
			}
		})
	}
}
