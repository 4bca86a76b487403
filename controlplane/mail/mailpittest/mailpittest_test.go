package mailpittest

import (
	"net/smtp"
	"strings"
	"testing"
)

// TestStart: a message sent to the SMTP listener is read back through the
// API, with its addresses, subject and text.
func TestStart(t *testing.T) {
	s := Start(t, Options{})
	if got := s.Messages(); len(got) != 0 {
		t.Fatalf("a new Mailpit has %d messages", len(got))
	}
	msg := "From: a@example.com\r\nTo: b@example.com\r\nSubject: Hello\r\n\r\nBody text.\r\n"
	if err := smtp.SendMail(s.SMTP, nil, "a@example.com", []string{"b@example.com"}, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	got := s.Messages()
	if len(got) != 1 || got[0].From.Address != "a@example.com" || len(got[0].To) != 1 || got[0].To[0].Address != "b@example.com" ||
		got[0].Subject != "Hello" || !strings.Contains(got[0].Text, "Body text.") {
		t.Fatalf("messages %+v", got)
	}
	if raw := s.Raw(got[0].ID); !strings.Contains(string(raw), "Subject: Hello") {
		t.Fatalf("raw %q", raw)
	}
}

// TestCaller: the skip message names the package whose test called Start.
func TestCaller(t *testing.T) {
	var got string
	func() { got = caller() }() // one frame between, as Start is
	if got != "mailpittest" {
		t.Fatalf("caller() = %q", got)
	}
}
