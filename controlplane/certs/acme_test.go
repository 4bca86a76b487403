package certs

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"github.com/svcplatform/platform/internal/dnstest"
	"github.com/svcplatform/platform/internal/freeport"
)

// PebbleInstall is how Pebble, Let's Encrypt's test ACME CA the tests
// order certificates from, is installed (.ci/run does it).
const PebbleInstall = "go install github.com/letsencrypt/pebble/v2/cmd/pebble@v2.10.3"

// pebble is a running Pebble resolving names at a test DNS server and
// validating challenges at the edge's ports.
type pebble struct {
	directory string         // the ACME directory URL
	http      *http.Client   // trusts Pebble's own HTTPS listener
	roots     *x509.CertPool // the root Pebble issues under
}

// startPebble runs Pebble (on PATH, or at $PEBBLE) until the test ends,
// validating tls-alpn-01 at tlsPort and http-01 at httpPort of the
// addresses dnsAddr resolves names to. Without it the test skips naming
// how to install it, or fails when CI is set.
func startPebble(t *testing.T, dnsAddr string, httpPort, tlsPort int) *pebble {
	t.Helper()
	bin := os.Getenv("PEBBLE")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("pebble"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("pebble is not installed (%s)", PebbleInstall)
			}
			t.Skipf("pebble is not installed (%s); skipping controlplane/certs' ACME tests", PebbleInstall)
		}
	}
	dir := t.TempDir()
	certFile, keyFile, listenerCert := writeLoopbackCert(t, dir)
	listen, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	mgmt, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	conf, _ := json.Marshal(map[string]any{"pebble": map[string]any{
		"listenAddress": listen, "managementListenAddress": mgmt, "certificate": certFile, "privateKey": keyFile,
		"httpPort": httpPort, "tlsPort": tlsPort, "ocspResponderURL": "", "externalAccountBindingRequired": false,
	}})
	confFile := filepath.Join(dir, "pebble.json")
	if err := os.WriteFile(confFile, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", confFile, "-dnsserver", dnsAddr)
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	var logs bytes.Buffer
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		seen := false
		for sc.Scan() {
			logMu.Lock()
			logs.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if !seen && strings.Contains(sc.Text(), "ACME directory available at") {
				seen = true
				close(ready)
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		cmd.Wait()
		if t.Failed() {
			logMu.Lock()
			t.Logf("pebble:\n%s", logs.String())
			logMu.Unlock()
		}
	})
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("pebble did not start")
	}
	// The listeners open beside the log line: wait until both accept.
	for _, a := range []string{listen, mgmt} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pebble's listener %s does not accept: %v", a, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	api := x509.NewCertPool()
	api.AddCert(listenerCert)
	trusting := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: api}}
	t.Cleanup(trusting.CloseIdleConnections)
	pb := &pebble{directory: "https://" + listen + "/dir", http: &http.Client{Transport: trusting, Timeout: 30 * time.Second}}
	resp, err := pb.http.Get("https://" + mgmt + "/roots/0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rootPEM, _ := io.ReadAll(resp.Body)
	roots := x509.NewCertPool()
	if resp.StatusCode != 200 || !roots.AppendCertsFromPEM(rootPEM) {
		t.Fatalf("pebble root: %d %s", resp.StatusCode, rootPEM)
	}
	pb.roots = roots
	return pb
}

// writeLoopbackCert writes a self-signed certificate for 127.0.0.1 and
// localhost (Pebble's own HTTPS listener) and returns the file names.
func writeLoopbackCert(t *testing.T, dir string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pebble"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err = x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

// TestDomainACME: an edge under ACME (Pebble) serves a verified custom
// domain over HTTPS with a certificate Pebble issued after validating
// tls-alpn-01 at the edge (the name resolving to it at the test DNS), with
// the site's answer and the www name redirecting; a name the snapshot does

// serveChallenges answers http-01 challenges from the shared cache on a
// port of the test's choosing, as every edge does, and returns the port.
func serveChallenges(t *testing.T, s *Service) int {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.URL.Path, "/.well-known/acme-challenge/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		v, err := s.Get(r.Context(), tok+httpTokenSuffix)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Write(v)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	port, _ := strconv.Atoi(p)
	return port
}

// TestObtainAhead: with an ACME CA (Pebble), Obtain orders a verified
// custom domain's certificate before any visitor (http-01 answered from
// the shared cache), stores it where edges' autocert managers read it,
// answers the stored one while more than 30 days are left, orders again
// once fewer are (the injectable clock), and refuses hosts the snapshot
// does not serve.
func TestObtainAhead(t *testing.T) {
	dns := dnstest.Start(t)
	dns.Addrs("shop.example", "127.0.0.1")
	dns.Addrs("other.example", "127.0.0.1")
	clk := clock.NewFake(time.Now().UTC())
	db := pgtest.Engines()[0].Open(t)
	// Edges answer challenges from the shared cache (this server reads it
	// through a second service on the same store), and Pebble validates
	// there; tls-alpn-01 is not used (port 1).
	httpPort := serveChallenges(t, newService(t, db, clk))
	pb := startPebble(t, dns.Addr, httpPort, 1)
	{
		s, err := New(context.Background(), Config{ACME: &ACMEConfig{Email: "ops@example.com", DirectoryURL: pb.directory, HTTPClient: pb.http}},
			Deps{DB: db, Sealer: testSealer(t, 7), Clock: clk, CertClock: clk, Logger: quiet,
				Sites: fixedSites{hosts: []string{"shop.apps.test"}, domains: []string{"shop.example"}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		first, err := s.Obtain(ctx, "shop.example")
		if err != nil || !first.Ordered {
			t.Fatalf("Obtain = %+v, %v", first, err)
		}
		v, err := s.Get(ctx, "shop.example")
		if err != nil {
			t.Fatal(err)
		}
		var certDER []byte
		for rest := v; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if b.Type == "CERTIFICATE" && certDER == nil {
				certDER = b.Bytes
			}
		}
		leaf, err := x509.ParseCertificate(certDER)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "shop.example", Roots: pb.roots, Intermediates: chainPool(v)}); err != nil {
			t.Fatalf("the certificate does not verify for shop.example under Pebble's root: %v", err)
		}
		if _, err := tls.X509KeyPair(v, v); err != nil {
			t.Fatalf("the cache value is not a key and chain: %v", err)
		}
		again, err := s.Obtain(ctx, "shop.example")
		if err != nil || again.Ordered || !again.NotAfter.Equal(first.NotAfter) {
			t.Fatalf("second Obtain = %+v, %v; want the stored certificate", again, err)
		}
		clk.Set(first.NotAfter.Add(-29 * 24 * time.Hour))
		renewed, err := s.Obtain(ctx, "shop.example")
		if err != nil || !renewed.Ordered {
			t.Fatalf("Obtain within 30 days of expiry = %+v, %v; want a new order", renewed, err)
		}
		if _, err := s.Obtain(ctx, "other.example"); !errors.Is(err, ErrHostNotServed) {
			t.Fatalf("Obtain of a host not served: %v", err)
		}
		if n := countTokens(t, s); n != 0 {
			t.Fatalf("%d challenge tokens left in the cache", n)
		}
	}
}

func chainPool(v []byte) *x509.CertPool {
	p := x509.NewCertPool()
	first := true
	for rest := v; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return p
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if first {
			first = false
			continue
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil {
			p.AddCert(c)
		}
	}
}

func countTokens(t *testing.T, s *Service) int {
	t.Helper()
	var n int
	if err := s.db.QueryRowContext(context.Background(), `SELECT count(*) FROM cert_cache WHERE cache_key LIKE '%+http-01'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
