package deploys_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// TestEdgeOverheadBenchmark measures one GET of the example app (and of
// the example function) reached three ways, each over a kept-alive
// connection, one request at a time:
//
//   - direct: the app's own port (PORT), as if nothing stood in between;
//   - front: the supervisor's front address (the managed origin the edge
//     forwards to: it counts connections, wakes, splices);
//   - edge: https://<slug>.apps.test through the real edge (TLS, Shield's
//     country rules, forwarding to the front).
//
// It runs only with PLATFORM_BENCH=1 (it is a measurement, not a check):
//
//	PLATFORM_BENCH=1 go test -count=1 -run TestEdgeOverheadBenchmark -v ./controlplane/deploys/
func TestEdgeOverheadBenchmark(t *testing.T) {
	if os.Getenv("PLATFORM_BENCH") == "" {
		t.Skip("a measurement: set PLATFORM_BENCH=1 to run it")
	}
	bin, mod := artifacts(t)
	e := newEdgeEnv(t)
	app := newSite(t, e.Env, "benchapp")
	c := app.pushFiles(t, map[string]string{"platform.json": `{"kind":"app","run":["./server"],"health":"/health"}`}, map[string][]byte{"server": bin})
	if d := app.deployRT(t, c); d.Deployment.State != "live" {
		t.Fatalf("%+v\n%s", d.Deployment, d.text())
	}
	fn := newSite(t, e.Env, "benchfn")
	cf := fn.pushFiles(t, map[string]string{"platform.json": `{"kind":"function","module":"fn.wasm"}`}, map[string][]byte{"fn.wasm": mod})
	if d := fn.deployRT(t, cf); d.Deployment.State != "live" {
		t.Fatalf("%+v\n%s", d.Deployment, d.text())
	}
	e.synced(t)
	front := app.origin(t).Origin
	fnFront := fn.origin(t).Origin
	_, port := get(t, front+"/env?k=PORT")

	plain := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 10 * time.Second}
	addr := e.ed.HTTPSAddr().String()
	viaEdge := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: e.ed.CA().Pool()}, MaxIdleConnsPerHost: 4,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	bench := func(c *http.Client, url string) testing.BenchmarkResult {
		return testing.Benchmark(func(b *testing.B) {
			for b.Loop() {
				resp, err := c.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("%s: %d", url, resp.StatusCode)
				}
			}
		})
	}
	for _, tc := range []struct {
		name string
		c    *http.Client
		url  string
	}{
		{"app direct (its own port)", plain, "http://127.0.0.1:" + port + "/health"},
		{"app through its front (managed origin)", plain, front + "/health"},
		{"app through the edge (HTTPS)", viaEdge, "https://benchapp.apps.test/health"},
		{"function through its front (warm)", plain, fnFront + "/hello"},
		{"function through the edge (warm)", viaEdge, "https://benchfn.apps.test/hello"},
	} {
		r := bench(tc.c, tc.url)
		t.Logf("%-40s %8d req  %9.1f µs/req  %6d B/req  %5d allocs/req (whole process: client, edge, front)", tc.name, r.N,
			float64(r.NsPerOp())/1e3, r.AllocedBytesPerOp(), r.AllocsPerOp())
	}
}
