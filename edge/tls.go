package edge

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"github.com/svcplatform/platform/edge/internal/certcache"
	"github.com/svcplatform/platform/edge/localca"
)

// acmeChallengePrefix is the path of ACME http-01 challenges, answered on
// plain HTTP instead of a redirect.
const acmeChallengePrefix = "/.well-known/acme-challenge/"

// setupTLS builds the server TLS configuration: TLS 1.2 and 1.3, ALPN h2
// then http/1.1, with certificates from the ACME CA when configured,
// otherwise from the installation's CA.
//
// When the control plane offers the certificate endpoints
// (controlplane/certs), the edge keeps no TLS state of its own: ACME state
// lives in the control plane's shared cache (so any edge answers any
// challenge and all serve the same certificates), and host certificates
// come signed by the installation's one CA. Otherwise (a control plane
// without them) the edge keeps its ACME cache in DataDir/acme and its own
// CA in DataDir/ca, as a standalone edge always did.
func (e *Edge) setupTLS() error {
	cc := &certcache.Client{Base: e.cfg.ControlPlane, Token: e.cfg.Token, HTTP: e.http}
	caPEM, shared := e.sharedCA(cc)
	var caPath string
	if shared {
		// Saved under ACME too: a restart while the control plane is
		// unreachable then keeps to the shared state.
		var err error
		if caPath, err = e.writeCACert(caPEM); err != nil {
			return err
		}
	}
	if a := e.cfg.ACME; a != nil {
		var cache autocert.Cache = autocert.DirCache(filepath.Join(e.cfg.DataDir, "acme"))
		var rc *certcache.RemoteCache
		if shared {
			rc = certcache.NewRemoteCache(cc, time.Now, e.log)
			cache = rc
		}
		m := &autocert.Manager{
			Prompt:     autocert.AcceptTOS,
			Cache:      cache,
			HostPolicy: e.acmeHostPolicy,
			Email:      a.Email,
		}
		if a.DirectoryURL != "" {
			m.Client = &acme.Client{DirectoryURL: a.DirectoryURL}
		}
		e.acme = m
		if rc != nil {
			e.preload = &certcache.Preloader{Get: m.GetCertificate, Has: rc.Has}
		}
		e.tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: m.GetCertificate,
			NextProtos: []string{"h2", "http/1.1", acme.ALPNProto}}
		return nil
	}
	if shared {
		ca, err := localca.FromCertPEM(caPEM, e.cfg.AppsDomain)
		if err != nil {
			return fmt.Errorf("edge: installation CA: %w", err)
		}
		ca.CertPath = caPath
		e.ca = ca
		sc := certcache.NewShared(cc, ca.Pool(), e.cfg.AppsDomain, filepath.Join(e.cfg.DataDir, "certs", "hosts"), e.servesHost, time.Now, e.log)
		sc.Warm()
		e.preload = &certcache.Preloader{Get: sc.GetCertificate}
		e.tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: sc.GetCertificate,
			NextProtos: []string{"h2", "http/1.1"}}
		return nil
	}
	ca, err := e.openOwnCA()
	if err != nil {
		return err
	}
	e.ca = ca
	e.tlsConfig = ca.TLSConfig("h2", "http/1.1")
	return nil
}

// sharedCA asks the control plane for the installation's CA certificate.
// shared is true when the control plane offers the certificate endpoints;
// when it cannot be reached, an edge that used them before (its copy of the
// CA certificate is in DataDir/certs) keeps using them, and one that never
// did uses its own CA.
func (e *Edge) sharedCA(cc *certcache.Client) (caPEM []byte, shared bool) {
	ctx, cancel := context.WithTimeout(context.Background(), certcache.Timeout)
	defer cancel()
	pem, found, err := cc.CACert(ctx)
	if err == nil && found {
		if _, err = localca.FromCertPEM(pem, ""); err == nil {
			return pem, true
		}
		err = fmt.Errorf("edge: installation CA: %w", err)
	}
	if err == nil {
		return nil, false // the control plane has no certificate endpoints
	}
	if saved, rerr := os.ReadFile(e.sharedCAPath()); rerr == nil {
		e.log.Warn("edge: control plane unreachable; using the installation CA saved before", "path", e.sharedCAPath(), "err", err)
		return saved, true
	}
	e.log.Warn("edge: control plane unreachable and no installation CA saved; using this edge's own CA", "err", err)
	return nil, false
}

func (e *Edge) sharedCAPath() string { return filepath.Join(e.cfg.DataDir, "certs", "ca.pem") }

// writeCACert saves the installation CA's certificate and returns the path
// users should trust: DataDir/ca/ca.pem, where an edge's CA always was,
// unless that directory holds this edge's own CA (ca.key) with another
// certificate; then DataDir/certs/ca.pem, which is written in every case
// and tells a restart while the control plane is unreachable that this
// edge uses the installation's certificates.
func (e *Edge) writeCACert(caPEM []byte) (string, error) {
	if err := writeIfChanged(e.sharedCAPath(), caPEM); err != nil {
		return "", err
	}
	dir := filepath.Join(e.cfg.DataDir, "ca")
	user := filepath.Join(dir, "ca.pem")
	if old, err := os.ReadFile(user); err == nil && bytes.Equal(old, caPEM) {
		return user, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "ca.key")); err == nil {
		return e.sharedCAPath(), nil
	}
	if err := writeIfChanged(user, caPEM); err != nil {
		return "", err
	}
	return user, nil
}

// writeIfChanged writes data at path (0644; directory 0700) atomically
// unless it holds data already.
func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("edge: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("edge: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("edge: %w", err)
	}
	return nil
}

// openOwnCA opens (or creates) this edge's own CA in DataDir/ca. A
// certificate without a key there is the installation CA's copy from a
// time the control plane offered it: it is replaced.
func (e *Edge) openOwnCA() (*localca.CA, error) {
	dir := filepath.Join(e.cfg.DataDir, "ca")
	cert, kerr := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if _, err := os.Stat(filepath.Join(dir, "ca.key")); kerr == nil && errors.Is(err, os.ErrNotExist) {
		if saved, err := os.ReadFile(e.sharedCAPath()); err == nil && bytes.Equal(saved, cert) {
			if err := os.Remove(filepath.Join(dir, "ca.pem")); err != nil {
				return nil, fmt.Errorf("edge: %w", err)
			}
		}
	}
	return localca.Open(dir, e.cfg.AppsDomain)
}

// servesHost reports whether a site of the configuration in use answers at
// host.
func (e *Edge) servesHost(host string) bool {
	return e.table.Load().lookupHost([]byte(host)) != nil
}

// acmeHostPolicy allows certificates for the hosts of the configuration in
// use only, so nobody can make the edge order certificates for arbitrary
// names.
func (e *Edge) acmeHostPolicy(_ context.Context, host string) error {
	if !e.servesHost(strings.ToLower(host)) {
		return certcache.ErrNoSite
	}
	return nil
}

// CACertPath returns where the CA's certificate is (the installation's, or
// this edge's own without a control plane offering one), for users to
// trust; empty when certificates come from ACME.
func (e *Edge) CACertPath() string {
	if e.ca == nil {
		return ""
	}
	return e.ca.CertPath
}

// CA returns the certificate authority whose certificates the edge serves,
// nil under ACME. The installation's CA, shared through the control plane,
// holds its certificate only (it verifies, Pool; it does not sign here).
func (e *Edge) CA() *localca.CA { return e.ca }
