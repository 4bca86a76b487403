package mail

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/mail/mailpittest"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"github.com/svcplatform/platform/controlplane/usage"
	"github.com/svcplatform/platform/internal/dnstest"
)

const relayPassword = "relay-secret-7731"

// relayURL is the fixture's relay address for m.
func relayURL(scheme, auth string, m *mailpittest.Server, query string) string {
	u := scheme + "://" + auth + m.SMTP
	if query != "" {
		u += "?" + query
	}
	return u
}

// TestRelayDelivery delivers through Mailpit over each way of reaching a
// relay, and reads what arrived through Mailpit's API; relays that cannot
// be reached safely leave the message queued with the reason.
func TestRelayDelivery(t *testing.T) {
	certs := newTestCerts(t)
	for _, c := range []struct {
		name   string
		mp     mailpittest.Options
		scheme string
		auth   string
		query  string
		tls    *tls.Config
		sent   bool
		reason string
	}{
		{name: "plain, no STARTTLS offered", scheme: "smtp", sent: true},
		{name: "STARTTLS when offered", mp: mailpittest.Options{TLS: true}, scheme: "smtp", tls: certs.tlsConfig(), sent: true},
		{name: "STARTTLS required by the relay, with AUTH", mp: mailpittest.Options{RequireStartTLS: true, Auth: true}, scheme: "smtp",
			auth: "mailer:" + relayPassword + "@", query: "starttls=required", tls: certs.tlsConfig(), sent: true},
		{name: "implicit TLS (smtps), with AUTH", mp: mailpittest.Options{ImplicitTLS: true, Auth: true}, scheme: "smtps",
			auth: "mailer:" + relayPassword + "@", tls: certs.tlsConfig(), sent: true},
		{name: "STARTTLS required, none offered", scheme: "smtp", query: "starttls=required", reason: "STARTTLS"},
		{name: "relay certificate not trusted", mp: mailpittest.Options{RequireStartTLS: true}, scheme: "smtp", reason: "certificate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mp := startMailpit(t, c.mp, certs)
			f := newFixture(t, pgtest.Engines()[0], Config{SMTPURL: relayURL(c.scheme, c.auth, mp, c.query), TLS: c.tls})
			f.prj.Update("prj_a", func(p *projects.Project) { p.MailSenderName, p.MailReplyTo = "Shop", "help@shop.example" })
			em := f.send(map[string]any{"to": []string{"Ada <ada@example.com>", "bob@example.org"}, "subject": "Order 17", "text": "plain body", "html": "<b>html body</b>"})
			f.runDue()
			got := f.email(em.ID)
			checkErr := f.svc.CheckRelay(context.Background())
			if !c.sent {
				if got.State != StateQueued || got.Attempts != 1 || !strings.Contains(got.LastError, c.reason) || checkErr == nil {
					t.Fatalf("email = %+v; CheckRelay = %v; want queued for retry with %q", got, checkErr, c.reason)
				}
				if len(mp.Messages()) != 0 {
					t.Fatal("a message arrived")
				}
				return
			}
			if got.State != StateSent || checkErr != nil {
				t.Fatalf("email = %+v; CheckRelay = %v", got, checkErr)
			}
			msgs := mp.Messages()
			if len(msgs) != 1 {
				t.Fatalf("mailpit has %d messages", len(msgs))
			}
			m := msgs[0]
			if m.From.Address != "noreply@platform.test" || m.From.Name != "Shop" || len(m.To) != 2 || m.To[0].Address != "ada@example.com" ||
				m.To[1].Address != "bob@example.org" || m.Subject != "Order 17" || strings.TrimSpace(m.Text) != "plain body" ||
				!strings.Contains(m.HTML, "<b>html body</b>") || len(m.ReplyTo) != 1 || m.ReplyTo[0].Address != "help@shop.example" {
				t.Fatalf("arrived = %+v", m)
			}
			for _, s := range []string{f.logs.String(), got.LastError, f.svc.Describe()} {
				if strings.Contains(s, relayPassword) {
					t.Fatalf("the relay password shows: %s", s)
				}
			}
		})
	}
}

