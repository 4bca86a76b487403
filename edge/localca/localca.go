// Package localca is the edge's local certificate authority: on first use
// it creates a CA in the data directory, and it signs a certificate for
// each host name under the apps domain on demand, so https://<slug>.localhost
// works with real TLS once a user trusts the CA certificate (its path is
// printed at start).
//
// Host certificates are ECDSA P-256, valid 90 days, kept in memory and
// re-signed when they have less than 30 days left. The CA is valid 10 years
// and its key never leaves DIR (mode 0600).
//
// The control plane keeps one such CA per installation (controlplane/certs,
// sealed in its store, built with Create, Parse and Sign); edges that pull
// from it get their host certificates there and hold only the CA's
// certificate (FromCertPEM). Open stays for an edge without a control plane
// that issues certificates.
package localca

import (
	"bytes"
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

// ErrNoKey is returned by Sign on a CA made by FromCertPEM, which holds the
// certificate only.
var ErrNoKey = errors.New("localca: the CA's key is not here")

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
	ca, err := Parse(certPEM, keyPEM, domain)
	if err != nil {
		return nil, fmt.Errorf("localca: %s: %w", dir, err)
	}
	ca.CertPath = certPath
	return ca, nil
}

// ReadDir reads the CA files of dir (as Open writes them) without creating
// anything; the error wraps os.ErrNotExist when dir holds no CA.
func ReadDir(dir string) (certPEM, keyPEM []byte, err error) {
	certPEM, err1 := os.ReadFile(filepath.Join(dir, "ca.pem"))
	keyPEM, err2 := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, fmt.Errorf("localca: read %s: %w", dir, err)
	}
	return certPEM, keyPEM, nil
}

// Create makes a new CA: its certificate and EC private key in PEM.
func Create() (certPEM, keyPEM []byte, err error) { return create() }

// Parse builds a CA for hosts under domain from its certificate and key in
// PEM (as Create makes them). CertPath is empty.
func Parse(certPEM, keyPEM []byte, domain string) (*CA, error) {
	ca, err := FromCertPEM(certPEM, domain)
	if err != nil {
		return nil, err
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil || kb.Type != "EC PRIVATE KEY" {
		return nil, errors.New("localca: no PEM EC private key")
	}
	if ca.key, err = x509.ParseECPrivateKey(kb.Bytes); err != nil {
		return nil, fmt.Errorf("localca: key: %w", err)
	}
	if !ca.key.PublicKey.Equal(ca.cert.PublicKey) {
		return nil, errors.New("localca: the key does not match the certificate")
	}
	return ca, nil
}

// FromCertPEM builds a CA that holds the certificate only: it verifies
// (Pool, CertPEM) but does not sign. An edge that gets its host
// certificates from the control plane describes the installation's CA so.
func FromCertPEM(certPEM []byte, domain string) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, errors.New("localca: no PEM certificate")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("localca: certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("localca: the certificate is not a CA's")
	}
	return &CA{cert: cert, certPEM: certPEM, domain: strings.ToLower(strings.Trim(domain, ".")), now: time.Now,
		cache: map[string]*tls.Certificate{}}, nil
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

// Sign signs a new host certificate for host (a DNS name, a wildcard
// "*.name", which then names "name" too, or an IP address) valid from now
// for LeafLifetime, whatever the apps domain: the caller decides which
// hosts may have one. The chain is the leaf alone: the CA is the trust
// anchor, which a client that trusts it already holds (RFC 8446 §4.4.2),
// and sending it anyway costs every client's handshake a certificate to
// parse and a chain to build for nothing.
func (ca *CA) Sign(host string, now time.Time) (*tls.Certificate, error) {
	return ca.sign(strings.ToLower(strings.TrimSuffix(host, ".")), now)
}

// EncodePEM returns c's chain and private key in PEM, as Decode reads them.
func EncodePEM(c *tls.Certificate) (chainPEM, keyPEM []byte, err error) {
	for _, der := range c.Certificate {
		chainPEM = append(chainPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	k, ok := c.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, errors.New("localca: not an ECDSA key")
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, nil, fmt.Errorf("localca: %w", err)
	}
	return chainPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// Decode parses a chain and key in PEM into a certificate with Leaf set.
// A self-signed certificate ending the chain (the trust anchor, which the
// chains signed before the leaf stood alone carried) is left out of what
// is served.
func Decode(chainPEM, keyPEM []byte) (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(chainPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("localca: %w", err)
	}
	if c.Leaf == nil {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, fmt.Errorf("localca: %w", err)
		}
	}
	c.Certificate = withoutAnchor(c.Certificate)
	return &c, nil
}

// withoutAnchor returns chain without a self-signed certificate at its end
// (never the leaf itself).
func withoutAnchor(chain [][]byte) [][]byte {
	if len(chain) < 2 {
		return chain
	}
	last, err := x509.ParseCertificate(chain[len(chain)-1])
	if err != nil || !bytes.Equal(last.RawIssuer, last.RawSubject) || last.CheckSignatureFrom(last) != nil {
		return chain
	}
	return chain[:len(chain)-1]
}

func (ca *CA) sign(host string, now time.Time) (*tls.Certificate, error) {
	if ca.key == nil {
		return nil, ErrNoKey
	}
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
	} else if base, ok := strings.CutPrefix(host, "*."); ok {
		tmpl.DNSNames = []string{host, base} // a wildcard names its base too
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
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// TLSConfig returns a server configuration offering TLS 1.2 and 1.3 with
// certificates from this CA, for the given ALPN protocols.
func (ca *CA) TLSConfig(alpn ...string) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: ca.GetCertificate, NextProtos: alpn}
}
