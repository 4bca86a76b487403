package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"github.com/svcplatform/platform/internal/dnstest"
	"github.com/svcplatform/platform/internal/freeport"
	"github.com/svcplatform/platform/internal/pebbletest"
)

// serveChallenges answers http-01 challenges from the shared cache on a
// port of the test's choosing, as every edge does, and returns the port.
func serveChallenges(t *testing.T, s *Service) int {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.URL.Path, "/.well-known/acme-challenge/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		v, err := s.Get(r.Context(), tok+httpTokenSuffix)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Write(v)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	port, _ := strconv.Atoi(p)
	return port
}

// TestObtainAhead: with an ACME CA (Pebble), Obtain orders a verified
// custom domain's certificate before any visitor (http-01 answered from
// the shared cache), stores it where edges' autocert managers read it,
// answers the stored one while more than 30 days are left, orders again
// once fewer are (the injectable clock), and refuses hosts the snapshot
// does not serve.
func TestObtainAhead(t *testing.T) {
	dns := dnstest.Start(t)
	dns.Addrs("shop.example", "127.0.0.1")
	dns.Addrs("other.example", "127.0.0.1")
	clk := clock.NewFake(time.Now().UTC())
	db := pgtest.Engines()[0].Open(t)
	// Edges answer challenges from the shared cache (this server reads it
	// through a second service on the same store), and Pebble validates
	// there; tls-alpn-01 is not used (port 1).
	httpPort := serveChallenges(t, newService(t, db, clk))
	pb := pebbletest.Start(t, dns.Addr, httpPort, 1, "controlplane/certs")
	{
		s, err := New(context.Background(), Config{ACME: &ACMEConfig{Email: "ops@example.com", DirectoryURL: pb.Directory, HTTPClient: pb.HTTP}},
			Deps{DB: db, Sealer: testSealer(t, 7), Clock: clk, CertClock: clk, Logger: quiet,
				Sites: fixedSites{hosts: []string{"shop.apps.test"}, domains: []string{"shop.example"}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		first, err := s.Obtain(ctx, "shop.example")
		if err != nil || !first.Ordered {
			t.Fatalf("Obtain = %+v, %v", first, err)
		}
		v, err := s.Get(ctx, "shop.example")
		if err != nil {
			t.Fatal(err)
		}
		var certDER []byte
		for rest := v; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if b.Type == "CERTIFICATE" && certDER == nil {
				certDER = b.Bytes
			}
		}
		leaf, err := x509.ParseCertificate(certDER)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "shop.example", Roots: pb.Roots, Intermediates: chainPool(v)}); err != nil {
			t.Fatalf("the certificate does not verify for shop.example under Pebble's root: %v", err)
		}
		if _, err := tls.X509KeyPair(v, v); err != nil {
			t.Fatalf("the cache value is not a key and chain: %v", err)
		}
		again, err := s.Obtain(ctx, "shop.example")
		if err != nil || again.Ordered || !again.NotAfter.Equal(first.NotAfter) {
			t.Fatalf("second Obtain = %+v, %v; want the stored certificate", again, err)
		}
		clk.Set(first.NotAfter.Add(-29 * 24 * time.Hour))
		renewed, err := s.Obtain(ctx, "shop.example")
		if err != nil || !renewed.Ordered {
			t.Fatalf("Obtain within 30 days of expiry = %+v, %v; want a new order", renewed, err)
		}
		if _, err := s.Obtain(ctx, "other.example"); !errors.Is(err, ErrHostNotServed) {
			t.Fatalf("Obtain of a host not served: %v", err)
		}
		if n := countTokens(t, s); n != 0 {
			t.Fatalf("%d challenge tokens left in the cache", n)
		}
	}
}

func chainPool(v []byte) *x509.CertPool {
	p := x509.NewCertPool()
	first := true
	for rest := v; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return p
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if first {
			first = false
			continue
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil {
			p.AddCert(c)
		}
	}
}

func countTokens(t *testing.T, s *Service) int {
	t.Helper()
	var n int
	if err := s.db.QueryRowContext(context.Background(), `SELECT count(*) FROM cert_cache WHERE cache_key LIKE '%+http-01'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
