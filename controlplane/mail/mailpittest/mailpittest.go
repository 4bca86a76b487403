// Package mailpittest runs Mailpit, a real SMTP server with an HTTP API,
// for tests that deliver mail and read back what arrived. Only tests
// import it.
//
// Start looks for Mailpit on PATH or at $MAILPIT. Without it the test
// skips, naming the calling package and how to install Mailpit; when CI is
// set it fails instead, so the mail tests always run in CI (.ci/run
// installs Mailpit).
package mailpittest

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/platform/internal/freeport"
)

// Install is how Mailpit is installed (.ci/run does it).
const Install = "go install github.com/axllent/mailpit@v1.33.1"

// Options choose how Mailpit's SMTP side listens. The zero value is plain
// SMTP accepting every message.
type Options struct {
	// CertFile and KeyFile are the certificate (PEM) Mailpit offers for
	// STARTTLS; TLS, RequireStartTLS and ImplicitTLS need them.
	CertFile, KeyFile string
	// TLS offers STARTTLS.
	TLS bool
	// RequireStartTLS refuses clients that do not STARTTLS; ImplicitTLS
	// speaks TLS from the first byte (smtps).
	RequireStartTLS, ImplicitTLS bool
	// Auth accepts any user name and password (over TLS).
	Auth bool
	// Chaos lets the test make the server refuse (Refuse).
	Chaos bool
}

// Server is a running Mailpit.
type Server struct {
	t testing.TB
	// SMTP is the SMTP listener's address (host:port).
	SMTP string
	// API is the base URL of the HTTP API.
	API string
}

// Start runs Mailpit on free loopback ports until the test ends. Without
// Mailpit the test skips (or fails when CI is set), the message naming
// the calling package.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	bin := os.Getenv("MAILPIT")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("mailpit"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s: mailpit is not installed (%s)", caller(), Install)
			}
			t.Skipf("%s: mailpit is not installed (%s); skipping %s", caller(), Install, t.Name())
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
	if o.TLS || o.RequireStartTLS || o.ImplicitTLS {
		args = append(args, "--smtp-tls-cert", o.CertFile, "--smtp-tls-key", o.KeyFile)
	}
	if o.RequireStartTLS {
		args = append(args, "--smtp-require-starttls")
	}
	if o.ImplicitTLS {
		args = append(args, "--smtp-require-tls")
	}
	if o.Auth {
		args = append(args, "--smtp-auth-accept-any")
	}
	if o.Chaos {
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
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		seen := false
		for sc.Scan() {
			if !seen && strings.Contains(sc.Text(), "[http] accessible via") {
				seen = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("mailpit did not start")
	}
	// Mailpit logs its HTTP address before both listeners accept: wait
	// until each does.
	if err := freeport.WaitAccept(10*time.Second, httpAddr, smtpAddr); err != nil {
		t.Fatalf("mailpit's listener: %v", err)
	}
	return &Server{t: t, SMTP: smtpAddr, API: "http://" + httpAddr}
}

// caller names the package of the test that called Start (its last path
// element, as `go test` prints it).
func caller() string {
	pc, _, _, ok := runtime.Caller(2)
	if !ok {
		return "mailpittest"
	}
	name := runtime.FuncForPC(pc).Name() // path/to/pkg.Func or path/to/pkg.(*T).Method
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.IndexByte(name, '.'); i >= 0 {
		name = name[:i]
	}
	return name
}

// Address is an address as Mailpit's API shows it.
type Address struct {
	Name    string `json:"Name"`
	Address string `json:"Address"`
}

// Message is a received message as Mailpit's API shows it.
type Message struct {
	ID      string    `json:"ID"`
	From    Address   `json:"From"`
	To      []Address `json:"To"`
	ReplyTo []Address `json:"ReplyTo"`
	Subject string    `json:"Subject"`
	Text    string    `json:"Text"`
	HTML    string    `json:"HTML"`
}

// get reads path from the API into v (when not nil) and returns the body.
func (s *Server) get(path string, v any) []byte {
	s.t.Helper()
	resp, err := http.Get(s.API + path)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("mailpit GET %s: %d %s", path, resp.StatusCode, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			s.t.Fatalf("mailpit GET %s: %v: %s", path, err, b)
		}
	}
	return b
}

// Messages returns what arrived, newest first, each read in full.
func (s *Server) Messages() []Message {
	s.t.Helper()
	var list struct {
		Messages []struct {
			ID string `json:"ID"`
		} `json:"messages"`
	}
	s.get("/api/v1/messages", &list)
	out := make([]Message, len(list.Messages))
	for i, l := range list.Messages {
		s.get("/api/v1/message/"+l.ID, &out[i])
	}
	return out
}

// Raw returns a received message as it arrived.
func (s *Server) Raw(id string) []byte {
	s.t.Helper()
	return s.get("/api/v1/message/"+id+"/raw", nil)
}

// Refuse makes Mailpit answer RCPT TO with code (0: accept again). It needs
// Options.Chaos.
func (s *Server) Refuse(code int) {
	s.t.Helper()
	body := `{}`
	if code != 0 {
		body = `{"Recipient":{"ErrorCode":` + strconv.Itoa(code) + `,"Probability":100}}`
	}
	req, err := http.NewRequest(http.MethodPut, s.API+"/api/v1/chaos", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("mailpit chaos: %d", resp.StatusCode)
	}
}