// TestRetryAfterRelayRefuses: a relay answering 451 leaves the message
// queued with the reason, retried after the backoff (30 s, then 1 min)
// until the relay takes it; nothing arrives twice.
func TestRetryAfterRelayRefuses(t *testing.T) { eachEngine(t, testRetryAfterRelayRefuses) }

func testRetryAfterRelayRefuses(t *testing.T, e pgtest.Engine) {
	mp := startMailpit(t, mailpittest.Options{Chaos: true}, nil)
	f := newFixture(t, e, Config{SMTPURL: relayURL("smtp", "", mp, "")})
	mp.Refuse(451)
	em := f.send(map[string]any{"to": "ada@example.com", "subject": "s", "text": "t"})
	f.runDue()
	got := f.email(em.ID)
	if got.State != StateQueued || got.Attempts != 1 || got.SMTPCode != 451 || !strings.Contains(got.LastError, "451") {
		t.Fatalf("after a 451: %+v", got)
	}
	f.clk.Advance(29 * time.Second)
	f.runDue()
	if got := f.email(em.ID); got.Attempts != 1 {
		t.Fatalf("retried before the backoff: %+v", got)
	}
	f.clk.Advance(time.Second)
	f.runDue()
	if got := f.email(em.ID); got.Attempts != 2 || got.State != StateQueued {
		t.Fatalf("second attempt: %+v", got)
	}
	mp.Refuse(0)
	f.clk.Advance(time.Minute)
	f.runDue()
	got = f.email(em.ID)
	if got.State != StateSent || got.Attempts != 3 || got.LastError != "" || got.SMTPCode != 0 {
		t.Fatalf("after the relay accepts: %+v", got)
	}
	f.clk.Advance(time.Hour)
	f.runDue()
	if n := len(mp.Messages()); n != 1 {
		t.Fatalf("mailpit has %d messages", n)
	}
}

// TestPermanentRefusal: a 5xx answer fails the message at once with the
// relay's reason, drops its content, and shows on the attention list.
func TestPermanentRefusal(t *testing.T) {
	mp := startMailpit(t, mailpittest.Options{Chaos: true}, nil)
	f := newFixture(t, pgtest.Engines()[0], Config{SMTPURL: relayURL("smtp", "", mp, "")})
	mp.Refuse(550)
	em := f.send(map[string]any{"to": "ada@example.com", "subject": "s", "text": "t"})
	f.runDue()
	got := f.email(em.ID)
	if got.State != StateFailed || got.SMTPCode != 550 || !strings.Contains(got.FailureReason, "550") || got.FailedAt == nil || got.LastError != "" {
		t.Fatalf("after a 550: %+v", got)
	}
	var sealed []byte
	f.db.QueryRowContext(context.Background(), `SELECT content_sealed FROM mail_messages WHERE id = ?`, em.ID).Scan(&sealed)
	if sealed != nil {
		t.Fatal("content kept after failing")
	}
	mp.Refuse(0)
	f.clk.Advance(time.Hour)
	f.runDue()
	if got := f.email(em.ID); got.State != StateFailed || got.Attempts != 1 || len(mp.Messages()) != 0 {
		t.Fatalf("a failed message was tried again: %+v", got)
	}
	items, err := f.svc.Attention(context.Background(), "ws_a")
	if err != nil || len(items) != 1 || items[0].Kind != KindMailFailed || items[0].Severity != usage.Warning ||
		!strings.Contains(items[0].Reason, "1 e-mails of project Shop failed") || items[0].Link.API != "/api/projects/prj_a/emails?state=failed" {
		t.Fatalf("attention = %+v, %v", items, err)
	}
	f.clk.Advance(FailedWithin)
	if items, _ := f.svc.Attention(context.Background(), "ws_a"); len(items) != 0 {
		t.Fatalf("a week later: %+v", items)
	}
}

// TestGiveUpAfterLastAttempt: a relay that keeps answering 451 fails the
// message on its last attempt.
func TestGiveUpAfterLastAttempt(t *testing.T) {
	mp := startMailpit(t, mailpittest.Options{Chaos: true}, nil)
	f := newFixture(t, pgtest.Engines()[0], Config{SMTPURL: relayURL("smtp", "", mp, ""), MaxAttempts: 2})
	mp.Refuse(451)
	em := f.send(map[string]any{"to": "ada@example.com", "subject": "s", "text": "t"})
	f.runDue()
	f.clk.Advance(30 * time.Second)
	f.runDue()
	got := f.email(em.ID)
	if got.State != StateFailed || !strings.HasPrefix(got.FailureReason, "gave up after 2 attempts: ") || !strings.Contains(got.FailureReason, "451") {
		t.Fatalf("after the last attempt: %+v", got)
	}
}

