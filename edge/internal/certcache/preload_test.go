package certcache

import (
	"context"
	"crypto/tls"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestPreload: hosts with a certificate are loaded once per PreloadEvery
// (duplicates once), hosts the cache lacks are not asked for (no order
// starts at the edge), a failing load is tried again on the next call, and
// the hello asks for an ECDSA certificate as browsers do.
func TestPreload(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	fail := map[string]bool{"down.example": true}
	now := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	p := &Preloader{
		Get: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, h.ServerName)
			if !slices.Contains(h.SignatureSchemes, tls.ECDSAWithP256AndSHA256) {
				t.Errorf("hello for %s does not offer ECDSA", h.ServerName)
			}
			if fail[h.ServerName] {
				return nil, errors.New("unreachable")
			}
			return &tls.Certificate{}, nil
		},
		Has: func(_ context.Context, host string) bool { return host != "new.example" },
		Now: func() time.Time { return now },
	}
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Sorted(slices.Values(asked))
		asked = nil
		return out
	}
	hosts := []string{"shop.example", "www.shop.example", "new.example", "down.example", "shop.example"}
	if n := p.Preload(context.Background(), hosts); n != 2 {
		t.Fatalf("loaded %d, want 2", n)
	}
	if got := take(); !slices.Equal(got, []string{"down.example", "shop.example", "www.shop.example"}) {
		t.Fatalf("asked %q", got)
	}
	if n := p.Preload(context.Background(), hosts); n != 0 {
		t.Fatalf("second call loaded %d", n)
	}
	if got := take(); !slices.Equal(got, []string{"down.example"}) {
		t.Fatalf("second call asked %q, want only the failed host", got)
	}
	now = now.Add(PreloadEvery)
	fail["down.example"] = false
	if n := p.Preload(context.Background(), hosts); n != 3 {
		t.Fatalf("an hour later loaded %d, want 3", n)
	}
}
