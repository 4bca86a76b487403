package rtmp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/big"
	"net"
	"testing"
	"time"
)

func selfSigned(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, BasicConstraintsValid: true, IsCA: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, pool
}

// echoBackend stands for nginx: it echoes what it reads.
func echoBackend(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func TestTLSProxy(t *testing.T) {
	cfg, pool := selfSigned(t)
	p, err := ListenTLS("127.0.0.1:0", cfg, echoBackend(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := p.Addr().String()
	dial := func() (*tls.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	}
	t.Run("bytes reach the backend and come back", func(t *testing.T) {
		c, err := dial()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		msg := make([]byte, 64<<10)
		rand.Read(msg)
		go c.Write(msg)
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != string(msg) {
			t.Fatalf("echo: %v", err)
		}
	})
	t.Run("TLS 1.1 refused", func(t *testing.T) {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MaxVersion: tls.VersionTLS11})
		if err == nil {
			c.Close()
			t.Fatal("TLS 1.1 handshake accepted")
		}
	})
	t.Run("close cuts open connections", func(t *testing.T) {
		c, err := dial()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("x"))
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var ne net.Error
		if _, err := c.Read(make([]byte, 1)); err == nil || (errors.As(err, &ne) && ne.Timeout()) {
			t.Fatalf("connection still open after Close: %v", err)
		}
		if _, err := dial(); err == nil {
			t.Fatal("dial after Close succeeded")
		}
	})
}

func TestListenTLSNeedsCertificate(t *testing.T) {
	for _, cfg := range []*tls.Config{nil, {}} {
		if _, err := ListenTLS("127.0.0.1:0", cfg, "127.0.0.1:1", nil); !errors.Is(err, ErrNoCertificate) {
			t.Fatalf("%v: %v", cfg, err)
		}
	}
}
