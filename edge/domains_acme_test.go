package edge

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/acme"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/internal/dnstest"
	"github.com/svcplatform/platform/internal/freeport"
	"github.com/svcplatform/platform/internal/pebbletest"
)

// TestDomainACME: an edge under ACME (Pebble) serves a verified custom
// domain over HTTPS with a certificate Pebble issued after validating
// tls-alpn-01 at the edge (the name resolving to it at the test DNS), with
// the site's answer and the www name redirecting; a name the snapshot does
// not list gets no certificate.
func TestDomainACME(t *testing.T) {
	dns := dnstest.Start(t)
	httpsAddr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	httpAddr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	port := func(a string) int { _, p, _ := net.SplitHostPort(a); n, _ := strconv.Atoi(p); return n }
	pb := pebbletest.Start(t, dns.Addr, port(httpAddr), port(httpsAddr), "edge")
	for _, name := range []string{"shop.example", "www.shop.example", "unlisted.example"} {
		dns.Addrs(name, "127.0.0.1")
	}
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from "+r.Host)
	}))
	t.Cleanup(origin.Close)

	snap := appSnapshot(map[string]string{"shop.apps.test": origin.URL})
	snap.Domains = []snapshot.Domain{{Host: "shop.example", ProjectID: "prj_shop.apps.test"},
		{Host: "www.shop.example", ProjectID: "prj_shop.apps.test", RedirectTo: "shop.example"}}
	e, err := New(Config{HTTPAddr: httpAddr, HTTPSAddr: httpsAddr, AppsDomain: "apps.test", DataDir: t.TempDir(),
		ControlPlane: "http://127.0.0.1:1", Token: "svc_edge_unit", Locator: fixedLocator{'U', 'S'}, Logger: quiet,
		AllowPrivateNetworks: true, SyncWait: time.Second, ACME: &ACMEConfig{Email: "ops@platform.test", DirectoryURL: pb.Directory}})
	if err != nil {
		t.Fatal(err)
	}
	// The edge's ACME client as configured, but trusting Pebble's own
	// HTTPS listener (ACME requires HTTPS; Pebble's certificate is not in
	// the system roots).
	e.acme.Client = &acme.Client{DirectoryURL: pb.Directory, HTTPClient: pb.HTTP}
	if err := e.Listen(); err != nil {
		e.Close()
		t.Fatal(err)
	}
	if err := e.apply(context.Background(), snap, nil); err != nil {
		e.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	})

	client := &http.Client{Timeout: 60 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pb.Roots},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, httpsAddr)
			}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(client.CloseIdleConnections)
	resp, err := client.Get("https://shop.example/")
	if err != nil {
		t.Fatalf("HTTPS to the custom domain: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "hello from") {
		t.Fatalf("custom domain: %d %s", resp.StatusCode, body)
	}
	leaf := resp.TLS.PeerCertificates[0]
	if leaf.VerifyHostname("shop.example") != nil || !strings.Contains(leaf.Issuer.CommonName, "Pebble") {
		t.Fatalf("certificate for %v issued by %q", leaf.DNSNames, leaf.Issuer.CommonName)
	}
	// The www name gets its own certificate and redirects to the apex.
	resp, err = client.Get("https://www.shop.example/a?b=1")
	if err != nil {
		t.Fatalf("HTTPS to the www name: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "https://shop.example:"+strconv.Itoa(port(httpsAddr))+"/a?b=1" {
		t.Fatalf("www: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// A name not in the snapshot (unverified): no certificate is ordered.
	c, err := tls.Dial("tcp", httpsAddr, &tls.Config{RootCAs: pb.Roots, ServerName: "unlisted.example"})
	if err == nil {
		c.Close()
		t.Fatal("a certificate for a name the snapshot does not list")
	}
}
