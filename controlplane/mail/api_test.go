package mail

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// mailFiles returns the messages written to the fixture's folder.
func (f *fixture) mailFiles() []string {
	f.t.Helper()
	names, err := filepath.Glob(filepath.Join(f.dir, "*.eml"))
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// TestSendWritesFileWithoutRelay: without a relay a project's message is
// queued (202), written to the folder by the delivery job with the
// project's sender name on the platform's address and its mailReplyTo,
// metered as emails, and its sealed content dropped once sent.
func TestSendWritesFileWithoutRelay(t *testing.T) { eachEngine(t, testSendWritesFile) }

func testSendWritesFile(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{})
	f.prj.Update("prj_a", func(p *projects.Project) {
		p.MailSenderName, p.MailFrom, p.MailReplyTo = "Shop Team", "team@shop.example", "help@shop.example"
	})
	em := f.send(map[string]any{"to": []string{"Ada <ada@example.com>", "bob@EXAMPLE.org"}, "subject": "Your order", "text": "Thanks!", "html": "<p>Thanks!</p>"})
	if em.State != StateQueued || em.From != `"Shop Team" <noreply@platform.test>` || em.ReplyTo != "<help@shop.example>" || len(em.To) != 2 || em.To[1] != "<bob@example.org>" {
		t.Fatalf("queued = %+v", em)
	}
	if files := f.mailFiles(); len(files) != 0 {
		t.Fatalf("written before the job ran: %v", files)
	}
	f.runDue()
	files := f.mailFiles()
	if len(files) != 1 {
		t.Fatalf("files = %d", len(files))
	}
	for _, want := range []string{"From: \"Shop Team\" <noreply@platform.test>", "Reply-To: <help@shop.example>", "Subject: Your order",
		"multipart/alternative", "Thanks!", "<p>Thanks!</p>", "Message-ID: <" + em.ID + "@platform.test>"} {
		if !strings.Contains(files[0], want) {
			t.Errorf("message lacks %q:\n%s", want, files[0])
		}
	}
	got := f.email(em.ID)
	if got.State != StateSent || got.SentAt == nil || got.Attempts != 1 || got.FailureReason != "" {
		t.Fatalf("after delivery = %+v", got)
	}
	n, err := f.meter.Total(context.Background(), "ws_a", "prj_a", metering.Emails, t0.Add(-time.Hour), t0.Add(time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("emails metered = %v, %v; want 2 (one per recipient)", n, err)
	}
	var sealed []byte
	if err := f.db.QueryRowContext(context.Background(), `SELECT content_sealed FROM mail_messages WHERE id = ?`, em.ID).Scan(&sealed); err != nil || sealed != nil {
		t.Fatalf("content after sending = %v, %v; want dropped", sealed, err)
	}
	if strings.Contains(f.logs.String(), "Thanks!") {
		t.Fatalf("content logged: %s", f.logs)
	}
	// A second run finds nothing to do; the metric is not counted twice.
	f.clk.Advance(time.Hour)
	f.runDue()
	if n, _ := f.meter.Total(context.Background(), "ws_a", "", metering.Emails, t0.Add(-time.Hour), t0.Add(2*time.Hour)); n != 2 || len(f.mailFiles()) != 1 {
		t.Fatalf("after a second run: metered %v, files %d", n, len(f.mailFiles()))
	}
}

// TestSenderChoice: who a project's message goes from and where replies
// go, for each combination of the project's mail settings (no sending
// domain is verified here).
func TestSenderChoice(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{})
	for _, c := range []struct {
		name                  string
		sender, from, replyTo string
		requested             string
		wantFrom, wantReply   string
	}{
		{"nothing set", "", "", "", "", `"Shop" <noreply@platform.test>`, ""},
		{"sender name", "Shop Team", "", "", "", `"Shop Team" <noreply@platform.test>`, ""},
		{"unverified mailFrom answers replies", "", "team@shop.example", "", "", `"Shop" <noreply@platform.test>`, "<team@shop.example>"},
		{"mailReplyTo wins over mailFrom", "", "team@shop.example", "help@shop.example", "", `"Shop" <noreply@platform.test>`, "<help@shop.example>"},
		{"request's replyTo wins", "", "team@shop.example", "help@shop.example", "Desk <desk@shop.example>", `"Shop" <noreply@platform.test>`, `"Desk" <desk@shop.example>`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f.prj.Update("prj_a", func(p *projects.Project) { p.MailSenderName, p.MailFrom, p.MailReplyTo = c.sender, c.from, c.replyTo })
			req := map[string]any{"to": "ada@example.com", "subject": "s", "text": "t"}
			if c.requested != "" {
				req["replyTo"] = c.requested
			}
			em := f.send(req)
			if em.From != c.wantFrom || em.ReplyTo != c.wantReply {
				t.Fatalf("from %q reply %q; want %q, %q", em.From, em.ReplyTo, c.wantFrom, c.wantReply)
			}
		})
	}
}

