package localca

import (
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
