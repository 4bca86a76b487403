package mail

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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/platform/internal/freeport"
)

// MailpitInstall is how Mailpit, the SMTP server the relay tests deliver
// to, is installed (.ci/run does it).
const MailpitInstall = "go install github.com/axllent/mailpit@v1.33.1"

// mailpit is a running Mailpit: its SMTP address and its HTTP API.
type mailpit struct {
	t    *testing.T
	smtp string
	api  string
}

// mailpitOptions choose how Mailpit's SMTP side listens.
type mailpitOptions struct {
	// tls offers STARTTLS with a certificate of certs.
	tls bool
	// requireStartTLS refuses clients that do not STARTTLS; implicitTLS
	// speaks TLS from the first byte (smtps).
	requireStartTLS, implicitTLS bool
	// auth accepts any user name and password (over TLS).
	auth bool
	// chaos lets the test make the server refuse (PUT /api/v1/chaos).
	chaos bool
}

// startMailpit runs Mailpit (on PATH, or at $MAILPIT) on free loopback
// ports, stopped when the test ends. Without it the test skips naming how
// to install it, or fails when CI is set.
func startMailpit(t *testing.T, o mailpitOptions, c *testCerts) *mailpit {
	t.Helper()
	bin := os.Getenv("MAILPIT")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("mailpit"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("mailpit is not installed (%s)", MailpitInstall)
			}
			t.Skipf("mailpit is not installed (%s); skipping the SMTP relay tests", MailpitInstall)
		}
	}
	smtpAddr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	httpAddr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--smtp", smtpAddr, "--listen", httpAddr, "--database", filepath.Join(t.TempDir(), "mailpit.db"),
		"--smtp-disable-rdns", "--disable-version-check"}
	if o.tls || o.requireStartTLS || o.implicitTLS {
		args = append(args, "--smtp-tls-cert", c.certFile, "--smtp-tls-key", c.keyFile)
	}
	if o.requireStartTLS {
		args = append(args, "--smtp-require-starttls")
	}
	if o.implicitTLS {
		args = append(args, "--smtp-require-tls")
	}
	if o.auth {
		args = append(args, "--smtp-auth-accept-any")
	}
	if o.chaos {
		args = append(args, "--enable-chaos")
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	var logs bytes.Buffer
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		seen := false
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			if !seen && strings.Contains(sc.Text(), "[http] accessible via") {
				seen = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("mailpit did not start")
	}
	m := &mailpit{t: t, smtp: smtpAddr, api: "http://" + httpAddr}
	// The SMTP listener opens beside the HTTP one: wait until it accepts.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", smtpAddr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mailpit's SMTP listener %s does not accept: %v", smtpAddr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return m
}

// mpAddress is an address as Mailpit's API shows it.
type mpAddress struct {
	Name    string `json:"Name"`
	Address string `json:"Address"`
}

// mpMessage is a received message as Mailpit's API shows it.
type mpMessage struct {
	ID      string      `json:"ID"`
	From    mpAddress   `json:"From"`
	To      []mpAddress `json:"To"`
	ReplyTo []mpAddress `json:"ReplyTo"`
	Subject string      `json:"Subject"`
	Text    string      `json:"Text"`
	HTML    string      `json:"HTML"`
}

func (m *mailpit) get(path string, v any) []byte {
	m.t.Helper()
	resp, err := http.Get(m.api + path)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		m.t.Fatalf("mailpit GET %s: %d %s", path, resp.StatusCode, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			m.t.Fatalf("mailpit GET %s: %v: %s", path, err, b)
		}
	}
	return b
}

// messages returns what arrived, newest first, each read in full.
func (m *mailpit) messages() []mpMessage {
	m.t.Helper()
	var list struct {
		Messages []struct {
			ID string `json:"ID"`
		} `json:"messages"`
	}
	m.get("/api/v1/messages", &list)
	out := make([]mpMessage, len(list.Messages))
	for i, l := range list.Messages {
		m.get("/api/v1/message/"+l.ID, &out[i])
	}
	return out
}

// raw returns a received message as it arrived.
func (m *mailpit) raw(id string) []byte {
	m.t.Helper()
	return m.get("/api/v1/message/"+id+"/raw", nil)
}

// refuse makes Mailpit answer RCPT TO with code (0: accept again).
func (m *mailpit) refuse(code int) {
	m.t.Helper()
	body := `{}`
	if code != 0 {
		body = `{"Recipient":{"ErrorCode":` + strconv.Itoa(code) + `,"Probability":100}}`
	}
	req, _ := http.NewRequest(http.MethodPut, m.api+"/api/v1/chaos", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		m.t.Fatalf("mailpit chaos: %d", resp.StatusCode)
	}
}

// testCerts is a CA and a certificate it signed for 127.0.0.1 and
// localhost, on disk for Mailpit.
type testCerts struct {
	pool              *x509.CertPool
	certFile, keyFile string
}

func newTestCerts(t *testing.T) *testCerts {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mail test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := &testCerts{pool: x509.NewCertPool(), certFile: filepath.Join(dir, "cert.pem"), keyFile: filepath.Join(dir, "key.pem")}
	c.pool.AddCert(caCert)
	if err := os.WriteFile(c.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// tlsConfig trusts the test CA.
func (c *testCerts) tlsConfig() *tls.Config {
	return &tls.Config{RootCAs: c.pool, MinVersion: tls.VersionTLS12}
}