// TestPlatformMailThroughRelay: the platform's own mail is tried at once;
// a temporary refusal leaves it queued for the job (Send still succeeds),
// a permanent one is Send's error.
func TestPlatformMailThroughRelay(t *testing.T) {
	mp := startMailpit(t, mailpittest.Options{Chaos: true}, nil)
	f := newFixture(t, pgtest.Engines()[0], Config{SMTPURL: relayURL("smtp", "", mp, "")})
	ctx := context.Background()
	if err := f.svc.Send(ctx, accounts.Message{To: "owner@example.com", Subject: "Verify", Body: "token one"}); err != nil {
		t.Fatal(err)
	}
	if msgs := mp.Messages(); len(msgs) != 1 || msgs[0].To[0].Address != "owner@example.com" || !strings.Contains(msgs[0].Text, "token one") {
		t.Fatalf("arrived = %+v", msgs)
	}
	mp.Refuse(451)
	if err := f.svc.Send(ctx, accounts.Message{To: "owner@example.com", Subject: "Verify", Body: "token two"}); err != nil {
		t.Fatalf("temporary refusal: %v", err)
	}
	mp.Refuse(0)
	f.clk.Advance(30 * time.Second)
	f.runDue()
	if n := len(mp.Messages()); n != 2 {
		t.Fatalf("after the retry mailpit has %d messages", n)
	}
	mp.Refuse(550)
	if err := f.svc.Send(ctx, accounts.Message{To: "owner@example.com", Subject: "Verify", Body: "token three"}); err == nil || !strings.Contains(err.Error(), "550") {
		t.Fatalf("permanent refusal: %v", err)
	}
}

// TestDKIMSignedDelivery: mail from a project's verified sending domain
// goes from its mailFrom and arrives with a DKIM signature that verifies
// against the record published in DNS (go-msgauth's verifier, over the
// test DNS server); an altered copy fails. Once the domain is removed, the
// project's mail goes from the platform's address, unsigned.
func TestDKIMSignedDelivery(t *testing.T) {
	dns := dnstest.Start(t)
	mp := startMailpit(t, mailpittest.Options{}, nil)
	f := newFixture(t, pgtest.Engines()[0], Config{SMTPURL: relayURL("smtp", "", mp, ""), DNSResolver: dns.Addr, DKIMKeyBits: 2048})
	d := f.addDomain("shop.example")
	publish(dns, d)
	if v := f.verify(d.ID); v.State != DomainVerified {
		t.Fatalf("verify = %+v", v)
	}
	f.prj.Update("prj_a", func(p *projects.Project) { p.MailSenderName, p.MailFrom = "Shop", "hello@shop.example" })
	em := f.send(map[string]any{"to": "ada@example.com", "subject": "Receipt", "text": "Paid.", "replyTo": "desk@shop.example"})
	if em.From != `"Shop" <hello@shop.example>` {
		t.Fatalf("from = %s", em.From)
	}
	f.runDue()
	msgs := mp.Messages()
	if len(msgs) != 1 || msgs[0].From.Address != "hello@shop.example" {
		t.Fatalf("arrived = %+v", msgs)
	}
	raw := mp.Raw(msgs[0].ID)
	lookup := func(domain string) ([]string, error) { return f.svc.resolver.LookupTXT(context.Background(), domain) }
	vs, err := dkim.VerifyWithOptions(bytes.NewReader(raw), &dkim.VerifyOptions{LookupTXT: lookup})
	if err != nil || len(vs) != 1 || vs[0].Err != nil || vs[0].Domain != "shop.example" {
		var verr error
		if len(vs) == 1 {
			verr = vs[0].Err
		}
		t.Fatalf("DKIM verification = %+v (%v), %v:\n%s", vs, verr, err, raw)
	}
	signed := strings.ToLower(strings.Join(vs[0].HeaderKeys, ","))
	for _, h := range []string{"from", "to", "subject", "reply-to", "message-id", "date"} {
		if !strings.Contains(signed, h) {
			t.Errorf("signature does not cover %s: %s", h, signed)
		}
	}
	altered := bytes.Replace(raw, []byte("Subject: Receipt"), []byte("Subject: Receipt!"), 1)
	if vs, err := dkim.VerifyWithOptions(bytes.NewReader(altered), &dkim.VerifyOptions{LookupTXT: lookup}); err != nil || len(vs) != 1 || vs[0].Err == nil {
		t.Fatalf("an altered message verified: %+v, %v", vs, err)
	}
	f.must(http.StatusOK, "dev", "DELETE", "/api/mail/domains/"+d.ID, nil)
	em = f.send(map[string]any{"to": "ada@example.com", "subject": "Later", "text": "t"})
	if em.From != `"Shop" <noreply@platform.test>` || em.ReplyTo != "<hello@shop.example>" {
		t.Fatalf("after removing the domain: from %s reply %s", em.From, em.ReplyTo)
	}
	f.runDue()
	msgs = mp.Messages()
	if len(msgs) != 2 || bytes.Contains(mp.Raw(msgs[0].ID), []byte("DKIM-Signature")) {
		t.Fatalf("unsigned mail expected from the platform's address: %d messages", len(msgs))
	}
}

