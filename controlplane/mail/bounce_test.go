package mail

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/smtp"
	"net/textproto"
	"regexp"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/mail/mailpittest"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"github.com/svcplatform/platform/controlplane/usage"
	"github.com/svcplatform/platform/internal/freeport"
)

// startBounces runs the fixture's bounce listener on a port of the test's
// choosing until the test ends and returns its address.
func (f *fixture) startBounces() string {
	f.t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		f.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.svc.ServeBounces(ctx, ln) }()
	f.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			f.t.Error(err)
		}
	})
	return ln.Addr().String()
}

// deliverReport sends msg to rcpt over SMTP from the null sender, as a
// reporting MTA does, and returns the first refusal.
func deliverReport(t *testing.T, addr, rcpt, msg string) error {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("mx.example.com"); err != nil {
		return err
	}
	if err := c.Mail(""); err != nil {
		return err
	}
	if err := c.Rcpt(rcpt); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte(msg)); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

func smtpCode(err error) int {
	var e *textproto.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// verpOf is the envelope sender a message was sent with.
func (f *fixture) verpOf(id string) string {
	f.t.Helper()
	r, err := getMessage(context.Background(), f.db, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return r.EnvelopeFrom
}

var verpPattern = regexp.MustCompile(`^bounces\+[a-z2-7]{26}@bounce\.platform\.test$`)

// TestBounceListener: reports delivered over SMTP to a sent message's
// VERP address mark it and suppress hard-bounced and complaining
// recipients (delays and soft bounces only recorded); unknown addresses,
// oversized messages and mail that is no report are refused.
func TestBounceListener(t *testing.T) { eachEngine(t, testBounceListener) }

func testBounceListener(t *testing.T, e pgtest.Engine) {
	for _, c := range []struct {
		name       string
		to         string
		report     func(rcpt string) string
		bounce     string
		suppressed bool
		code       int // SMTP refusal expected, 0 for none
	}{
		{name: "Postfix hard bounce", to: "ada@example.com", report: postfixHard, bounce: EventBounce, suppressed: true},
		{name: "Exchange hard bounce", to: "bob@example.org", report: exchangeHard, bounce: EventBounce, suppressed: true},
		{name: "Postfix delayed", to: "ada@example.com", report: postfixDelayed, bounce: EventDelayed},
		{name: "Gmail-style mailbox full", to: "ada@example.com", report: gmailSoft, bounce: EventSoftBounce},
		{name: "ARF complaint", to: "ada@example.com", report: arf, bounce: EventComplaint, suppressed: true},
		{name: "report about someone else", to: "ada@example.com", report: func(string) string { return postfixHard("eve@example.com") }},
		{name: "not a report", to: "ada@example.com", report: func(string) string { return plainReply }, code: 554},
		{name: "oversized", to: "ada@example.com", report: func(r string) string { return postfixHard(r) + strings.Repeat("x", 70) + "\r\n" }, code: 552},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, e, Config{BounceDomain: "bounce.platform.test", BounceMaxBytes: len(postfixHard(c.to)) + 64})
			addr := f.startBounces()
			em := f.send(map[string]any{"to": []string{c.to}, "subject": "Order 17", "text": "hi"})
			f.runDue()
			verp := f.verpOf(em.ID)
			if !verpPattern.MatchString(verp) || strings.Contains(verp, "example") {
				t.Fatalf("envelope sender %q is not a VERP address of the bounce domain", verp)
			}
			err := deliverReport(t, addr, verp, c.report(c.to))
			if smtpCode(err) != c.code || c.code == 0 && err != nil {
				t.Fatalf("delivery: %v, want code %d", err, c.code)
			}
			got := f.email(em.ID)
			switch {
			case c.bounce == "" && got.Bounce != nil:
				t.Fatalf("bounce = %+v, want none", got.Bounce)
			case c.bounce != "" && (got.Bounce == nil || got.Bounce.Type != c.bounce || got.Bounce.Recipient != c.to):
				t.Fatalf("bounce = %+v, want %s of %s", got.Bounce, c.bounce, c.to)
			}
			var page SuppressionPage
			f.must(http.StatusOK, "viewer", "GET", "/api/projects/prj_a/email-suppressions", nil).Decode(t, &page)
			if (len(page.Suppressions) == 1) != c.suppressed {
				t.Fatalf("suppressions = %+v", page.Suppressions)
			}
			again := f.call("dev", "POST", "/api/projects/prj_a/emails", map[string]any{"to": []string{strings.ToUpper(c.to)}, "subject": "Again", "text": "hi"})
			if !c.suppressed {
				if again.Status != http.StatusAccepted {
					t.Fatalf("resend: %d %s", again.Status, again.Body)
				}
				return
			}
			if again.Status != http.StatusUnprocessableEntity || again.Code() != CodeSuppressed || !strings.Contains(string(again.Body), "email-suppressions") {
				t.Fatalf("resend to a suppressed address: %d %s", again.Status, again.Body)
			}
			if s := page.Suppressions[0]; s.Address != c.to || s.EmailID != em.ID {
				t.Fatalf("suppression = %+v", s)
			}
			f.must(http.StatusNotFound, "dev", "DELETE", "/api/projects/prj_a/email-suppressions/nobody@example.com", nil)
			f.must(http.StatusForbidden, "viewer", "DELETE", "/api/projects/prj_a/email-suppressions/"+c.to, nil)
			f.must(http.StatusNotFound, "stranger", "GET", "/api/projects/prj_a/email-suppressions", nil)
			items, err := f.svc.Attention(context.Background(), "ws_a")
			if err != nil || !hasKind(items, KindMailBounces) {
				t.Fatalf("attention = %+v, %v; want %s", items, err, KindMailBounces)
			}
			f.must(http.StatusOK, "dev", "DELETE", "/api/projects/prj_a/email-suppressions/"+c.to, nil)
			f.must(http.StatusAccepted, "dev", "POST", "/api/projects/prj_a/emails", map[string]any{"to": []string{c.to}, "subject": "Again", "text": "hi"})
		})
	}
}

