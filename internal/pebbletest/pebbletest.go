// Package pebbletest runs Let's Encrypt's Pebble, a test ACME CA, for the
// tests that order certificates (edge, controlplane/certs).
package pebbletest

import (
	"bufio"
	"bytes"
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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/platform/internal/freeport"
)

// Install is how Pebble, Let's Encrypt's test ACME CA, is installed
// (.ci/run does it).
const Install = "go install github.com/letsencrypt/pebble/v2/cmd/pebble@v2.10.3"

// CA is a running Pebble resolving names at a test DNS server and
// validating challenges at the ports a test chose.
type CA struct {
	Directory string         // the ACME directory URL
	HTTP      *http.Client   // trusts Pebble's own HTTPS listener
	Roots     *x509.CertPool // the root Pebble issues under
}

// Start runs Pebble (on PATH, or at $PEBBLE) until the test ends,
// validating tls-alpn-01 at tlsPort and http-01 at httpPort of the
// addresses dnsAddr resolves names to. Without it the test skips, naming
// pkg (the package whose tests need it) and how to install it, or fails
// when CI is set.
func Start(t testing.TB, dnsAddr string, httpPort, tlsPort int, pkg string) *CA {
	t.Helper()
	bin := os.Getenv("PEBBLE")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("pebble"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s: pebble is not installed (%s)", pkg, Install)
			}
			t.Skipf("%s: pebble is not installed (%s); skipping the ACME tests", pkg, Install)
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
	if err := freeport.WaitAccept(10*time.Second, listen, mgmt); err != nil {
		t.Fatalf("pebble's listener: %v", err)
	}
	api := x509.NewCertPool()
	api.AddCert(listenerCert)
	trusting := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: api}}
	t.Cleanup(trusting.CloseIdleConnections)
	pb := &CA{Directory: "https://" + listen + "/dir", HTTP: &http.Client{Transport: trusting, Timeout: 30 * time.Second}}
	resp, err := pb.HTTP.Get("https://" + mgmt + "/roots/0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rootPEM, _ := io.ReadAll(resp.Body)
	roots := x509.NewCertPool()
	if resp.StatusCode != 200 || !roots.AppendCertsFromPEM(rootPEM) {
		t.Fatalf("pebble root: %d %s", resp.StatusCode, rootPEM)
	}
	pb.Roots = roots
	return pb
}

// writeLoopbackCert writes a self-signed certificate for 127.0.0.1 and
// localhost (Pebble's own HTTPS listener) and returns the file names.
func writeLoopbackCert(t testing.TB, dir string) (certFile, keyFile string, cert *x509.Certificate) {
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
