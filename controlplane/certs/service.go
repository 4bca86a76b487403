// Package certs keeps the TLS state every edge shares, in the control
// plane's store: the installation's local certificate authority (one per
// installation, its key sealed), the host certificates it signed (so every
// edge serves the same certificate for a host), and the autocert cache of
// ACME mode (account key, certificates and challenge tokens, sealed), so any
// edge answers a challenge another edge's order started.
//
// Edges reach it over the endpoints of package certwire with their edge
// token; the CA certificate is public.
package certs

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"database/sql"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/certs/certwire"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/edge/localca"
)

// Lifetimes of host certificates: signed for localca.LeafLifetime (90
// days) and signed again once less than RenewBefore is left.
const RenewBefore = localca.RenewBefore

// Errors of the service; handlers map them to statuses.
var (
	// ErrCacheMiss is returned by Get for a key with no value (404).
	ErrCacheMiss = errors.New("certs: cache miss")
	// ErrTooLarge is returned for a cache value over
	// certwire.MaxValueBytes (413).
	ErrTooLarge = errors.New("certs: value too large")
	// ErrHostNotServed is returned by Issue for a host no site answers at
	// (404).
	ErrHostNotServed = errors.New("certs: no site answers at this host")
	// ErrNoCA is returned when the stored CA cannot be read (a different
	// seal key, or altered rows).
	ErrNoCA = errors.New("certs: the installation CA cannot be read")
)

// Sites tells which hosts the platform serves: *edgesync.Service satisfies
// it (the snapshot edges apply).
type Sites interface {
	Snapshot(ctx context.Context) (snapshot.Snapshot, error)
}

// Authenticator checks a request's edge token and returns the token's id.
// When Deps.Auth is nil, tokens are checked against the edge_tokens table
// (see EdgeTokens).
type Authenticator interface {
	AuthenticateEdge(r *http.Request) (tokenID string, ok bool)
}

// Deps are what the service is built on.
type Deps struct {
	DB     *store.DB
	Sealer *seal.Sealer
	// Clock stamps rows (created_at, updated_at).
	Clock clock.Clock
	// CertClock is the time certificates are signed from and renewed by.
	// Clients check them against real time, so it is the system clock
	// (when nil) whatever Clock is; tests move it to reach renewal.
	CertClock clock.Clock
	// Logger receives what goes wrong (slog.Default when nil).
	Logger *slog.Logger
	// Sites names the hosts certificates are signed for (required).
	Sites Sites
	// Auth checks edge tokens; nil checks them in the edge_tokens table.
	Auth Authenticator
}

// Config is the service's configuration; the zero value works.
type Config struct {
	// ImportCADir, when set and no CA is stored yet, names a directory
	// holding a CA made by localca.Open (ca.pem, ca.key) to adopt as the
	// installation's: `platform serve` passes DATA/ca so users keep
	// trusting the CA its edge made before.
	ImportCADir string `json:"importCaDir,omitempty"`
	// ACME, when set, is the ACME CA Obtain orders custom domains'
	// certificates from ahead of their first visitor.
	ACME *ACMEConfig `json:"acme,omitempty"`
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Sealer": d.Sealer != nil, "Sites": d.Sites != nil} {
		if !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%w: %s", ErrNotConfigured, strings.Join(missing, ", "))
	}
	return nil
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("certs: missing dependencies")

// Service is the shared certificate store.
type Service struct {
	db        *store.DB
	sealer    *seal.Sealer
	clock     clock.Clock
	certClock clock.Clock
	log       *slog.Logger
	sites     Sites
	auth      Authenticator

	caPEM []byte
	ca    *localca.CA

	acmeCfg *ACMEConfig
	acme    acmeState

	// issueMu makes one replica sign at most one certificate per host at a
	// time (the store's transaction settles races between replicas).
	issueMu sync.Mutex
}

// New loads the installation's CA from the store (hence ctx), creating it
// (or adopting cfg.ImportCADir's) when the store has none. Replicas
// starting together agree on one: the first insert wins and every replica
// reads the row back. It starts nothing.
func New(ctx context.Context, cfg Config, d Deps) (*Service, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.CertClock == nil {
		d.CertClock = clock.System{}
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	s := &Service{db: d.DB, sealer: d.Sealer, clock: d.Clock, certClock: d.CertClock, log: d.Logger, sites: d.Sites, auth: d.Auth, acmeCfg: cfg.ACME}
	if s.auth == nil {
		s.auth = EdgeTokens{DB: d.DB}
	}
	certPEM, keyPEM, err := s.ensureCA(ctx, cfg.ImportCADir)
	if err != nil {
		return nil, err
	}
	ca, err := localca.Parse(certPEM, keyPEM, "")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCA, err)
	}
	s.caPEM, s.ca = certPEM, ca
	return s, nil
}

