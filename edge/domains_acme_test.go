package edge

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
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/acme"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/internal/dnstest"
	"github.com/svcplatform/platform/internal/freeport"
)

// PebbleInstall is how Pebble, Let's Encrypt's test ACME CA the custom
// domain test orders certificates from, is installed (.ci/run does it).
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
			t.Skipf("pebble is not installed (%s); skipping the ACME custom domain test", PebbleInstall)
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
// not list gets no certificate.
func TestDomainACME(t *testing.T) {
	dns := dnstest.Start(t)
	httpsAddr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	httpAddr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	port := func(a string) int { _, p, _ := net.SplitHostPort(a); n, _ := strconv.Atoi(p); return n }
	pb := startPebble(t, dns.Addr, port(httpAddr), port(httpsAddr))
	for _, name := range []string{"shop.example", "www.shop.example", "unlisted.example"} {
		dns.Addrs(name, "127.0.0.1")
	}
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from "+r.Host)
	}))
	t.Cleanup(origin.Close)

	snap := appSnapshot(map[string]string{"shop.apps.test": origin.URL})
	snap.Domains = []snapshot.Domain{{Host: "shop.example", ProjectID: "prj_shop.apps.test"},
		{Host: "www.shop.example", ProjectID: "prj_shop.apps.test", RedirectTo: "shop.example"}}
	e, err := New(Config{HTTPAddr: httpAddr, HTTPSAddr: httpsAddr, AppsDomain: "apps.test", DataDir: t.TempDir(),
		ControlPlane: "http://127.0.0.1:1", Token: "svc_edge_unit", Locator: fixedLocator{'U', 'S'}, Logger: quiet,
		AllowPrivateNetworks: true, SyncWait: time.Second, ACME: &ACMEConfig{Email: "ops@platform.test", DirectoryURL: pb.directory}})
	if err != nil {
		t.Fatal(err)
	}
	// The edge's ACME client as configured, but trusting Pebble's own
	// HTTPS listener (ACME requires HTTPS; Pebble's certificate is not in
	// the system roots).
	e.acme.Client = &acme.Client{DirectoryURL: pb.directory, HTTPClient: pb.http}
	if err := e.Listen(); err != nil {
		e.Close()
		t.Fatal(err)
	}
	if err := e.apply(context.Background(), snap, nil); err != nil {
		e.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	})

	client := &http.Client{Timeout: 60 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pb.roots},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, httpsAddr)
			}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(client.CloseIdleConnections)
	resp, err := client.Get("https://shop.example/")
	if err != nil {
		t.Fatalf("HTTPS to the custom domain: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "hello from") {
		t.Fatalf("custom domain: %d %s", resp.StatusCode, body)
	}
	leaf := resp.TLS.PeerCertificates[0]
	if leaf.VerifyHostname("shop.example") != nil || !strings.Contains(leaf.Issuer.CommonName, "Pebble") {
		t.Fatalf("certificate for %v issued by %q", leaf.DNSNames, leaf.Issuer.CommonName)
	}
	// The www name gets its own certificate and redirects to the apex.
	resp, err = client.Get("https://www.shop.example/a?b=1")
	if err != nil {
		t.Fatalf("HTTPS to the www name: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "https://shop.example:"+strconv.Itoa(port(httpsAddr))+"/a?b=1" {
		t.Fatalf("www: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// A name not in the snapshot (unverified): no certificate is ordered.
	c, err := tls.Dial("tcp", httpsAddr, &tls.Config{RootCAs: pb.roots, ServerName: "unlisted.example"})
	if err == nil {
		c.Close()
		t.Fatal("a certificate for a name the snapshot does not list")
	}
}
