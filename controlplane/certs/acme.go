package certs

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/crypto/acme"

	"github.com/svcplatform/platform/controlplane/certs/certwire"
)

// ACMEConfig is the ACME CA the control plane obtains custom domains'
// certificates from ahead of their first visitor: the same CA, contact and
// account as the edges' (--acme-email, --acme-directory).
type ACMEConfig struct {
	// Email is the account's contact.
	Email string `json:"email"`
	// DirectoryURL is the CA's directory (Let's Encrypt's when empty).
	DirectoryURL string `json:"directoryUrl,omitempty"`
	// HTTPClient talks to the CA (a test CA's roots); http.DefaultClient
	// when nil.
	HTTPClient *http.Client `json:"-"`
}

// Keys of the shared autocert cache this file reads and writes, in
// golang.org/x/crypto/acme/autocert's format so edges' managers use them.
const (
	accountKeyName = "acme_account+key"
	// httpTokenSuffix follows an http-01 token in its cache key; edges
	// answer /.well-known/acme-challenge/<token> from it.
	httpTokenSuffix = "+http-01"
)

// ErrNoACME is returned by Obtain when the control plane has no ACME CA
// configured (edges then sign with the installation's CA).
var ErrNoACME = errors.New("certs: no ACME CA configured")

// acmeState is the ACME client, made at the first order.
type acmeState struct {
	mu     sync.Mutex
	client *acme.Client
	hosts  map[string]*sync.Mutex
}

// ObtainResult is a certificate Obtain found or ordered.
type ObtainResult struct {
	NotAfter time.Time
	// Ordered is true when a new certificate was ordered (false: the
	// cached one has more than RenewBefore left).
	Ordered bool
}

// Obtain makes sure the shared ACME cache holds a certificate for host
// with more than RenewBefore left, ordering one (http-01, the token in the
// shared cache so whichever edge the CA reaches answers it) when it does
// not. Only hosts of the current snapshot are ordered (ErrHostNotServed).
// Edges then load it from the cache at their first handshake or when they
// preload their snapshot's domains.
func (s *Service) Obtain(ctx context.Context, host string) (ObtainResult, error) {
	if s.acmeCfg == nil {
		return ObtainResult{}, ErrNoACME
	}
	h, err := certwire.ParseHost(host)
	if err != nil {
		return ObtainResult{}, err
	}
	snap, err := s.sites.Snapshot(ctx)
	if err != nil {
		return ObtainResult{}, fmt.Errorf("certs: snapshot: %w", err)
	}
	if !serves(snap, h) {
		return ObtainResult{}, ErrHostNotServed
	}
	mu := s.hostLock(h)
	mu.Lock()
	defer mu.Unlock()
	if na, ok, err := s.Expiry(ctx, h); err != nil {
		return ObtainResult{}, err
	} else if ok && na.Sub(s.certClock.Now()) > RenewBefore && s.hasACMECert(ctx, h) {
		return ObtainResult{NotAfter: na}, nil
	}
	c, err := s.acmeClient(ctx)
	if err != nil {
		return ObtainResult{}, err
	}
	value, notAfter, err := s.order(ctx, c, h)
	if err != nil {
		return ObtainResult{}, err
	}
	if err := s.Put(ctx, h, value); err != nil {
		return ObtainResult{}, err
	}
	s.log.Info("certs: certificate obtained ahead of visitors", "host", h, "notAfter", notAfter)
	return ObtainResult{NotAfter: notAfter, Ordered: true}, nil
}

// hasACMECert reports whether the ACME cache (not the local CA) holds
// host's certificate.
func (s *Service) hasACMECert(ctx context.Context, host string) bool {
	v, err := s.Get(ctx, host)
	if err != nil {
		return false
	}
	_, ok := leafNotAfter(v)
	return ok
}

func (s *Service) hostLock(h string) *sync.Mutex {
	s.acme.mu.Lock()
	defer s.acme.mu.Unlock()
	if s.acme.hosts == nil {
		s.acme.hosts = map[string]*sync.Mutex{}
	}
	mu, ok := s.acme.hosts[h]
	if !ok {
		mu = &sync.Mutex{}
		s.acme.hosts[h] = mu
	}
	return mu
}

