package payments

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/mail"
	"github.com/svcplatform/platform/controlplane/metering"
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
				t.Fatalf("payments: mailpit is not installed (%s)", mailpitInstall)
			}
			t.Skipf("payments: mailpit is not installed (%s); skipping the receipt and notice tests", mailpitInstall)
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

// mailEnv is the payments test environment with the mail area delivering
// to Mailpit through a jobs runner the test drives.
type mailEnv struct {
	*env
	mp     *mailpit
	mail   *mail.Service
	runner *jobs.Runner
}

// assemblyMailer is payments' Mailer as the assembly builds it: receipts
// through the mail area as the project, notices as the platform's own mail
// to the workspace's active owners.
type assemblyMailer struct {
	m   *mail.Service
	acc *accounts.Service
}

func (a *assemblyMailer) SendAsProject(ctx context.Context, workspace, project, idemKey string, m Mail) error {
	_, err := a.m.SendAs(ctx, workspace, project, mail.SourceReceipt, idemKey, mail.SendRequest{To: mail.Recipients{m.To}, Subject: m.Subject, Text: m.Text})
	return err
}

func (a *assemblyMailer) NotifyOwners(ctx context.Context, workspace string, m Mail) error {
	members, err := a.acc.Members(ctx, workspace)
	if err != nil {
		return err
	}
	for _, mb := range members {
		if mb.Role == auth.Owner && mb.Status == "active" {
			if err := a.m.Send(ctx, accounts.Message{To: mb.Email, Subject: m.Subject, Body: m.Text}); err != nil {
				return err
			}
		}
	}
	return nil
}

func newMailEnv(t *testing.T, opts envOptions) *mailEnv {
	t.Helper()
	mp := startMailpit(t)
	am := &assemblyMailer{}
	prev := opts.deps
	opts.deps = func(d *Deps) {
		if prev != nil {
			prev(d)
		}
		d.Mailer = am
	}
	e := newEnv(t, opts)
	runner, err := jobs.New(jobs.Config{}, jobs.Deps{DB: e.db, Clock: e.clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Close() })
	sealer := e.svc.d.Sealer
	ms, err := mail.New(mail.Config{SMTPURL: "smtp://" + mp.smtp, From: "Platform <noreply@platform.test>"},
		mail.Deps{DB: e.db, Clock: e.clk, Sealer: sealer, Meter: e.svc.d.Meter.(*metering.Meter), Jobs: runner, Projects: e.prj, Plans: e.acc,
			Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	am.m, am.acc = ms, e.acc
	return &mailEnv{env: e, mp: mp, mail: ms, runner: runner}
}

// runReceipts runs the queued receipt jobs as the jobs runner would, then
// delivers the mail they queued.
func (e *mailEnv) runReceipts() {
	e.t.Helper()
	h := e.jobs.others[JobReceipt]
	if h == nil {
		e.t.Fatal("no receipt job registered")
	}
	for _, k := range e.jobs.enqueued {
		id, ok := strings.CutPrefix(k, "receipt:")
		if !ok {
			continue
		}
		b, _ := json.Marshal(receiptJob{Payment: id})
		if err := h(context.Background(), jobs.Job{Payload: b}); err != nil {
			e.t.Fatalf("receipt job %s: %v", id, err)
		}
	}
	if _, err := e.runner.RunDue(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}
