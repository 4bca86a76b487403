package edge

import (
	"crypto/tls"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/edge/internal/certcache"
)

// TestPreloadDomainCerts: applying a snapshot's custom domains loads each
// host's certificate (redirecting hosts too, names normalised) into the
// certificate source ahead of any handshake.
func TestPreloadDomainCerts(t *testing.T) {
	got := make(chan string, 8)
	p := &certcache.Preloader{Get: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
		got <- h.ServerName
		return &tls.Certificate{}, nil
	}}
	e := &Edge{log: slog.New(slog.DiscardHandler)}
	e.preloadDomainCerts(p, []snapshot.Domain{{Host: "Shop.Example."}, {Host: "www.shop.example", RedirectTo: "shop.example"}, {Host: "bad host"}})
	e.preloadDomainCerts(nil, []snapshot.Domain{{Host: "x.example"}})
	var hosts []string
	for len(hosts) < 2 {
		select {
		case h := <-got:
			hosts = append(hosts, h)
		case <-time.After(10 * time.Second):
			t.Fatalf("preloaded %q only", hosts)
		}
	}
	slices.Sort(hosts)
	if !slices.Equal(hosts, []string{"shop.example", "www.shop.example"}) {
		t.Fatalf("preloaded %q", hosts)
	}
}
