package agents

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/platform/internal/freeport"
)

// mailpitInstall is how Mailpit, the SMTP server the mail tests deliver
// to, is installed (.ci/run does it).
const mailpitInstall = "go install github.com/axllent/mailpit@v1.33.1"

// mailpit is a running Mailpit: its SMTP address and HTTP API.
type mailpit struct {
	t         *testing.T
	smtp, api string
}

// startMailpit runs Mailpit (on PATH, or at $MAILPIT) on free loopback
// ports until the test ends. Without it the test skips naming the package
// and how to install it, or fails when CI is set.
func startMailpit(t *testing.T) *mailpit {
	t.Helper()
	bin := os.Getenv("MAILPIT")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("mailpit"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("agents: mailpit is not installed (%s)", mailpitInstall)
			}
			t.Skipf("agents: mailpit is not installed (%s); skipping the e-mail tool test", mailpitInstall)
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
	cmd := exec.Command(bin, "--smtp", smtpAddr, "--listen", httpAddr, "--database", filepath.Join(t.TempDir(), "mailpit.db"),
		"--smtp-disable-rdns", "--disable-version-check")
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
	return &mailpit{t: t, smtp: smtpAddr, api: "http://" + httpAddr}
}

// mpMessage is a received message as Mailpit's API shows it.
type mpMessage struct {
	From struct {
		Address string `json:"Address"`
	} `json:"From"`
	To []struct {
		Address string `json:"Address"`
	} `json:"To"`
	Subject string `json:"Subject"`
	Text    string `json:"Text"`
}

func (m *mailpit) get(path string, v any) {
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
	if err := json.Unmarshal(b, v); err != nil {
		m.t.Fatalf("mailpit GET %s: %v", path, err)
	}
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
