package edge

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/svcplatform/platform/edge/internal/h2/h2test"
	"github.com/svcplatform/platform/internal/freeport"
)

// serveH2Loopback serves one connection with srv on a loopback socket and
// returns the client's end.
func serveH2Loopback(tb testing.TB, srv interface{ ServeConn(net.Conn) error }) net.Conn {
	tb.Helper()
	var ln net.Listener
	for range 5 {
		addr, err := freeport.Addr()
		if err != nil {
			tb.Fatal(err)
		}
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
	}
	if ln == nil {
		tb.Fatal("no free loopback port")
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if c, err := ln.Accept(); err == nil {
			srv.ServeConn(c)
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			tb.Error("the HTTP/2 connection was not served to its end")
		}
	})
	return c
}

// BenchmarkH2CachedHit is bench/ workload 1 over HTTP/2 in one process,
// server side: a 4 KB static page from the cache with Shield on, asked
// again and again on one connection by an allocation-free client
// (h2test) over a loopback socket, cleartext, served by the edge's HTTP/2
// server. One request at a time, or ten at once per round trip (m10, as
// h2load -m 10 sends them); allocs/op are the server's (the client allocates
// nothing), per round trip; cpu-ns/request is the process's CPU time, the
// client's included (the same small part in every case), so it holds on
// a busy machine where ns/request does not.
func BenchmarkH2CachedHit(b *testing.B) {
	page := bytes.Repeat([]byte("<p>hello, edge</p>\n"), 215) // 4 KB
	ue := newUnitEdge(b, shieldOn(), map[string][]byte{"index.html": page})
	for _, bc := range []struct {
		name    string
		srv     interface{ ServeConn(net.Conn) error }
		streams int // requests sent at once
	}{
		{"native", ue.newH2(), 1},
		{"native/m10", ue.newH2(), 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cl, err := h2test.NewClient(serveH2Loopback(b, bc.srv))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			cl.SetRequest("GET", "blog.apps.test", "/", nil, "accept-encoding", "gzip, deflate, br",
				"user-agent", "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0", "accept", "text/html")
			for range 2 {
				if err := cl.RoundTrip(); err != nil {
					b.Fatal(err)
				}
				ue.cache.Wait()
			}
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				if err := cl.RoundTripN(bc.streams); err != nil || cl.Status != 200 {
					b.Fatalf("%d %v", cl.Status, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bc.streams), "ns/request")
			b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N*bc.streams), "cpu-ns/request")
		})
	}
}