// acmeClient is the client on the shared account key (made and stored
// when the cache has none), registered with the CA.
func (s *Service) acmeClient(ctx context.Context) (*acme.Client, error) {
	s.acme.mu.Lock()
	defer s.acme.mu.Unlock()
	if s.acme.client != nil {
		return s.acme.client, nil
	}
	var key *ecdsa.PrivateKey
	v, err := s.Get(ctx, accountKeyName)
	switch {
	case err == nil:
		b, _ := pem.Decode(v)
		if b == nil || b.Type != "EC PRIVATE KEY" {
			return nil, errors.New("certs: the shared ACME account key is not an EC key")
		}
		if key, err = x509.ParseECPrivateKey(b.Bytes); err != nil {
			return nil, fmt.Errorf("certs: the shared ACME account key: %w", err)
		}
	case errors.Is(err, ErrCacheMiss):
		if key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return nil, err
		}
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, err
		}
		if err := s.Put(ctx, accountKeyName, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	c := &acme.Client{Key: key, DirectoryURL: s.acmeCfg.DirectoryURL, HTTPClient: s.acmeCfg.HTTPClient, UserAgent: "platform-certs"}
	if c.DirectoryURL == "" {
		c.DirectoryURL = acme.LetsEncryptURL
	}
	acct := &acme.Account{}
	if s.acmeCfg.Email != "" {
		acct.Contact = []string{"mailto:" + s.acmeCfg.Email}
	}
	if _, err := c.Register(ctx, acct, acme.AcceptTOS); err != nil && !errors.Is(err, acme.ErrAccountAlreadyExists) {
		return nil, fmt.Errorf("certs: ACME account: %w", err)
	}
	s.acme.client = c
	return c, nil
}

// order runs one ACME order for host over http-01 and returns the cache
// value (the key's PEM, then the chain's) and the expiry.
func (s *Service) order(ctx context.Context, c *acme.Client, host string) ([]byte, time.Time, error) {
	o, err := c.AuthorizeOrder(ctx, acme.DomainIDs(host))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("certs: order %s: %w", host, err)
	}
	for _, u := range o.AuthzURLs {
		z, err := c.GetAuthorization(ctx, u)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("certs: authorization of %s: %w", host, err)
		}
		if z.Status == acme.StatusValid {
			continue
		}
		var chal *acme.Challenge
		for _, ch := range z.Challenges {
			if ch.Type == "http-01" {
				chal = ch
			}
		}
		if chal == nil {
			return nil, time.Time{}, fmt.Errorf("certs: the CA offers no http-01 challenge for %s", host)
		}
		resp, err := c.HTTP01ChallengeResponse(chal.Token)
		if err != nil {
			return nil, time.Time{}, err
		}
		tokKey := chal.Token + httpTokenSuffix
		if _, err := certwire.ParseKey(tokKey); err != nil {
			return nil, time.Time{}, fmt.Errorf("certs: the CA's challenge token for %s is unusable: %w", host, err)
		}
		if err := s.Put(ctx, tokKey, []byte(resp)); err != nil {
			return nil, time.Time{}, err
		}
		_, err = c.Accept(ctx, chal)
		if err == nil {
			_, err = c.WaitAuthorization(ctx, z.URI)
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_ = s.Delete(dctx, tokKey)
		cancel()
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("certs: http-01 challenge of %s (the name must reach an edge on port 80): %w", host, err)
		}
	}
	finalize, uri := o.FinalizeURL, o.URI
	if o, err = c.WaitOrder(ctx, o.URI); err != nil {
		return nil, time.Time{}, fmt.Errorf("certs: order %s: %w", host, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, time.Time{}, err
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{DNSNames: []string{host}}, key)
	if err != nil {
		return nil, time.Time{}, err
	}
	if o.FinalizeURL == "" {
		o.FinalizeURL = finalize
	}
	if o.URI == "" {
		o.URI = uri
	}
	chain, _, err := c.CreateCertFromOrder(ctx, o, csr, true)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("certs: certificate of %s: %w", host, err)
	}
	if len(chain) == 0 {
		return nil, time.Time{}, fmt.Errorf("certs: the CA returned no certificate for %s", host)
	}
	leaf, err := x509.ParseCertificate(chain[0])
	if err != nil {
		return nil, time.Time{}, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, time.Time{}, err
	}
	var buf bytes.Buffer
	pem.Encode(&buf, &pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	for _, b := range chain {
		pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: b})
	}
	return buf.Bytes(), leaf.NotAfter.UTC(), nil
}

// ObtainCert is Obtain for the domains area (domains.CertObtainer).
func (s *Service) ObtainCert(ctx context.Context, host string) (time.Time, bool, error) {
	r, err := s.Obtain(ctx, host)
	return r.NotAfter, r.Ordered, err
}
