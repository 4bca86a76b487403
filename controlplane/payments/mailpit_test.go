package payments

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/mail"
	"github.com/svcplatform/platform/controlplane/mail/mailpittest"
	"github.com/svcplatform/platform/controlplane/metering"
)

// mailEnv is the payments test environment with the mail area delivering
// to Mailpit through a jobs runner the test drives.
type mailEnv struct {
	*env
	mp     *mailpittest.Server
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
	mp := mailpittest.Start(t, mailpittest.Options{})
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
	ms, err := mail.New(mail.Config{SMTPURL: "smtp://" + mp.SMTP, From: "Platform <noreply@platform.test>"},
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