// TestSendRefusals: every malformed or oversized request is refused with
// a code that says what to fix, and nothing is stored or queued.
func TestSendRefusals(t *testing.T) { eachEngine(t, testSendRefusals) }

func testSendRefusals(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{MaxRecipients: 3, MaxContentBytes: 100})
	ok := func(m map[string]any) map[string]any {
		out := map[string]any{"to": "ada@example.com", "subject": "Hello", "text": "Hi"}
		for k, v := range m {
			if v == nil {
				delete(out, k)
			} else {
				out[k] = v
			}
		}
		return out
	}
	for _, c := range []struct {
		name    string
		key     string
		project string
		body    any
		header  []string
		status  int
		code    string
	}{
		{"no to", "dev", "prj_a", ok(map[string]any{"to": nil}), nil, 400, "invalid_request"},
		{"empty to list", "dev", "prj_a", ok(map[string]any{"to": []string{}}), nil, 400, "invalid_request"},
		{"to not an address", "dev", "prj_a", ok(map[string]any{"to": "ada"}), nil, 400, "invalid_request"},
		{"to a number", "dev", "prj_a", ok(map[string]any{"to": 7}), nil, 400, "invalid_request"},
		{"header injection in to", "dev", "prj_a", ok(map[string]any{"to": "ada@example.com\r\nBcc: eve@example.com"}), nil, 400, "invalid_request"},
		{"two addresses in one", "dev", "prj_a", ok(map[string]any{"to": "ada@example.com, bob@example.com"}), nil, 400, "invalid_request"},
		{"address literal", "dev", "prj_a", ok(map[string]any{"to": "ada@[192.0.2.1]"}), nil, 400, "invalid_request"},
		{"domain without dot", "dev", "prj_a", ok(map[string]any{"to": "ada@localhost"}), nil, 400, "invalid_request"},
		{"duplicate recipient", "dev", "prj_a", ok(map[string]any{"to": []string{"ada@example.com", "ADA@example.com"}}), nil, 400, "invalid_request"},
		{"too many recipients", "dev", "prj_a", ok(map[string]any{"to": []string{"a@x.com", "b@x.com", "c@x.com", "d@x.com"}}), nil, 400, "too_many_recipients"},
		{"no subject", "dev", "prj_a", ok(map[string]any{"subject": "  "}), nil, 400, "invalid_request"},
		{"subject with a line break", "dev", "prj_a", ok(map[string]any{"subject": "Hi\r\nBcc: eve@example.com"}), nil, 400, "invalid_request"},
		{"subject too long", "dev", "prj_a", ok(map[string]any{"subject": strings.Repeat("s", MaxSubject+1)}), nil, 400, "invalid_request"},
		{"no text or html", "dev", "prj_a", ok(map[string]any{"text": nil}), nil, 400, "invalid_request"},
		{"content too large", "dev", "prj_a", ok(map[string]any{"text": strings.Repeat("t", 60), "html": strings.Repeat("h", 41)}), nil, 413, "message_too_large"},
		{"bad replyTo", "dev", "prj_a", ok(map[string]any{"replyTo": "desk"}), nil, 400, "invalid_request"},
		{"unknown field", "dev", "prj_a", ok(map[string]any{"cc": "bob@example.com"}), nil, 400, "unknown_field"},
		{"not JSON", "dev", "prj_a", "to=ada", nil, 400, "invalid_request"},
		{"idempotency key too long", "dev", "prj_a", ok(nil), []string{"Idempotency-Key", strings.Repeat("k", MaxIdempotencyKey+1)}, 400, "invalid_idempotency_key"},
		{"unknown project", "dev", "prj_zzz", ok(nil), nil, 404, "not_found"},
		{"another workspace's project", "stranger", "prj_a", ok(nil), nil, 404, "not_found"},
		{"project in teardown", "dev", "prj_dead", ok(nil), nil, 409, "project_teardown_failed"},
		{"viewer", "viewer", "prj_a", ok(nil), nil, 403, "insufficient_role"},
		{"read-only key", "readonly", "prj_a", ok(nil), nil, 403, "read_only_key"},
		{"key of another project", "otherprj", "prj_a", ok(nil), nil, 403, "project_key_mismatch"},
		{"no credentials", "", "prj_a", ok(nil), nil, 401, "unauthenticated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.call(c.key, "POST", "/api/projects/"+c.project+"/emails", c.body, c.header...)
			if r.Status != c.status || r.Code() != c.code {
				t.Fatalf("status %d code %q, want %d %q: %s", r.Status, r.Code(), c.status, c.code, r.Body)
			}
		})
	}
	if n, m := f.count("mail_messages"), f.count("jobs"); n != 0 || m != 0 {
		t.Fatalf("after refusals: %d messages, %d jobs", n, m)
	}
}

