package mail

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// dsn builds a delivery status notification as MTAs write them: a human
// part, the message/delivery-status part with one block per recipient,
// and the returned headers.
func dsn(mta, reportedFrom string, blocks ...string) string {
	return "From: MAILER-DAEMON@" + mta + "\r\nTo: " + reportedFrom + "\r\nSubject: Undelivered Mail Returned to Sender\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status;\r\n\tboundary=\"B0UND\"\r\n\r\n" +
		"This is a MIME-encapsulated message.\r\n\r\n--B0UND\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n" +
		"I'm sorry to have to inform you that your message could not be delivered.\r\n\r\n" +
		"--B0UND\r\nContent-Description: Delivery report\r\nContent-Type: message/delivery-status\r\n\r\n" +
		"Reporting-MTA: dns; " + mta + "\r\nArrival-Date: Mon, 2 Nov 2026 10:00:00 +0000\r\n\r\n" +
		strings.Join(blocks, "\r\n") +
		"\r\n--B0UND\r\nContent-Type: text/rfc822-headers\r\n\r\nSubject: Order 17\r\n\r\n--B0UND--\r\n"
}

// The real-world shapes of reports: what Postfix, Exchange and Gmail
// send back, and a feedback-loop complaint.
var (
	postfixHard = func(rcpt string) string {
		return dsn("mx.example.com", "bounces@platform.test", "Final-Recipient: rfc822; "+rcpt+"\r\nOriginal-Recipient: rfc822;"+rcpt+
			"\r\nAction: failed\r\nStatus: 5.1.1\r\nRemote-MTA: dns; mx.example.com\r\nDiagnostic-Code: smtp; 550 5.1.1 <"+rcpt+">:\r\n    Recipient address rejected: User unknown in virtual mailbox table\r\n")
	}
	postfixDelayed = func(rcpt string) string {
		return dsn("mx.example.com", "bounces@platform.test", "Final-Recipient: rfc822; "+rcpt+
			"\r\nAction: delayed\r\nStatus: 4.4.1\r\nDiagnostic-Code: X-Postfix; connect to mx.example.com[192.0.2.1]:25: Connection timed out\r\nWill-Retry-Until: Mon, 9 Nov 2026 10:00:00 +0000\r\n")
	}
	exchangeHard = func(rcpt string) string {
		return dsn("EXCH01.corp.example", "bounces@platform.test", "Original-Recipient: rfc822;"+strings.ToUpper(rcpt)+
			"\r\nFinal-Recipient: rfc822;"+strings.ToUpper(rcpt)+"\r\nAction: failed\r\nStatus: 5.1.10\r\nDiagnostic-Code: smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup\r\n")
	}
	gmailSoft = func(rcpt string) string {
		return dsn("googlemail.com", "bounces@platform.test", "Final-Recipient: rfc822; "+rcpt+
			"\r\nAction: failed\r\nStatus: 4.2.2\r\nRemote-MTA: dns; gmail-smtp-in.l.google.com. (142.250.0.26, the server for the domain gmail.com.)\r\nDiagnostic-Code: smtp; 452-4.2.2 The recipient's inbox is out of storage space.\r\n")
	}
	arf = func(rcpt string) string {
		return "From: fbl@isp.example\r\nTo: abuse@platform.test\r\nSubject: FW: Order 17\r\nMIME-Version: 1.0\r\n" +
			"Content-Type: multipart/report; report-type=feedback-report; boundary=\"part1_13d.2e68ed54_boundary\"\r\n\r\n" +
			"--part1_13d.2e68ed54_boundary\r\nContent-Type: text/plain; charset=\"US-ASCII\"\r\nContent-Transfer-Encoding: 7bit\r\n\r\n" +
			"This is an email abuse report for an email message received from IP 192.0.2.1.\r\n\r\n" +
			"--part1_13d.2e68ed54_boundary\r\nContent-Type: message/feedback-report\r\n\r\nFeedback-Type: abuse\r\nUser-Agent: SomeGenerator/1.0\r\nVersion: 1\r\n" +
			"Original-Mail-From: <bounces@platform.test>\r\nOriginal-Rcpt-To: <" + rcpt + ">\r\nReported-Domain: platform.test\r\n\r\n" +
			"--part1_13d.2e68ed54_boundary\r\nContent-Type: message/rfc822\r\nContent-Disposition: inline\r\n\r\nFrom: <noreply@platform.test>\r\nSubject: Order 17\r\n\r\nbody\r\n" +
			"--part1_13d.2e68ed54_boundary--\r\n"
	}
	arfRedacted = "From: fbl@isp.example\r\nMIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=feedback-report; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: message/feedback-report\r\nContent-Transfer-Encoding: base64\r\n\r\nRmVlZGJhY2stVHlwZTogYWJ1c2UNClZlcnNpb246IDENCg==\r\n--b--\r\n"
	plainReply = "From: ada@example.com\r\nSubject: Out of office\r\nContent-Type: text/plain\r\n\r\nI am away.\r\n"
)

