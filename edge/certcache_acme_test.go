package edge

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/acme"
)

// acmeCA is a small RFC 8555 certificate authority for tests (pebble is not
// available here, and x/crypto's acmetest is internal): a directory,
// nonces, accounts whose JWS signatures (ES256) it verifies, orders with one
// DNS identifier, tls-alpn-01 challenges it validates by a real TLS
// handshake (ALPN acme-tls/1, RFC 8737) with the address validateAt gives,
// finalization signing the CSR, and certificate download.
type acmeCA struct {
	t          *testing.T
	srv        *httptest.Server
	key        *ecdsa.PrivateKey
	cert       *x509.Certificate
	validateAt atomic.Value // string: the address the challenged names resolve to
	issued     atomic.Int64
	validated  atomic.Int64

	mu       sync.Mutex
	nonces   map[string]bool
	accounts map[string]*ecdsa.PublicKey // kid (account URL) -> key
	orders   []*acmeOrder
}

type acmeOrder struct {
	domain, token, status, authz string
	chain                        []byte
	thumbprint                   string
}

func newACMECA(t *testing.T) *acmeCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ACME CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &acmeCA{t: t, key: key, cert: cert, nonces: map[string]bool{}, accounts: map[string]*ecdsa.PublicKey{}}
	ca.srv = httptest.NewServer(http.HandlerFunc(ca.serve))
	t.Cleanup(ca.srv.Close)
	return ca
}

func (ca *acmeCA) directoryURL() string { return ca.srv.URL + "/directory" }

func (ca *acmeCA) roots() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

func (ca *acmeCA) nonce() string {
	b := make([]byte, 12)
	rand.Read(b)
	n := base64.RawURLEncoding.EncodeToString(b)
	ca.mu.Lock()
	ca.nonces[n] = true
	ca.mu.Unlock()
	return n
}

func (ca *acmeCA) problem(w http.ResponseWriter, status int, typ, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"type": "urn:ietf:params:acme:error:" + typ, "detail": detail})
}

func (ca *acmeCA) reply(w http.ResponseWriter, status int, location string, v any) {
	if location != "" {
		w.Header().Set("Location", location)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// jws reads and verifies a flattened JWS request: the account key (from
// jwk for a new account, else kid), and the payload.
func (ca *acmeCA) jws(r *http.Request) (kid string, jwk map[string]string, payload []byte, err error) {
	var body struct{ Protected, Payload, Signature string }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		return "", nil, nil, err
	}
	ph, err := base64.RawURLEncoding.DecodeString(body.Protected)
	if err != nil {
		return "", nil, nil, err
	}
	var h struct {
		Alg, Nonce, URL, Kid string
		JWK                  map[string]string `json:"jwk"`
	}
	if err := json.Unmarshal(ph, &h); err != nil {
		return "", nil, nil, err
	}
	ca.mu.Lock()
	fresh := ca.nonces[h.Nonce]
	delete(ca.nonces, h.Nonce)
	pub := ca.accounts[h.Kid]
	ca.mu.Unlock()
	if !fresh {
		return "", nil, nil, errors.New("badNonce")
	}
	if h.URL != ca.srv.URL+r.URL.Path || h.Alg != "ES256" {
		return "", nil, nil, fmt.Errorf("url %q alg %q", h.URL, h.Alg)
	}
	if h.JWK != nil {
		if pub, err = jwkKey(h.JWK); err != nil {
			return "", nil, nil, err
		}
	}
	if pub == nil {
		return "", nil, nil, errors.New("unknown account")
	}
	sig, err := base64.RawURLEncoding.DecodeString(body.Signature)
	if err != nil || len(sig) != 64 {
		return "", nil, nil, errors.New("bad signature encoding")
	}
	digest := sha256.Sum256([]byte(body.Protected + "." + body.Payload))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return "", nil, nil, errors.New("signature does not verify")
	}
	payload, err = base64.RawURLEncoding.DecodeString(body.Payload)
	return h.Kid, h.JWK, payload, err
}