// TestSendPermissions: developers, owners and keys of the project send;
// viewers and read-only keys read.
func TestSendPermissions(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{})
	for _, c := range []struct {
		key        string
		send, list int
	}{
		{"owner", 202, 200},
		{"dev", 202, 200},
		{"prjkey", 202, 200},
		{"viewer", 403, 200},
		{"readonly", 403, 200},
		{"otherprj", 403, 403},
		{"stranger", 404, 404},
	} {
		t.Run(c.key, func(t *testing.T) {
			f.must(c.send, c.key, "POST", "/api/projects/prj_a/emails", map[string]any{"to": "ada@example.com", "subject": "s", "text": "t"})
			f.must(c.list, c.key, "GET", "/api/projects/prj_a/emails", nil)
		})
	}
}

// TestHobbyRateLimit: a hobby workspace's projects send to at most 100
// recipients in any 24 hours; the refusal says when to retry, the
// platform's own mail does not count, and the budget comes back as the
// window moves.
func TestHobbyRateLimit(t *testing.T) { eachEngine(t, testHobbyRateLimit) }

func testHobbyRateLimit(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{})
	fifty := make([]string, 50)
	for i := range fifty {
		fifty[i] = "user" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + "@example.com"
	}
	f.send(map[string]any{"to": fifty, "subject": "one", "text": "t"}) // t0
	f.clk.Advance(time.Hour)
	f.must(http.StatusAccepted, "prjkey", "POST", "/api/projects/prj_a/emails", map[string]any{"to": fifty, "subject": "two", "text": "t"})
	// The platform's own mail is not the projects' budget.
	if err := f.svc.Send(context.Background(), accounts.Message{To: "owner@example.com", Subject: "Verify", Body: "token"}); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Hour) // t0+2h: 100 used
	r := f.call("dev", "POST", "/api/projects/prj_b/emails", map[string]any{"to": "ada@example.com", "subject": "three", "text": "t"})
	if r.Status != http.StatusTooManyRequests || r.Code() != "mail_rate_limited" || r.Header.Get("Retry-After") != "79200" {
		t.Fatalf("101st recipient: %d %s Retry-After %q: %s; want 429 mail_rate_limited after 22 hours", r.Status, r.Code(), r.Header.Get("Retry-After"), r.Body)
	}
	// Another workspace (pro) is not affected.
	f.must(http.StatusAccepted, "stranger", "POST", "/api/projects/prj_c/emails", map[string]any{"to": "ada@example.com", "subject": "s", "text": "t"})
	f.clk.Set(t0.Add(Window + time.Millisecond)) // the first 50 left the window
	f.must(http.StatusAccepted, "dev", "POST", "/api/projects/prj_b/emails", map[string]any{"to": fifty, "subject": "four", "text": "t"})
	r = f.call("dev", "POST", "/api/projects/prj_b/emails", map[string]any{"to": "ada@example.com", "subject": "five", "text": "t"})
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "3600" {
		t.Fatalf("after the window moved: %d Retry-After %q; want 429 after an hour", r.Status, r.Header.Get("Retry-After"))
	}
}

