package edge

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/domains"
	"github.com/svcplatform/platform/internal/dnstest"
)

// TestDomainEndToEnd: a project's custom domain added through the API,
// its records published in a test DNS, verified, synced to an edge that
// then answers HTTPS for it (SNI and Host) with the installation CA's
// certificate, the site's files and Shield, the apex redirecting to www;
// before verification and after removal the edge does not answer there.
func TestDomainEndToEnd(t *testing.T) {
	dns := dnstest.Start(t)
	env := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) {
		c.Domains.DNSResolver = dns.Addr
		c.Domains.EdgeAddresses = []string{"127.0.0.1"}
	}})
	tok, _, err := env.CP.EdgeSync().MintToken(context.Background(), "test edge")
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, env: env, cfg: Config{
		HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0", AppsDomain: "apps.test", DataDir: t.TempDir(),
		ControlPlane: env.Server.URL, Token: tok, TrustedProxies: []string{"127.0.0.1/32", "::1/128"},
		Now: env.Clock.Now, Logger: quiet, FlushInterval: 100 * time.Millisecond, SyncWait: 10 * time.Second,
		Locator: fixedLocator{'U', 'S'}, AllowPrivateNetworks: true,
	}}
	h.start()
	t.Cleanup(h.stop)
	s := h.newSite("shop")
	s.deploy(map[string]string{"index.html": "<h1>shop</h1>"})

	var added domains.CustomDomainAnswer
	env.Owner.Must(http.StatusCreated, "POST", "/api/projects/"+s.project+"/domains",
		map[string]any{"name": "shop.example", "redirect": "www"}).JSON(t, &added)
	d := added.Domain
	if d.State != domains.StatePending || len(d.Records) != 3 {
		t.Fatalf("added %+v", d)
	}
	h.synced()
	notServed(t, h, "www.shop.example")

	for _, r := range d.Records {
		switch r.Type {
		case "TXT":
			dns.TXT(r.Name, r.Value)
		case "A":
			dns.Addrs(r.Name, r.Value)
		case "CNAME":
			dns.CNAME(r.Name, r.Value)
		}
	}
	var verified domains.CustomDomainAnswer
	env.Owner.Must(http.StatusOK, "POST", "/api/domains/"+d.ID+"/verify", nil).JSON(t, &verified)
	if verified.Domain.State != domains.StateVerified {
		t.Fatalf("verify: %+v", verified.Domain)
	}
	h.synced()
	r := h.get("www.shop.example", "/")
	if r.status != http.StatusOK || r.body != "<h1>shop</h1>" || r.tls.PeerCertificates[0].VerifyHostname("www.shop.example") != nil {
		t.Fatalf("www: %d %q", r.status, r.body)
	}
	r = h.get("shop.example", "/a?b=1")
	if r.status != http.StatusMovedPermanently || r.header.Get("Location") != "https://www.shop.example:"+portOf(h.https)+"/a?b=1" {
		t.Fatalf("apex: %d to %q", r.status, r.header.Get("Location"))
	}
	h.shield(map[string]any{"denyIps": []string{"203.0.113.0/24"}})
	if r := h.get("www.shop.example", "/", "X-Forwarded-For: 203.0.113.9"); r.status != http.StatusForbidden {
		t.Fatalf("Shield at the custom domain: %d", r.status)
	}

	env.Owner.Must(http.StatusOK, "DELETE", "/api/domains/"+d.ID, nil)
	h.synced()
	notServed(t, h, "www.shop.example")
}

// notServed checks that the edge does not answer at host: no certificate
// for it (the handshake fails) or 404.
func notServed(t *testing.T, h *harness, host string) {
	t.Helper()
	resp, err := h.client.Get("https://" + host + "/")
	if err != nil {
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("%s served: %d", host, resp.StatusCode)
	}
}

// portOf is the port of a host:port address.
func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}