// CACertPEM returns the installation CA's certificate in PEM.
func (s *Service) CACertPEM() []byte { return s.caPEM }

// Get returns the cache value at key, or ErrCacheMiss.
func (s *Service) Get(ctx context.Context, key string) ([]byte, error) {
	if _, err := certwire.ParseKey(key); err != nil {
		return nil, err
	}
	sealed, err := getCache(ctx, s.db, key)
	if err != nil {
		return nil, err
	}
	v, err := s.sealer.Open(sealed, cacheAAD(key))
	if err != nil {
		return nil, fmt.Errorf("certs: cache %s: %w", key, err)
	}
	return v, nil
}

// Put stores value at key, replacing any.
func (s *Service) Put(ctx context.Context, key string, value []byte) error {
	if _, err := certwire.ParseKey(key); err != nil {
		return err
	}
	if len(value) > certwire.MaxValueBytes {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(value), certwire.MaxValueBytes)
	}
	return putCache(ctx, s.db, key, s.sealer.Seal(value, cacheAAD(key)), s.clock.Now())
}

// Delete removes the value at key; a missing key is not an error
// (autocert's Cache semantics).
func (s *Service) Delete(ctx context.Context, key string) error {
	if _, err := certwire.ParseKey(key); err != nil {
		return err
	}
	return deleteCache(ctx, s.db, key)
}

// Issue returns the host certificate of host, signed by the installation's
// CA: the stored one while it has more than RenewBefore left, otherwise a
// new one that replaces it, so every edge (and replica) hands out the same
// certificate. Hosts must be served: the apps domain, its wildcard
// ("*.<apps domain>", which names the apps domain too), a site's host or a
// custom domain in the current snapshot (ErrHostNotServed otherwise).
func (s *Service) Issue(ctx context.Context, host string) (certwire.LocalCert, error) {
	h, err := certwire.ParseHost(host)
	if err != nil {
		return certwire.LocalCert{}, err
	}
	snap, err := s.sites.Snapshot(ctx)
	if err != nil {
		return certwire.LocalCert{}, fmt.Errorf("certs: snapshot: %w", err)
	}
	if !serves(snap, h) {
		return certwire.LocalCert{}, fmt.Errorf("%w: %s", ErrHostNotServed, h)
	}
	s.issueMu.Lock()
	defer s.issueMu.Unlock()
	var out certwire.LocalCert
	err = s.db.Tx(ctx, func(tx *sql.Tx) error {
		now := s.certClock.Now()
		l, ok, err := getLeaf(ctx, tx, h)
		if err != nil {
			return err
		}
		if ok && l.notAfter.Sub(now) > RenewBefore {
			key, err := s.sealer.Open(l.keySealed, leafAAD(h))
			if err != nil {
				return fmt.Errorf("certs: leaf %s: %w", h, err)
			}
			out = certwire.LocalCert{Host: h, ChainPEM: l.chainPEM, KeyPEM: string(key), NotAfter: l.notAfter}
			return nil
		}
		c, err := s.ca.Sign(h, now)
		if err != nil {
			return fmt.Errorf("certs: sign %s: %w", h, err)
		}
		chain, key, err := localca.EncodePEM(c)
		if err != nil {
			return fmt.Errorf("certs: sign %s: %w", h, err)
		}
		nl := leaf{chainPEM: string(chain), keySealed: s.sealer.Seal(key, leafAAD(h)), notAfter: c.Leaf.NotAfter.UTC()}
		if err := putLeaf(ctx, tx, h, nl, s.clock.Now()); err != nil {
			return err
		}
		out = certwire.LocalCert{Host: h, ChainPEM: nl.chainPEM, KeyPEM: string(key), NotAfter: nl.notAfter}
		return nil
	})
	if err != nil {
		return certwire.LocalCert{}, fmt.Errorf("certs: issue %s: %w", h, err)
	}
	return out, nil
}

