package agents

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/mail"
	"github.com/svcplatform/platform/controlplane/mail/mailpittest"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
)

// TestEmailTool: an agent sends e-mail as its project through the mail
// area: the message reaches the SMTP relay (read back from Mailpit) from
// the project's sender, its recipients are metered as e-mails, the plan's
// daily limit refuses what exceeds it (429 mail_rate_limited, the step
// fails and the run goes on), and only agents allowed to write may have
// the tool.
func TestEmailTool(t *testing.T) {
	mp := mailpittest.Start(t, mailpittest.Options{})
	e := newEnvWith(t, plans.Pro, func(e *env) {
		e.mailCfg = mail.Config{SMTPURL: "smtp://" + mp.SMTP, PerDay: map[plans.Name]int{plans.Pro: 2}}
	})
	id := e.agent(map[string]any{"tools": []string{"send_email", "emails_list"}, "allowWrites": true})
	e.model.set(
		mockReply{Calls: []mockCall{
			{"send_email", `{"to":["ada@example.com","bob@example.com"],"subject":"Your order shipped","text":"It is on its way."}`},
			{"send_email", `{"to":["cy@example.com"],"subject":"Over the limit","text":"Not sent."}`},
			{"send_email", `{"to":[],"subject":"No one","text":"x"}`},
			{"emails_list", `{"state":"queued"}`},
		}},
		mockReply{Text: "Sent one e-mail."},
	)
	x, r := e.run(id, "Tell Ada and Bob their order shipped.")
	if r.Status != http.StatusAccepted || x.Status != RunCompleted {
		t.Fatalf("run %d %+v: %s", r.Status, x, r.Body)
	}
	want := []struct {
		tool string
		ok   bool
		has  string
	}{
		{"send_email", true, `"state":"queued"`},
		{"send_email", false, "mail_rate_limited"},
		{"send_email", false, "to must hold 1 to 10 addresses"},
		{"emails_list", true, `"subject":"Your order shipped"`},
		{"", true, "Sent one e-mail."},
	}
	if len(x.Steps) != len(want) {
		t.Fatalf("steps %+v", x.Steps)
	}
	for i, w := range want {
		t.Run(fmt.Sprintf("step %d %s", i+1, w.tool), func(t *testing.T) {
			if s := x.Steps[i]; s.ToolName != w.tool || s.OK != w.ok || !strings.Contains(s.Result, w.has) {
				t.Errorf("step = %+v, want %+v", s, w)
			}
		})
	}
	// Delivered through the relay, from the project's sender.
	if _, err := e.jobs.RunDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := mp.Messages()
	if len(got) != 1 {
		t.Fatalf("%d messages arrived, want 1: %+v", len(got), got)
	}
	if m := got[0]; m.Subject != "Your order shipped" || len(m.To) != 2 || m.From.Address != "noreply@platform.test" || !strings.Contains(m.Text, "It is on its way.") {
		t.Errorf("message %+v", m)
	}
	// Two recipients metered as e-mails of the project.
	n, err := e.meter.Total(context.Background(), e.ws, e.project, metering.Emails, e.clk.Now().Add(-time.Hour), e.clk.Now().Add(time.Hour))
	if err != nil || n != 2 {
		t.Errorf("emails metered %v (%v), want 2", n, err)
	}
	// Sending is a write: an agent without allowWrites cannot have it.
	r = e.do(ownerKey, "POST", "/api/projects/"+e.project+"/agents", map[string]any{"name": "reader", "model": "gpt-4o-mini",
		"tools": []string{"send_email"}})
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "tool_needs_writes") {
		t.Fatalf("read-only agent with send_email: %d %s", r.Status, r.Body)
	}
	e.do(ownerKey, "POST", "/api/projects/"+e.project+"/agents", map[string]any{"name": "reader", "model": "gpt-4o-mini",
		"tools": []string{"emails_list"}}).OK(t, nil)
}