func (ca *acmeCA) serve(w http.ResponseWriter, r *http.Request) {
	base := ca.srv.URL
	w.Header().Set("Replay-Nonce", ca.nonce())
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Path == "/directory" {
		ca.reply(w, 200, "", map[string]string{"newNonce": base + "/nonce", "newAccount": base + "/new-acct",
			"newOrder": base + "/new-order", "revokeCert": base + "/revoke", "keyChange": base + "/key-change"})
		return
	}
	if r.URL.Path == "/nonce" {
		w.WriteHeader(200)
		return
	}
	kid, jwk, payload, err := ca.jws(r)
	if err != nil {
		if err.Error() == "badNonce" {
			ca.problem(w, 400, "badNonce", "stale nonce")
			return
		}
		ca.problem(w, 400, "malformed", err.Error())
		return
	}
	seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	order := func() *acmeOrder {
		if len(seg) != 2 {
			return nil
		}
		var i int
		if _, err := fmt.Sscan(seg[1], &i); err != nil {
			return nil
		}
		ca.mu.Lock()
		defer ca.mu.Unlock()
		if i < 0 || i >= len(ca.orders) {
			return nil
		}
		return ca.orders[i]
	}
	orderJSON := func(i int, o *acmeOrder) map[string]any {
		m := map[string]any{"status": o.status, "identifiers": []map[string]string{{"type": "dns", "value": o.domain}},
			"authorizations": []string{o.authz}, "finalize": fmt.Sprintf("%s/finalize/%d", base, i)}
		if o.chain != nil {
			m["certificate"] = fmt.Sprintf("%s/cert/%d", base, i)
		}
		return m
	}
	index := func() int { var i int; fmt.Sscan(seg[1], &i); return i }
	switch seg[0] {
	case "new-acct":
		pub := fmt.Sprintf(`{"crv":"P-256","kty":"EC","x":%q,"y":%q}`, jwk["x"], jwk["y"])
		url := base + "/acct/" + fmt.Sprintf("%x", sha256.Sum256([]byte(pub)))[:16]
		key, err := jwkKey(jwk)
		if err != nil {
			ca.problem(w, 400, "malformed", err.Error())
			return
		}
		ca.mu.Lock()
		_, exists := ca.accounts[url]
		ca.accounts[url] = key
		ca.mu.Unlock()
		status := 201
		if exists {
			status = 200
		}
		ca.reply(w, status, url, map[string]any{"status": "valid"})
	case "new-order":
		var req struct {
			Identifiers []struct{ Type, Value string }
		}
		if json.Unmarshal(payload, &req) != nil || len(req.Identifiers) != 1 {
			ca.problem(w, 400, "malformed", "one identifier")
			return
		}
		tok := make([]byte, 16)
		rand.Read(tok)
		ca.mu.Lock()
		i := len(ca.orders)
		pubKey := ca.accounts[kid]
		o := &acmeOrder{domain: req.Identifiers[0].Value, token: base64.RawURLEncoding.EncodeToString(tok), status: "pending",
			authz: fmt.Sprintf("%s/authz/%d", base, i), thumbprint: thumbprint(pubKey)}
		ca.orders = append(ca.orders, o)
		ca.mu.Unlock()
		ca.reply(w, 201, fmt.Sprintf("%s/order/%d", base, i), orderJSON(i, o))
	case "order":
		o := order()
		if o == nil {
			ca.problem(w, 404, "malformed", "no order")
			return
		}
		ca.reply(w, 200, "", orderJSON(index(), o))
	case "authz", "chal":
		o := order()
		if o == nil {
			ca.problem(w, 404, "malformed", "no authz")
			return
		}
		i := index()
		if seg[0] == "chal" {
			err := ca.validate(o)
			ca.mu.Lock()
			o.status = "ready"
			if err != nil {
				o.status = "invalid"
				ca.t.Logf("acme CA: validation of %s failed: %v", o.domain, err)
			}
			ca.mu.Unlock()
		}
		ca.mu.Lock()
		zs := "pending"
		switch o.status {
		case "ready", "valid":
			zs = "valid"
		case "invalid":
			zs = "invalid"
		}
		ca.mu.Unlock()
		chal := map[string]any{"type": "tls-alpn-01", "url": fmt.Sprintf("%s/chal/%d", base, i), "token": o.token, "status": zs}
		if seg[0] == "chal" {
			ca.reply(w, 200, "", chal)
			return
		}
		ca.reply(w, 200, "", map[string]any{"status": zs, "identifier": map[string]string{"type": "dns", "value": o.domain},
			"challenges": []any{chal}})
	case "finalize":
		o := order()
		var req struct{ CSR string }
		if o == nil || json.Unmarshal(payload, &req) != nil {
			ca.problem(w, 400, "malformed", "finalize")
			return
		}
		der, _ := base64.RawURLEncoding.DecodeString(req.CSR)
		csr, err := x509.ParseCertificateRequest(der)
		if err != nil || csr.CheckSignature() != nil || len(csr.DNSNames) != 1 || csr.DNSNames[0] != o.domain || o.status != "ready" {
			ca.problem(w, 403, "badCSR", fmt.Sprintf("csr %v, order %s", err, o.status))
			return
		}
		leaf := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: o.domain},
			DNSNames: []string{o.domain}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(20 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		ld, err := x509.CreateCertificate(rand.Reader, leaf, ca.cert, csr.PublicKey, ca.key)
		if err != nil {
			ca.problem(w, 500, "serverInternal", err.Error())
			return
		}
		ca.issued.Add(1)
		ca.mu.Lock()
		o.chain = append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ld}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})...)
		o.status = "valid"
		ca.mu.Unlock()
		ca.reply(w, 200, fmt.Sprintf("%s/order/%d", base, index()), orderJSON(index(), o))
	case "cert":
		o := order()
		if o == nil || o.chain == nil {
			ca.problem(w, 404, "malformed", "no certificate")
			return
		}
		w.Header().Set("Content-Type", "application/pem-certificate-chain")
		w.Write(o.chain)
	default:
		ca.problem(w, 404, "malformed", "no such resource")
	}
}