// TestIdempotencyKey: a send retried with the same Idempotency-Key answers
// the first message and queues, meters and counts nothing more.
func TestIdempotencyKey(t *testing.T) { eachEngine(t, testIdempotencyKey) }

func testIdempotencyKey(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{})
	req := map[string]any{"to": "ada@example.com", "subject": "s", "text": "t"}
	var a, b EmailAnswer
	f.must(202, "dev", "POST", "/api/projects/prj_a/emails", req, "Idempotency-Key", "order-1").Decode(t, &a)
	f.must(202, "dev", "POST", "/api/projects/prj_a/emails", req, "Idempotency-Key", "order-1").Decode(t, &b)
	if a.Email.ID != b.Email.ID || f.count("mail_messages") != 1 {
		t.Fatalf("ids %s %s, %d messages", a.Email.ID, b.Email.ID, f.count("mail_messages"))
	}
	// Another area sending with the same key in the project (a receipt
	// for the same order) gets the same message.
	r, err := f.svc.SendAs(context.Background(), "ws_a", "prj_a", SourceReceipt, "order-1", SendRequest{To: Recipients{"ada@example.com"}, Subject: "s", Text: "t"})
	if err != nil || r.ID != a.Email.ID {
		t.Fatalf("SendAs = %+v, %v", r, err)
	}
	// The same key in another project is another message.
	f.must(202, "dev", "POST", "/api/projects/prj_b/emails", req, "Idempotency-Key", "order-1")
	if n, _ := f.meter.Total(context.Background(), "ws_a", "", metering.Emails, t0.Add(-time.Hour), t0.Add(time.Hour)); n != 2 {
		t.Fatalf("metered %v, want 2", n)
	}
	r, err = f.svc.SendAs(context.Background(), "ws_a", "prj_a", SourceReceipt, "", SendRequest{To: Recipients{"bob@example.com"}, Subject: "Receipt", Text: "t"})
	if err != nil || r.State != StateQueued {
		t.Fatalf("a receipt: %+v, %v", r, err)
	}
	if _, err := f.svc.SendAs(context.Background(), "ws_a", "prj_a", SourcePlatform, "", SendRequest{}); err == nil {
		t.Fatal("SendAs took the platform's source")
	}
}

// TestPlatformMailer: the platform's own mail (accounts.Mailer) is
// written at once, goes from the platform's address, is not metered, and
// its queued job later finds nothing to do.
func TestPlatformMailer(t *testing.T) { eachEngine(t, testPlatformMailer) }

func testPlatformMailer(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{})
	ctx := context.Background()
	if err := f.svc.Send(ctx, accounts.Message{To: "owner@example.com", Subject: "Verify your e-mail address", Body: "svcverify_token"}); err != nil {
		t.Fatal(err)
	}
	files := f.mailFiles()
	if len(files) != 1 || !strings.Contains(files[0], "svcverify_token") || !strings.Contains(files[0], "From: \"Platform\" <noreply@platform.test>") {
		t.Fatalf("files = %q", files)
	}
	f.clk.Advance(time.Hour)
	f.runDue()
	if len(f.mailFiles()) != 1 {
		t.Fatal("the queued job delivered it again")
	}
	if n, _ := f.meter.Total(ctx, "ws_a", "", metering.Emails, t0.Add(-time.Hour), t0.Add(2*time.Hour)); n != 0 {
		t.Fatalf("platform mail metered: %v", n)
	}
	for _, m := range []accounts.Message{
		{To: "not an address", Subject: "s", Body: "b"},
		{To: "a@example.com\r\nBcc: eve@example.com", Subject: "s", Body: "b"},
		{To: "a@example.com", Subject: "s\r\nBcc: eve@example.com", Body: "b"},
	} {
		if err := f.svc.Send(ctx, m); err == nil {
			t.Errorf("Send(%q, %q) = nil", m.To, m.Subject)
		}
	}
}

