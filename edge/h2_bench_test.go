package edge

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// BenchmarkHTTP2CachedPage is bench/ workload 1 over HTTP/2 in one process:
// a 4 KB static page answered from the cache with Shield on, asked by Go's
// HTTP/2 client over TLS on loopback sockets, many streams in flight over a
// few connections (like loadgen -c 64 -conns 8). It measures the whole h2
// path: TLS, the edge's HTTP/2 server (edge/internal/h2) and serve, and
// Go's client (which shares the CPU and makes most of the allocations);
// allocs/op counts both sides. BenchmarkH2CachedHit measures the server
// alone.
func BenchmarkHTTP2CachedPage(b *testing.B) {
	blobDir := filepath.Join(b.TempDir(), "blobs")
	page := string(bytes.Repeat([]byte("<p>hello, edge, over HTTP/2</p>\n"), 128)) // 4 KiB
	snap := staticSnapshot(b, blobDir, staticSite{host: "www.apps.test", files: map[string]string{"index.html": page}})
	snap.Workspaces[0].Shield = shieldOn()
	le := newLiveEdge(b, snap, func(c *Config) { c.BlobDir = blobDir })
	const conns = 4
	clients := make([]*http.Client, conns)
	for i := range clients {
		clients[i] = le.h2Client()
		defer clients[i].CloseIdleConnections()
	}
	get := func(c *http.Client) {
		req, _ := http.NewRequest("GET", "https://www.apps.test/", nil)
		req.Header.Set("Accept-Encoding", "gzip, br")
		req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0")
		resp, err := c.Do(req)
		if err != nil {
			b.Error(err)
			return
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.ProtoMajor != 2 || n == 0 {
			b.Errorf("%s %d, %d bytes", resp.Proto, resp.StatusCode, n)
		}
	}
	for _, c := range clients {
		get(c)
	}
	le.cache.Wait()
	var next atomic.Uint32
	b.SetParallelism(16)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := clients[next.Add(1)%conns]
		for pb.Next() {
			get(c)
		}
	})
}
