package mail

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

func TestParseRelayURL(t *testing.T) {
	for _, c := range []struct {
		in   string
		want RelayConfig
		err  string // part of the error; "" accepts
	}{
		{in: "smtp://relay.example", want: RelayConfig{Host: "relay.example", Port: 587, StartTLS: StartTLSOpportunistic}},
		{in: "smtp://u%40x:p%3Ass@relay.example:2525?starttls=required",
			want: RelayConfig{Host: "relay.example", Port: 2525, StartTLS: StartTLSRequired, User: "u@x", Password: "p:ss"}},
		{in: "smtp://127.0.0.1:25?starttls=off", want: RelayConfig{Host: "127.0.0.1", Port: 25, StartTLS: StartTLSOff}},
		{in: "smtps://u:secret-pw@relay.example", want: RelayConfig{Host: "relay.example", Port: 465, ImplicitTLS: true, User: "u", Password: "secret-pw"}},
		{in: "smtps://[::1]:4650", want: RelayConfig{Host: "::1", Port: 4650, ImplicitTLS: true}},
		{in: "http://relay.example", err: "must start with smtp://"},
		{in: "smtp://", err: "names no host"},
		{in: "smtp://relay.example:0", err: "port"},
		{in: "smtp://relay.example:99999", err: "port"},
		{in: "smtp://relay.example/path", err: "no path"},
		{in: "smtp://relay.example?starttls=maybe", err: "starttls must be"},
		{in: "smtps://relay.example?starttls=required", err: "smtp:// only"},
		{in: "smtp://relay.example?debug=1", err: "unknown parameter"},
		{in: "smtp://u:secret-pw@relay.example:port", err: "malformed"},
		{in: "smtp://u:secret-pw@rel ay.example", err: "malformed"},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseRelayURL(c.in)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.err == "" && got != c.want:
				t.Fatalf("= %+v, want %+v", got, c.want)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrRelayURL)):
				t.Fatalf("error %v, want one with %q", err, c.err)
			case err != nil && strings.Contains(err.Error(), "secret-pw"):
				t.Fatalf("the password shows in %v", err)
			}
			if err == nil && strings.Contains(got.String(), got.Password) && got.Password != "" {
				t.Fatalf("String shows the password: %s", got)
			}
		})
	}
}

// TestNewRefuses: New names every missing dependency and refuses a
// configuration it cannot use.
func TestNewRefuses(t *testing.T) {
	if _, err := New(Config{Dir: t.TempDir()}, Deps{}); !errors.Is(err, ErrNotConfigured) ||
		err.Error() != "mail: missing dependencies: DB, Jobs, Meter, Plans, Projects, Sealer" {
		t.Fatalf("no deps: %v", err)
	}
	for _, c := range []struct {
		name string
		cfg  Config
		err  string
	}{
		{"nowhere to send", Config{}, "SMTP relay URL or a directory"},
		{"bad relay", Config{SMTPURL: "smtp://u:pw@host:x"}, "malformed"},
		{"bad from", Config{Dir: "d", From: "platform"}, "from"},
		{"bad resolver", Config{Dir: "d", DNSResolver: "127.0.0.1"}, "host:port"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Provision()
			if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Validate = %v, want %q", err, c.err)
			}
		})
	}
}

// TestStuckMessagesExpire: a message whose job died with its runner on the
// last attempt (still queued, past every retry) fails on the periodic
// sweep with a reason.
func TestStuckMessagesExpire(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{})
	em := f.send(map[string]any{"to": "ada@example.com", "subject": "s", "text": "t"})
	// The job is gone as a dead one would be: nothing delivers the message.
	if _, err := f.db.ExecContext(context.Background(), `DELETE FROM jobs WHERE kind = ?`, jobDeliver); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(f.svc.giveUpAfter() - time.Minute)
	f.runDue()
	if got := f.email(em.ID); got.State != StateQueued {
		t.Fatalf("expired early: %+v", got)
	}
	f.clk.Advance(25 * time.Hour) // the next daily sweep
	f.runDue()
	if got := f.email(em.ID); got.State != StateFailed || got.FailureReason != "not delivered in time" {
		t.Fatalf("after the sweep: %+v", got)
	}
}