// TestListPaging: a project's messages page newest first with opaque
// cursors and filter by state.
func TestListPaging(t *testing.T) { eachEngine(t, testListPaging) }

func testListPaging(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{})
	var ids []string
	for i := range 5 {
		ids = append(ids, f.send(map[string]any{"to": "ada@example.com", "subject": "n" + string(rune('0'+i)), "text": "t"}).ID)
		f.clk.Advance(time.Second)
	}
	f.runDue() // all sent
	f.send(map[string]any{"to": "ada@example.com", "subject": "later", "text": "t"})
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		var p EmailPage
		path := "/api/projects/prj_a/emails?state=sent&limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		f.must(200, "viewer", "GET", path, nil).Decode(t, &p)
		for _, em := range p.Emails {
			got = append(got, em.ID)
		}
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
		if pages > 5 {
			t.Fatal("paging does not end")
		}
	}
	want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("pages = %v, want %v", got, want)
	}
	var all EmailPage
	f.must(200, "viewer", "GET", "/api/projects/prj_a/emails", nil).Decode(t, &all)
	if len(all.Emails) != 6 || all.Emails[0].State != StateQueued || all.NextCursor != nil {
		t.Fatalf("all = %+v", all)
	}
	for _, c := range []struct{ path, code string }{
		{"/api/projects/prj_a/emails?state=bounced", "invalid_request"},
		{"/api/projects/prj_a/emails?cursor=nope", "invalid_cursor"},
		{"/api/projects/prj_a/emails?limit=0", "invalid_request"},
		{"/api/projects/prj_a/emails?limit=101", "invalid_request"},
	} {
		if r := f.call("viewer", "GET", c.path, nil); r.Status != 400 || r.Code() != c.code {
			t.Errorf("%s: %d %s", c.path, r.Status, r.Code())
		}
	}
	// A message of another project is not found through this one.
	if r := f.call("viewer", "GET", "/api/projects/prj_b/emails/"+ids[0], nil); r.Status != 404 {
		t.Fatalf("another project's message: %d", r.Status)
	}
}

// TestProjectRemoval: deleting a project removes its messages and sending
// domains; its queued message's job then does nothing.
func TestProjectRemoval(t *testing.T) { eachEngine(t, testProjectRemoval) }

func testProjectRemoval(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{})
	f.send(map[string]any{"to": "ada@example.com", "subject": "s", "text": "t"})
	f.must(201, "dev", "POST", "/api/projects/prj_a/mail/domains", map[string]any{"name": "shop.example"})
	f.must(202, "dev", "POST", "/api/projects/prj_b/emails", map[string]any{"to": "ada@example.com", "subject": "s", "text": "t"})
	if err := f.svc.Remove(context.Background(), "prj_a"); err != nil {
		t.Fatal(err)
	}
	if f.count("mail_messages") != 1 || f.count("mail_domains") != 0 {
		t.Fatalf("after removal: %d messages, %d domains", f.count("mail_messages"), f.count("mail_domains"))
	}
	f.runDue()
	if len(f.mailFiles()) != 1 {
		t.Fatalf("files = %d, want only prj_b's", len(f.mailFiles()))
	}
	if bs, err := f.svc.Blockers(context.Background(), "prj_b"); err != nil || len(bs) != 0 {
		t.Fatalf("blockers = %v, %v", bs, err)
	}
}