func hasKind(items []usage.Item, kind string) bool {
	for _, it := range items {
		if it.Kind == kind {
			return true
		}
	}
	return false
}

// TestBounceListenerRefusals: the listener takes mail only for VERP
// addresses of messages the platform sent, within its limits.
func TestBounceListenerRefusals(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{BounceDomain: "bounce.platform.test", BounceMaxBytes: 4096})
	addr := f.startBounces()
	em := f.send(map[string]any{"to": []string{"ada@example.com"}, "subject": "Order 17", "text": "hi"})
	f.runDue()
	verp := f.verpOf(em.ID)
	tok := strings.TrimSuffix(strings.TrimPrefix(verp, "bounces+"), "@bounce.platform.test")
	for _, c := range []struct {
		name, rcpt string
		code       int
	}{
		{"unknown token", "bounces+" + strings.Repeat("a", 26) + "@bounce.platform.test", 550},
		{"token of another domain", "bounces+" + tok + "@platform.test", 550},
		{"other local part", "postmaster@bounce.platform.test", 550},
		{"malformed token", "bounces+" + tok[:20] + "@bounce.platform.test", 550},
		{"recipient in clear", "bounces+ada=example.com@bounce.platform.test", 550},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := deliverReport(t, addr, c.rcpt, postfixHard("ada@example.com")); smtpCode(err) != c.code {
				t.Fatalf("err = %v, want %d", err, c.code)
			}
		})
	}
	t.Run("declared size over the limit", func(t *testing.T) {
		c, err := smtp.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Hello("mx.example.com"); err != nil {
			t.Fatal(err)
		}
		id, err := c.Text.Cmd("MAIL FROM:<> SIZE=999999")
		if err != nil {
			t.Fatal(err)
		}
		c.Text.StartResponse(id)
		code, _, err := c.Text.ReadResponse(250)
		c.Text.EndResponse(id)
		if code != 552 {
			t.Fatalf("MAIL with SIZE over the limit: %d %v", code, err)
		}
	})
	t.Run("oversized body", func(t *testing.T) {
		if err := deliverReport(t, addr, verp, postfixHard("ada@example.com")+strings.Repeat("x", 5000)+"\r\n"); smtpCode(err) != 552 {
			t.Fatalf("err = %v, want 552", err)
		}
		if f.email(em.ID).Bounce != nil {
			t.Fatal("an oversized report was recorded")
		}
	})
	t.Run("long line", func(t *testing.T) {
		c, err := smtp.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		id, _ := c.Text.Cmd("NOOP %s", strings.Repeat("x", 2000))
		c.Text.StartResponse(id)
		code, _, _ := c.Text.ReadResponse(250)
		c.Text.EndResponse(id)
		if code != 500 {
			t.Fatalf("long line: %d", code)
		}
	})
	t.Run("too many connections", func(t *testing.T) {
		g := newFixture(t, pgtest.Engines()[0], Config{BounceDomain: "bounce.platform.test", BounceMaxConns: 1})
		a := g.startBounces()
		first, err := smtp.Dial(a) // holds the only slot
		if err != nil {
			t.Fatal(err)
		}
		defer first.Close()
		conn, err := net.Dial("tcp", a)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		code, _, err := textproto.NewConn(conn).ReadResponse(220)
		if code != 421 {
			t.Fatalf("second connection: %d %v", code, err)
		}
	})
}

// TestBounceAfterMailpitDelivery: a message delivered through a real SMTP
// server (Mailpit) carries its VERP address as the envelope sender; a DSN
// sent back to that address marks it bounced and suppresses the address.
func TestBounceAfterMailpitDelivery(t *testing.T) {
	mp := mailpittest.Start(t, mailpittest.Options{})
	f := newFixture(t, pgtest.Engines()[0], Config{SMTPURL: relayURL("smtp", "", mp, ""), BounceDomain: "bounce.platform.test"})
	addr := f.startBounces()
	em := f.send(map[string]any{"to": []string{"Ada <ada@example.com>"}, "subject": "Order 17", "text": "hi"})
	f.runDue()
	if got := f.email(em.ID); got.State != StateSent {
		t.Fatalf("email = %+v", got)
	}
	msgs := mp.Messages()
	if len(msgs) != 1 {
		t.Fatalf("mailpit has %d messages", len(msgs))
	}
	raw := string(mp.Raw(msgs[0].ID))
	m := regexp.MustCompile(`(?mi)^Return-Path: <([^>]+)>`).FindStringSubmatch(raw)
	if m == nil || !verpPattern.MatchString(m[1]) {
		t.Fatalf("no VERP Return-Path in what arrived:\n%s", raw[:min(len(raw), 600)])
	}
	if err := deliverReport(t, addr, m[1], postfixHard("ada@example.com")); err != nil {
		t.Fatal(err)
	}
	got := f.email(em.ID)
	if got.Bounce == nil || got.Bounce.Type != EventBounce || got.Bounce.Status != "5.1.1" || !strings.Contains(got.Bounce.Diagnostic, "User unknown") {
		t.Fatalf("email = %+v", got)
	}
	r := f.call("dev", "POST", "/api/projects/prj_a/emails", map[string]any{"to": []string{"ada@example.com"}, "subject": "Again", "text": "hi"})
	if r.Status != http.StatusUnprocessableEntity || r.Code() != CodeSuppressed {
		t.Fatalf("resend: %d %s", r.Status, r.Body)
	}
}
