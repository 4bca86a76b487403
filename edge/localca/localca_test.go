package localca

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCAIssuesVerifiableHostCertificates(t *testing.T) {
	dir := t.TempDir()
	ca, err := Open(dir, "apps.test")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "ca.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("ca.key mode %v %v", fi.Mode(), err)
	}
	again, err := Open(dir, "apps.test")
	if err != nil || !again.cert.Equal(ca.cert) {
		t.Fatalf("reopen made another CA: %v", err)
	}
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"my-blog.apps.test", true},
		{"MY-BLOG.apps.test.", true},
		{"apps.test", true},
		{"deep.sub.apps.test", true},
		{"127.0.0.1", true},
		{"evil.example.com", false},
		{"apps.test.evil.com", false},
		{"xapps.test", false},
		{"10.0.0.1", false},
	} {
		t.Run(tc.host, func(t *testing.T) {
			c, err := again.GetCertificate(&tls.ClientHelloInfo{ServerName: tc.host})
			if !tc.ok {
				if !errors.Is(err, ErrHost) {
					t.Fatalf("err = %v, want ErrHost", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Leaf.Verify(x509.VerifyOptions{DNSName: tc.host, Roots: ca.Pool()})
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
		})
	}
}

func TestRenewal(t *testing.T) {
	ca, err := Open(t.TempDir(), "apps.test")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca.now = func() time.Time { return now }
	hello := &tls.ClientHelloInfo{ServerName: "a.apps.test"}
	c1, _ := ca.GetCertificate(hello)
	c2, _ := ca.GetCertificate(hello)
	if c1 != c2 {
		t.Fatal("certificate not cached")
	}
	now = now.Add(LeafLifetime - RenewBefore + time.Hour)
	c3, _ := ca.GetCertificate(hello)
	if c3 == c1 || !c3.Leaf.NotAfter.After(c1.Leaf.NotAfter) {
		t.Fatal("certificate near expiry not renewed")
	}
}

// TestInstallationCA covers what the control plane builds on: a CA made by
// Create and read back by Parse signs any host; one from FromCertPEM
// verifies but does not sign; a key of another CA is refused.
func TestInstallationCA(t *testing.T) {
	certPEM, keyPEM, err := Create()
	if err != nil {
		t.Fatal(err)
	}
	ca, err := Parse(certPEM, keyPEM, "apps.test")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c, err := ca.Sign("Blog.Example.COM.", now)
	if err != nil {
		t.Fatal(err)
	}
	chain, key, err := EncodePEM(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(chain, key)
	if err != nil || back.Leaf == nil || !back.Leaf.Equal(c.Leaf) || len(back.Certificate) != 1 {
		t.Fatalf("Decode: %v", err)
	}
	pub, err := FromCertPEM(certPEM, "apps.test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := back.Leaf.Verify(x509.VerifyOptions{DNSName: "blog.example.com", Roots: pub.Pool()}); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if _, err := pub.Sign("a.apps.test", now); !errors.Is(err, ErrNoKey) {
		t.Fatalf("certificate-only CA signed: %v", err)
	}
	_, otherKey, _ := Create()
	for _, tc := range []struct {
		name      string
		cert, key []byte
	}{
		{"key of another CA", certPEM, otherKey},
		{"no key", certPEM, nil},
		{"no certificate", nil, keyPEM},
		{"leaf, not a CA", chain, key},
		{"key as certificate", keyPEM, keyPEM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse(tc.cert, tc.key, "apps.test"); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	dir := t.TempDir()
	if _, _, err := ReadDir(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadDir of an empty directory: %v", err)
	}
	opened, err := Open(dir, "apps.test")
	if err != nil {
		t.Fatal(err)
	}
	if c2, k2, err := ReadDir(dir); err != nil || !bytes.Equal(c2, opened.CertPEM()) || len(k2) == 0 {
		t.Fatalf("ReadDir: %v", err)
	}
}

// TestServedChainWithoutAnchor: a client of a server using the CA receives
// the leaf alone (the CA is the trust anchor it holds, RFC 8446 §4.4.2)
// and verifies it; Decode leaves a self-signed certificate ending a stored
// chain (as chains signed before carried) out of what is served, and keeps
// an intermediate.
func TestServedChainWithoutAnchor(t *testing.T) {
	ca, err := Open(t.TempDir(), "apps.test")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", ca.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{ServerName: "a.apps.test", RootCAs: ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	got := conn.ConnectionState().PeerCertificates
	conn.Close()
	if len(got) != 1 || got[0].Subject.CommonName != "a.apps.test" {
		t.Fatalf("served %d certificates, want the leaf alone", len(got))
	}

	// An intermediate: a CA certificate the root signed.
	ikey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	itmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "intermediate"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	ider, err := x509.CreateCertificate(rand.Reader, itmpl, ca.cert, &ikey.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	inter, _ := x509.ParseCertificate(ider)
	sub := &CA{cert: inter, key: ikey, domain: "apps.test", now: time.Now, cache: map[string]*tls.Certificate{}}
	leaf, err := ca.Sign("a.apps.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ileaf, err := sub.Sign("b.apps.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		c     *tls.Certificate
		extra [][]byte // appended to the stored chain
		want  int      // certificates served
	}{
		{"leaf alone", leaf, nil, 1},
		{"leaf and the root (stored before)", leaf, [][]byte{ca.cert.Raw}, 1},
		{"leaf and an intermediate", ileaf, [][]byte{inter.Raw}, 2},
		{"leaf, intermediate and root", ileaf, [][]byte{inter.Raw, ca.cert.Raw}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := *tc.c
			stored.Certificate = append(append([][]byte(nil), tc.c.Certificate...), tc.extra...)
			chain, key, err := EncodePEM(&stored)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Decode(chain, key)
			if err != nil {
				t.Fatal(err)
			}
			if len(back.Certificate) != tc.want || !bytes.Equal(back.Certificate[0], tc.c.Certificate[0]) {
				t.Fatalf("Decode kept %d certificates, want %d with the leaf first", len(back.Certificate), tc.want)
			}
		})
	}
}
