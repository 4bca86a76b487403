package h2

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/svcplatform/platform/edge/internal/h2/h2test"
	"github.com/svcplatform/platform/internal/freeport"
)

// startServer serves srv over cleartext HTTP/2 (prior knowledge) on a
// loopback port and returns its address, and shuts srv down at the
// test's end.
func startServer(t testing.TB, srv *Server) string {
	t.Helper()
	var ln net.Listener
	for range 5 {
		addr, err := freeport.Addr()
		if err != nil {
			t.Fatal(err)
		}
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
	}
	if ln == nil {
		t.Fatal("no free port to listen on")
	}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// h2cClient is Go's HTTP/2 client over cleartext (prior knowledge).
func h2cClient(t testing.TB) *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

var (
	typeHTML        = []byte("text/html; charset=utf-8")
	hdrCacheControl = []byte("Cache-Control")
	valCache        = []byte("public, max-age=3600")
)

func dialClient(t testing.TB, addr string) *h2test.Client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := h2test.NewClient(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}
