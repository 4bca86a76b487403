package certcache

import (
	"context"
	"crypto/tls"
	"sync"
	"time"
)

// Preloading.
const (
	// PreloadEvery is how long a host loaded ahead is not loaded again
	// (a later handshake still renews through the certificate source).
	PreloadEvery = time.Hour
	// preloadWorkers bounds the loads under way at once.
	preloadWorkers = 4
	// maxPreload bounds the hosts of one Preload call.
	maxPreload = 10_000
)

// Preloader loads the certificates of hosts (an edge's verified custom
// domains, on every snapshot) into the edge's certificate source ahead of
// their first handshake, so that handshake does not wait for the control
// plane. Get is the source (autocert.Manager's or Shared's
// GetCertificate); Has, when set, tells whether a host's certificate
// exists already, so a load never starts an ACME order of its own (under
// ACME the control plane orders them: RemoteCache.Has).
type Preloader struct {
	Get func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	Has func(ctx context.Context, host string) bool
	Now func() time.Time

	mu   sync.Mutex
	done map[string]time.Time
}

// Preload loads each host not loaded within PreloadEvery and returns how
// many it loaded. It returns when all are done or ctx ends.
func (p *Preloader) Preload(ctx context.Context, hosts []string) int {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	p.mu.Lock()
	if p.done == nil {
		p.done = map[string]time.Time{}
	}
	var due []string
	seen := map[string]bool{}
	for _, h := range hosts {
		if len(due) == maxPreload {
			break
		}
		if seen[h] {
			continue
		}
		seen[h] = true
		if at, ok := p.done[h]; ok && now().Sub(at) < PreloadEvery {
			continue
		}
		due = append(due, h)
	}
	if len(p.done) > maxMemEntries {
		clear(p.done)
	}
	p.mu.Unlock()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		loaded int
	)
	sem := make(chan struct{}, preloadWorkers)
	for _, h := range due {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return loaded
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if p.Has != nil && !p.Has(ctx, h) {
				return
			}
			hello := &tls.ClientHelloInfo{ServerName: h,
				CipherSuites:      []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_AES_128_GCM_SHA256},
				SignatureSchemes:  []tls.SignatureScheme{tls.ECDSAWithP256AndSHA256},
				SupportedVersions: []uint16{tls.VersionTLS13, tls.VersionTLS12}}
			if _, err := p.Get(hello); err != nil {
				return
			}
			p.mu.Lock()
			p.done[h] = now()
			p.mu.Unlock()
			mu.Lock()
			loaded++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return loaded
}

// Has reports whether the shared cache holds a certificate for host (an
// ACME certificate the control plane or another edge obtained).
func (rc *RemoteCache) Has(ctx context.Context, host string) bool {
	v, err := rc.Get(ctx, host)
	return err == nil && len(v) > 0
}