func TestParseReport(t *testing.T) {
	for _, c := range []struct {
		name, msg string
		want      *Report
		err       error
	}{
		{name: "Postfix hard bounce", msg: postfixHard("ada@example.com"), want: &Report{Type: ReportDSN, Recipients: []RecipientStatus{{Recipient: "ada@example.com",
			Original: "ada@example.com", Action: "failed", Status: "5.1.1",
			Diagnostic: "smtp; 550 5.1.1 <ada@example.com>: Recipient address rejected: User unknown in virtual mailbox table"}}}},
		{name: "Postfix delayed", msg: postfixDelayed("ada@example.com"), want: &Report{Type: ReportDSN, Recipients: []RecipientStatus{{Recipient: "ada@example.com",
			Action: "delayed", Status: "4.4.1", Diagnostic: "X-Postfix; connect to mx.example.com[192.0.2.1]:25: Connection timed out"}}}},
		{name: "Exchange hard bounce, upper case", msg: exchangeHard("bob@example.org"), want: &Report{Type: ReportDSN, Recipients: []RecipientStatus{{Recipient: "bob@example.org",
			Original: "bob@example.org", Action: "failed", Status: "5.1.10",
			Diagnostic: "smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup"}}}},
		{name: "Gmail-style mailbox full", msg: gmailSoft("ada@gmail.com"), want: &Report{Type: ReportDSN, Recipients: []RecipientStatus{{Recipient: "ada@gmail.com",
			Action: "failed", Status: "4.2.2", Diagnostic: "smtp; 452-4.2.2 The recipient's inbox is out of storage space."}}}},
		{name: "ARF complaint", msg: arf("ada@example.com"), want: &Report{Type: ReportARF, FeedbackType: "abuse", OriginalRcptTo: []string{"ada@example.com"}}},
		{name: "ARF redacted, base64", msg: arfRedacted, want: &Report{Type: ReportARF, FeedbackType: "abuse"}},
		{name: "not a report", msg: plainReply, err: ErrNotReport},
		{name: "report type unknown", msg: strings.Replace(postfixHard("a@b.c"), "report-type=delivery-status", "report-type=disposition-notification", 1), err: ErrNotReport},
		{name: "no status part", msg: strings.Replace(postfixHard("a@b.c"), "message/delivery-status", "text/plain", 1), err: ErrNotReport},
		{name: "no recipient block", msg: dsn("mx.example.com", "x@y.z"), err: errAny},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseReport(strings.NewReader(c.msg))
			if c.err != nil {
				if err == nil || c.err != errAny && !errors.Is(err, c.err) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", c.want) {
				t.Fatalf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

var errAny = errors.New("any error")

func TestRecipientStatusPermanent(t *testing.T) {
	for _, c := range []struct {
		action, status string
		want           bool
	}{{"failed", "5.1.1", true}, {"failed", "4.2.2", false}, {"delayed", "5.0.0", false}, {"delivered", "2.0.0", false}} {
		if got := (RecipientStatus{Action: c.action, Status: c.status}).Permanent(); got != c.want {
			t.Errorf("%s %s: %v", c.action, c.status, got)
		}
	}
}

// FuzzParseReport: no input makes the parser panic, and what it returns
// is bounded and well formed.
func FuzzParseReport(f *testing.F) {
	for _, s := range []string{postfixHard("a@b.c"), postfixDelayed("a@b.c"), exchangeHard("a@b.c"), gmailSoft("a@b.c"), arf("a@b.c"), arfRedacted, plainReply} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rep, err := ParseReport(strings.NewReader(s))
		if err != nil {
			return
		}
		if rep.Type != ReportDSN && rep.Type != ReportARF || len(rep.Recipients) > maxReportRecipients || len(rep.OriginalRcptTo) > maxReportRecipients {
			t.Fatalf("report %+v", rep)
		}
		for _, r := range rep.Recipients {
			if r.Recipient == "" || !strings.Contains(r.Recipient, "@") || len(r.Diagnostic) > 500 {
				t.Fatalf("recipient %+v", r)
			}
		}
	})
}
