// Package localca is the edge's local certificate authority: on first use
// it creates a CA in the data directory, and it signs a certificate for
// each host name under the apps domain on demand, so https://<slug>.localhost
// works with real TLS once a user trusts the CA certificate (its path is
// printed at start).
//
// Host certificates are ECDSA P-256, valid 90 days, kept in memory and
// re-signed when they have less than 30 days left. The CA is valid 10 years
// and its key never leaves DIR (mode 0600).
package localca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Lifetimes.
const (
	// CALifetime is how long the CA certificate is valid.
	CALifetime = 10 * 365 * 24 * time.Hour
	// LeafLifetime is how long a host certificate is valid.
	LeafLifetime = 90 * 24 * time.Hour
	// RenewBefore is how long before its end a host certificate is signed
	// again.
	RenewBefore = 30 * 24 * time.Hour
	// MaxCached bounds the host certificates kept in memory.
	MaxCached = 10_000
)

// ErrHost is returned for a server name the CA will not sign.
var ErrHost = errors.New("localca: host not under the apps domain")

// CA signs host certificates for one apps domain.
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	// CertPath is where the CA certificate is, for users to trust.
	CertPath string
	domain   string
	now      func() time.Time

	mu    sync.Mutex
	cache map[string]*tls.Certificate
}

// Open loads the CA from dir, creating it when absent, for hosts under domain.
func Open(dir, domain string) (*CA, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("localca: %w", err)
	}
	certPath, keyPath := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key")
	certPEM, err1 := os.ReadFile(certPath)
	keyPEM, err2 := os.ReadFile(keyPath)
	if errors.Is(err1, os.ErrNotExist) && errors.Is(err2, os.ErrNotExist) {
		if certPEM, keyPEM, err1 = create(); err1 != nil {
			return nil, err1
		}
		if err := writeFile(keyPath, keyPEM, 0o600); err != nil {
			return nil, err
		}
		if err := writeFile(certPath, certPEM, 0o644); err != nil {
			return nil, err
		}
	} else if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("localca: read %s: %w", dir, errors.Join(err1, err2))
	}
	ca := &CA{CertPath: certPath, certPEM: certPEM, domain: strings.ToLower(strings.Trim(domain, ".")), now: time.Now, cache: map[string]*tls.Certificate{}}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("localca: %s holds no PEM certificate and key", dir)
	}
	if ca.cert, err1 = x509.ParseCertificate(cb.Bytes); err1 != nil {
		return nil, fmt.Errorf("localca: ca.pem: %w", err1)
	}
	if ca.key, err1 = x509.ParseECPrivateKey(kb.Bytes); err1 != nil {
		return nil, fmt.Errorf("localca: ca.key: %w", err1)
	}
	return ca, nil
}

func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("localca: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("localca: %w", err)
	}
	return nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

func create() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("localca: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "Platform local CA", Organization: []string{"platform (local development)"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CALifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("localca: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("localca: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// CertPEM returns the CA certificate in PEM.
func (ca *CA) CertPEM() []byte { return ca.certPEM }

// Pool returns a pool holding the CA, for clients in tests.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Allowed reports whether the CA signs for host: the apps domain itself,
// any name under it, and loopback addresses.
func (ca *CA) Allowed(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	return host == ca.domain || strings.HasSuffix(host, "."+ca.domain)
}

// GetCertificate is a tls.Config.GetCertificate that signs for the
// requested server name (the apps domain when the client sent none).
func (ca *CA) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	host := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	if host == "" {
		host = ca.domain
	}
	if !ca.Allowed(host) {
		return nil, fmt.Errorf("%w: %q", ErrHost, host)
	}
	now := ca.now()
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.cache[host]; ok && c.Leaf.NotAfter.Sub(now) > RenewBefore {
		return c, nil
	}
	c, err := ca.sign(host, now)
	if err != nil {
		return nil, err
	}
	if len(ca.cache) >= MaxCached {
		clear(ca.cache)
	}
	ca.cache[host] = c
	return c, nil
}

func (ca *CA) sign(host string, now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("localca: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(LeafLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("localca: sign %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("localca: %w", err)
	}
	return &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key, Leaf: leaf}, nil
}

// TLSConfig returns a server configuration offering TLS 1.2 and 1.3 with
// certificates from this CA, for the given ALPN protocols.
func (ca *CA) TLSConfig(alpn ...string) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: ca.GetCertificate, NextProtos: alpn}
}
