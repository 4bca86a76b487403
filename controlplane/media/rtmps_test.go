package media

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/media/rtmp"
	"github.com/svcplatform/platform/controlplane/plans"
)

// testCert makes a self-signed certificate for 127.0.0.1 and returns its
// TLS configuration and the PEM files (certificate, key).
func testCert(t *testing.T) (*tls.Config, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}, certFile, keyFile
}

// needLive skips without nginx and its RTMP module.
func needLive(t *testing.T) {
	t.Helper()
	needTools(t, "ffmpeg", "nginx")
	var probe rtmp.Config
	if err := probe.Find(); err != nil {
		t.Skipf("%v: apt-get install nginx libnginx-mod-rtmp", err)
	}
}

// RTMPS: ffmpeg publishes through the platform's TLS termination,
// verifying its certificate; the stream key check applies as over RTMP.
func TestLiveRTMPS(t *testing.T) {
	needLive(t)
	_, certFile, keyFile := testCert(t)
	tlsAddr := freeAddr(t)
	e := newEnv(t, plans.Pro, Config{NoWorkers: true, Live: &LiveConfig{Listen: freeAddr(t), UpdateSeconds: 1,
		TLSListen: tlsAddr, TLSCertFile: certFile, TLSKeyFile: keyFile}})
	var c Created
	e.must(201, ownerKey, "POST", "/api/projects/"+e.project+"/media", map[string]any{"name": "Secure show", "kind": "live"}).Decode(t, &c)
	if want := "rtmps://" + tlsAddr + "/live"; c.IngestURL != want {
		t.Fatalf("ingest URL %q, want %q", c.IngestURL, want)
	}
	id := c.Asset.ID
	e.must(200, ownerKey, "PATCH", "/api/media/"+id, map[string]any{"action": "go-live"})
	verify := []string{"-tls_verify", "1", "-ca_file", certFile}

	for _, tc := range []struct{ name, url string }{
		{"wrong key", c.IngestURL + "/sk_" + strings.Repeat("B", 43)},
		{"channel id as key", c.IngestURL + "/" + id},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, done := publish(t, tc.url, verify...)
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("publisher ended cleanly")
				}
			case <-time.After(20 * time.Second):
				t.Fatal("publisher was not refused")
			}
		})
	}
	t.Run("client verifying against another CA", func(t *testing.T) {
		// Proves the publisher really checks the certificate served: the
		// right key over a connection to an untrusted certificate fails.
		_, otherCA, _ := testCert(t)
		_, done := publish(t, c.IngestURL+"/"+c.StreamKey, "-tls_verify", "1", "-ca_file", otherCA)
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("publisher ended cleanly")
			}
		case <-time.After(20 * time.Second):
			t.Fatal("publisher trusting another CA got through")
		}
	})
	t.Run("right key", func(t *testing.T) {
		_, done := publish(t, c.IngestURL+"/"+c.StreamKey, verify...)
		waitLivePlaylist(t, e, id, done)
		e.must(200, ownerKey, "PATCH", "/api/media/"+id, map[string]any{"action": "end-stream"})
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("end-stream did not cut the RTMPS publisher")
		}
	})
	t.Run("plain TCP to the TLS port", func(t *testing.T) {
		// An RTMP (not TLS) client gets nothing through to nginx.
		conn, err := net.DialTimeout("tcp", tlsAddr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		c0 := make([]byte, 1537)
		c0[0] = 3 // RTMP C0+C1
		conn.Write(c0)
		if n, err := conn.Read(make([]byte, 1)); err == nil || n > 0 {
			t.Fatalf("plain RTMP answered through the TLS port: %d %v", n, err)
		}
	})
}

func TestLiveTLSConfigRefusals(t *testing.T) {
	_, certFile, keyFile := testCert(t)
	for _, tc := range []struct {
		name string
		live LiveConfig
		want error
	}{
		{"no certificate", LiveConfig{TLSListen: "127.0.0.1:0"}, rtmp.ErrNoCertificate},
		{"key only", LiveConfig{TLSListen: "127.0.0.1:0", TLSKeyFile: keyFile}, rtmp.ErrNoCertificate},
		{"certificate as key", LiveConfig{TLSListen: "127.0.0.1:0", TLSCertFile: certFile, TLSKeyFile: certFile}, nil},
		{"missing file", LiveConfig{TLSListen: "127.0.0.1:0", TLSCertFile: certFile + ".nope", TLSKeyFile: keyFile}, os.ErrNotExist},
		{"empty TLS config", LiveConfig{TLSListen: "127.0.0.1:0", TLS: &tls.Config{}}, rtmp.ErrNoCertificate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.live.NotifyBaseURL = "http://127.0.0.1:1"
			cfg, err := tc.live.tlsConfig()
			if err == nil && tc.live.TLS != nil {
				// A handed-in configuration is checked when listening.
				_, err = rtmp.ListenTLS(tc.live.TLSListen, cfg, "127.0.0.1:1", nil)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

func TestIngestHost(t *testing.T) {
	for in, want := range map[string]string{":1936": "127.0.0.1:1936", "0.0.0.0:1936": "127.0.0.1:1936", "[::]:1936": "127.0.0.1:1936",
		"live.example.com:443": "live.example.com:443", "10.0.0.5:1936": "10.0.0.5:1936"} {
		if got := ingestHost(in); got != want {
			t.Errorf("ingestHost(%q) = %q, want %q", in, got, want)
		}
	}
}