// jwkKey reads a P-256 public key from its JWK.
func jwkKey(jwk map[string]string) (*ecdsa.PublicKey, error) {
	x, err1 := base64.RawURLEncoding.DecodeString(jwk["x"])
	y, err2 := base64.RawURLEncoding.DecodeString(jwk["y"])
	if err1 != nil || err2 != nil || jwk["crv"] != "P-256" || len(x) != 32 || len(y) != 32 {
		return nil, errors.New("only P-256 account keys")
	}
	return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
}

// thumbprint is the RFC 7638 JWK thumbprint of an account key.
func thumbprint(pub *ecdsa.PublicKey) string {
	t, err := acme.JWKThumbprint(pub)
	if err != nil {
		return ""
	}
	return t
}

// idPeAcmeIdentifier is the tls-alpn-01 certificate extension (RFC 8737).
var idPeAcmeIdentifier = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 1, 31}

// validate completes a TLS handshake offering only acme-tls/1 with the
// address the domain "resolves" to, and checks the challenge certificate.
func (ca *acmeCA) validate(o *acmeOrder) error {
	addr, _ := ca.validateAt.Load().(string)
	c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: o.domain, NextProtos: []string{acme.ALPNProto}, InsecureSkipVerify: true})
	if err != nil {
		return err
	}
	defer c.Close()
	st := c.ConnectionState()
	if st.NegotiatedProtocol != acme.ALPNProto || len(st.PeerCertificates) == 0 {
		return fmt.Errorf("negotiated %q", st.NegotiatedProtocol)
	}
	cert := st.PeerCertificates[0]
	if len(cert.DNSNames) != 1 || cert.DNSNames[0] != o.domain {
		return fmt.Errorf("challenge certificate for %v", cert.DNSNames)
	}
	want := sha256.Sum256([]byte(o.token + "." + o.thumbprint))
	for _, ext := range cert.Extensions {
		if !ext.Id.Equal(idPeAcmeIdentifier) {
			continue
		}
		var got []byte
		if _, err := asn1.Unmarshal(ext.Value, &got); err != nil || string(got) != string(want[:]) {
			return errors.New("wrong key authorization")
		}
		ca.validated.Add(1)
		return nil
	}
	return errors.New("no acmeIdentifier extension")
}

// TestACMEAcrossEdges runs a real ACME order: edge A's autocert.Manager
// orders a certificate on a visitor's first handshake; the CA validates the
// tls-alpn-01 challenge against edge B (which finds A's challenge
// certificate in the shared cache); edge B then serves the very
// certificate A obtained, without ordering one of its own.
func TestACMEAcrossEdges(t *testing.T) {
	ce := newCertsEnv(t)
	ca := newACMECA(t)
	acmeOn := func(c *Config) { c.ACME = &ACMEConfig{Email: "ops@example.com", DirectoryURL: ca.directoryURL()} }
	a, b := ce.edge(t, "edge a", acmeOn), ce.edge(t, "edge b", acmeOn)
	ca.validateAt.Store(b.https) // the DNS name points at edge B
	site := a.newSite("acme")
	site.deploy(map[string]string{"index.html": "acme"})
	b.synced()

	roots := ca.roots()
	fa, err := leafOf(t, a, site.host, roots)
	if err != nil {
		t.Fatalf("edge a: %v", err)
	}
	if ca.validated.Load() != 1 || ca.issued.Load() != 1 {
		t.Fatalf("validated %d, issued %d", ca.validated.Load(), ca.issued.Load())
	}
	fb, err := leafOf(t, b, site.host, roots)
	if err != nil {
		t.Fatalf("edge b: %v", err)
	}
	if fa != fb {
		t.Fatal("edge b serves another certificate")
	}
	if n := ca.issued.Load(); n != 1 {
		t.Fatalf("the CA issued %d certificates, want 1", n)
	}
	// The account key and the certificate are in the control plane.
	for _, key := range []string{"acme_account+key", site.host} {
		if _, err := ce.svc.Get(t.Context(), key); err != nil {
			t.Errorf("shared cache %s: %v", key, err)
		}
	}
}