// serves reports whether host is the apps domain, its wildcard
// (certwire.WildcardPrefix), the media playback host, the storage host, a
// site's host or a verified custom domain of a site (snapshot.Domains).
func serves(snap snapshot.Snapshot, host string) bool {
	d := strings.ToLower(snap.AppsDomain)
	if host == d || host == certwire.WildcardPrefix+d {
		return true
	}
	if snap.Media != nil && strings.EqualFold(snap.Media.Host, host) {
		return true
	}
	if snap.Storage != nil && strings.EqualFold(snap.Storage.Host, host) {
		return true
	}
	for _, site := range snap.Sites {
		if site.Host == host {
			return true
		}
	}
	for _, d := range snap.Domains {
		if d.Host == host {
			return true
		}
	}
	return false
}

func cacheAAD(key string) []byte { return []byte("certs/cache/" + key) }
func leafAAD(host string) []byte { return []byte("certs/leaf/" + host) }

var caAAD = []byte("certs/ca")

// ensureCA returns the stored CA, storing a new (or imported) one first
// when there is none.
func (s *Service) ensureCA(ctx context.Context, importDir string) (certPEM, keyPEM []byte, err error) {
	certPEM, sealed, err := getCA(ctx, s.db)
	if errors.Is(err, store.ErrNotFound) {
		var newCert, newKey []byte
		if importDir != "" {
			newCert, newKey, err = localca.ReadDir(importDir)
			if err == nil {
				if _, err := localca.Parse(newCert, newKey, ""); err != nil {
					return nil, nil, fmt.Errorf("certs: import %s: %w", importDir, err)
				}
				s.log.Info("certs: adopting the existing local CA as the installation's", "dir", importDir)
			}
		}
		if importDir == "" || err != nil {
			if newCert, newKey, err = localca.Create(); err != nil {
				return nil, nil, fmt.Errorf("certs: %w", err)
			}
		}
		err = s.db.Tx(ctx, func(tx *sql.Tx) error {
			return insertCA(ctx, tx, newCert, s.sealer.Seal(newKey, caAAD), s.clock.Now())
		})
		if err != nil {
			return nil, nil, fmt.Errorf("certs: store the CA: %w", err)
		}
		certPEM, sealed, err = getCA(ctx, s.db)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("certs: read the CA: %w", err)
	}
	keyPEM, err = s.sealer.Open(sealed, caAAD)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrNoCA, err)
	}
	return certPEM, keyPEM, nil
}

// EdgeTokens checks edge tokens (Authorization: Bearer svc_edge_...)
// against the edge_tokens table that controlplane/edgesync writes: a token
// is valid while it is not revoked, from the next request on. The lookup is
// by the secret's SHA-256, as edgesync stores it.
type EdgeTokens struct{ DB *store.DB }

// AuthenticateEdge implements Authenticator.
func (a EdgeTokens) AuthenticateEdge(r *http.Request) (string, bool) {
	secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !strings.HasPrefix(secret, snapshot.TokenPrefix) || len(secret) > 200 {
		return "", false
	}
	h := sha256.Sum256([]byte(secret))
	var id string
	err := a.DB.QueryRowContext(r.Context(), `SELECT id FROM edge_tokens WHERE token_hash = ? AND revoked_at = ''`, h[:]).Scan(&id)
	if err != nil {
		return "", false
	}
	return id, true
}

// Expiry returns when the certificate edges serve for host expires: the
// ACME certificate in the shared autocert cache (kept under the host's
// name) or, without one, the installation CA's host certificate; found is
// false when neither was issued. The domains area reports certificates
// that were not issued or not renewed with it.
func (s *Service) Expiry(ctx context.Context, host string) (time.Time, bool, error) {
	h, err := certwire.ParseHost(host)
	if err != nil {
		return time.Time{}, false, err
	}
	sealed, err := getCache(ctx, s.db, h)
	switch {
	case err == nil:
		v, err := s.sealer.Open(sealed, cacheAAD(h))
		if err != nil {
			return time.Time{}, false, fmt.Errorf("certs: cache %s: %w", h, err)
		}
		if na, ok := leafNotAfter(v); ok {
			return na, true, nil
		}
	case !errors.Is(err, ErrCacheMiss):
		return time.Time{}, false, err
	}
	l, ok, err := getLeaf(ctx, s.db, h)
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	return l.notAfter, true, nil
}

// leafNotAfter reads the expiry of the first certificate in an autocert
// cache value (the private key's PEM block, then the chain's).
func leafNotAfter(v []byte) (time.Time, bool) {
	for {
		var b *pem.Block
		b, v = pem.Decode(v)
		if b == nil {
			return time.Time{}, false
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return time.Time{}, false
		}
		return c.NotAfter.UTC(), true
	}
}