// TestSendingDomainLostBeforeDelivery: a message accepted while its domain
// was verified, whose domain stops verifying before it is sent, goes from
// the platform's address: the sender is decided again at delivery.
func TestSendingDomainLostBeforeDelivery(t *testing.T) {
	dns := dnstest.Start(t)
	f := newFixture(t, pgtest.Engines()[0], Config{DNSResolver: dns.Addr})
	d := f.addDomain("shop.example")
	publish(dns, d)
	f.verify(d.ID)
	f.prj.Update("prj_a", func(p *projects.Project) { p.MailFrom = "hello@shop.example" })
	em := f.send(map[string]any{"to": "ada@example.com", "subject": "s", "text": "t"})
	if em.From != `"Shop" <hello@shop.example>` {
		t.Fatalf("accepted from %s", em.From)
	}
	dns.TXT(d.record("dkim").Name)
	f.verify(d.ID) // failed now
	f.runDue()
	got := f.email(em.ID)
	if got.State != StateSent || got.From != `"Shop" <noreply@platform.test>` {
		t.Fatalf("delivered = %+v", got)
	}
	if files := f.mailFiles(); len(files) != 1 || strings.Contains(files[0], "DKIM-Signature") || !strings.Contains(files[0], "From: \"Shop\" <noreply@platform.test>") {
		t.Fatalf("file = %q", files)
	}
}

// TestDKIMLongDomain: the signature of a domain whose name is longer than
// a header line verifies (its d= tag is never split where a verifier would
// read a space into it).
func TestDKIMLongDomain(t *testing.T) {
	dns := dnstest.Start(t)
	f := newFixture(t, pgtest.Engines()[0], Config{DNSResolver: dns.Addr})
	name := strings.Repeat("a", 40) + "." + strings.Repeat("b", 40) + "." + strings.Repeat("c", 30) + ".example"
	d := f.addDomain(name)
	publish(dns, d)
	if v := f.verify(d.ID); v.State != DomainVerified {
		t.Fatalf("verify = %+v", v)
	}
	f.prj.Update("prj_a", func(p *projects.Project) { p.MailFrom = "hello@" + name })
	f.send(map[string]any{"to": "ada@example.com", "subject": "Receipt", "text": "Paid.", "html": "<p>Paid.</p>"})
	f.runDue()
	files := f.mailFiles()
	if len(files) != 1 {
		t.Fatalf("files = %d", len(files))
	}
	lookup := func(domain string) ([]string, error) { return f.svc.resolver.LookupTXT(context.Background(), domain) }
	vs, err := dkim.VerifyWithOptions(strings.NewReader(files[0]), &dkim.VerifyOptions{LookupTXT: lookup})
	if err != nil || len(vs) != 1 || vs[0].Err != nil || vs[0].Domain != name {
		t.Fatalf("verification = %+v, %v:\n%s", vs, err, files[0])
	}
}
