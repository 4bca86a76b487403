package localca

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
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
	if err != nil || back.Leaf == nil || !back.Leaf.Equal(c.Leaf) || len(back.Certificate) != 2 {
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
