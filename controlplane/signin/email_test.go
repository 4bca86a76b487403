package signin

import (
	"bytes"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestEmailVerification: with verification required, sign-up answers
// alike for a new and a taken address and signs nobody in; the new user
// gets a single-use token (through the app's link), the taken address a
// note; sign-in waits for the verification.
func TestEmailVerification(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", map[string]any{"requireEmailVerification": true, "allowedOrigins": []string{appOrigin}, "linkUrl": appOrigin + "/auth"})
	first := e.endUser(p.ID, "POST", "/signup", Credentials{Email: "ada@example.com", Password: password}, "")
	var a SignUpAnswer
	first.Decode(t, &a)
	if first.Status != 201 || a.Session != nil || !a.VerificationRequired {
		t.Fatalf("sign-up: %d %s", first.Status, first.Body)
	}
	msgs := e.mail.messages()
	if len(msgs) != 1 || msgs[0].To != "ada@example.com" || msgs[0].Project != e.project || msgs[0].Workspace != e.Owner.WorkspaceID ||
		msgs[0].Subject != "Confirm your e-mail address" || !strings.Contains(msgs[0].Body, appOrigin+"/auth?token=svcauthverify_") {
		t.Fatalf("messages %+v", msgs)
	}
	link := strings.Fields(msgs[0].Body[strings.Index(msgs[0].Body, appOrigin):])[0]
	u, err := url.Parse(link)
	if err != nil || u.Query().Get("type") != "verify" {
		t.Fatalf("link %q", link)
	}
	token := u.Query().Get("token")

	if r := e.endUser(p.ID, "POST", "/signin", Credentials{Email: "ada@example.com", Password: password}, ""); r.Status != 403 || r.Code() != "email_not_verified" {
		t.Fatalf("sign-in before verifying: %d %s", r.Status, r.Body)
	}
	var v UserAnswer
	r := e.endUser(p.ID, "POST", "/verify", TokenRequest{Token: token}, "")
	r.Decode(t, &v)
	if r.Status != 200 || !v.User.EmailVerified {
		t.Fatalf("verify: %d %s", r.Status, r.Body)
	}
	if r := e.endUser(p.ID, "POST", "/verify", TokenRequest{Token: token}, ""); r.Status != 400 || r.Code() != "invalid_token" {
		t.Fatalf("a token used twice: %d %s", r.Status, r.Body)
	}
	s := e.signIn(p.ID, "ada@example.com", password)
	if !s.User.EmailVerified {
		t.Fatalf("session user %+v", s.User)
	}
	if c, err := e.verifyOffline(p.ID, s.AccessToken); err != nil || c["email_verified"] != true {
		t.Fatalf("claims %v %v", c, err)
	}

	// The taken address: the same answer, a note instead of a token.
	again := e.endUser(p.ID, "POST", "/signup", Credentials{Email: "ada@example.com", Password: "another long password"}, "")
	if again.Status != first.Status || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("sign-up of a taken address: %d %s; a new one: %d %s", again.Status, again.Body, first.Status, first.Body)
	}
	msgs = e.mail.messages()
	if last := msgs[len(msgs)-1]; last.Subject != "You already have an account" || strings.Contains(last.Body, "svcauth") {
		t.Fatalf("note %+v", last)
	}
	e.signIn(p.ID, "ada@example.com", password) // the password did not change

	// An unverified user asks again; a verification token of another pool
	// and a reset token are not verification tokens here.
	e.endUser(p.ID, "POST", "/signup", Credentials{Email: "bob@example.com", Password: password}, "")
	if r := e.endUser(p.ID, "POST", "/verify/send", EmailRequest{Email: "bob@example.com"}, ""); r.Status != 202 {
		t.Fatalf("verify/send: %d %s", r.Status, r.Body)
	}
	bob := e.mail.token(t, "bob@example.com")
	other := e.pool("other", map[string]any{"requireEmailVerification": true})
	if r := e.endUser(other.ID, "POST", "/verify", TokenRequest{Token: bob}, ""); r.Status != 400 {
		t.Fatalf("another pool's token: %d %s", r.Status, r.Body)
	}
	e.Clock.Advance(VerifyTokenLifetime)
	if r := e.endUser(p.ID, "POST", "/verify", TokenRequest{Token: bob}, ""); r.Status != 400 || r.Code() != "invalid_token" {
		t.Fatalf("an expired token: %d %s", r.Status, r.Body)
	}
}

// TestRecover: a reset request answers alike whether or not the address
// has an account and mails only real, enabled users; the token sets a new
// password once, ends every session and the lockout, and expires after an
// hour. Mail to one address is capped; past it requests are still
// answered alike.
func TestRecover(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", map[string]any{"lockoutThreshold": 3})
	s := e.signUp(p.ID, "ada@example.com")
	known := e.endUser(p.ID, "POST", "/recover", EmailRequest{Email: "ada@example.com"}, "")
	unknown := e.endUser(p.ID, "POST", "/recover", EmailRequest{Email: "nobody@example.com"}, "")
	if known.Status != 202 || unknown.Status != 202 || !bytes.Equal(known.Body, unknown.Body) {
		t.Fatalf("known %d %s; unknown %d %s", known.Status, known.Body, unknown.Status, unknown.Body)
	}
	if msgs := e.mail.messages(); len(msgs) != 1 || msgs[0].To != "ada@example.com" || msgs[0].Subject != "Reset your password" {
		t.Fatalf("messages %+v", msgs)
	}
	token := e.mail.token(t, "ada@example.com")
	if !strings.HasPrefix(token, resetPrefix) {
		t.Fatalf("token %q", token)
	}
	for range 3 {
		e.endUser(p.ID, "POST", "/signin", Credentials{Email: "ada@example.com", Password: "wrong password"}, "")
	}
	if r := e.endUser(p.ID, "POST", "/recover/confirm", ResetRequest{Token: token, Password: "short"}, ""); r.Status != 400 || r.Code() != "weak_password" {
		t.Fatalf("a weak new password: %d %s", r.Status, r.Body)
	}
	var u UserAnswer
	r := e.endUser(p.ID, "POST", "/recover/confirm", ResetRequest{Token: token, Password: "a brand new password"}, "")
	r.Decode(t, &u)
	if r.Status != 200 || !u.User.EmailVerified {
		t.Fatalf("confirm: %d %s", r.Status, r.Body)
	}
	if r := e.endUser(p.ID, "POST", "/recover/confirm", ResetRequest{Token: token, Password: "yet another password"}, ""); r.Status != 400 || r.Code() != "invalid_token" {
		t.Fatalf("a reset token used twice: %d %s", r.Status, r.Body)
	}
	if r := e.refreshOnce(p.ID, s.RefreshToken); r.Status != 401 {
		t.Fatalf("a session from before the reset: %d", r.Status)
	}
	if r := e.endUser(p.ID, "POST", "/signin", Credentials{Email: "ada@example.com", Password: password}, ""); r.Status != 401 {
		t.Fatalf("the old password: %d %s", r.Status, r.Body)
	}
	e.signIn(p.ID, "ada@example.com", "a brand new password") // the lockout ended with the reset

	e.endUser(p.ID, "POST", "/recover", EmailRequest{Email: "ada@example.com"}, "")
	late := e.mail.token(t, "ada@example.com")
	e.Clock.Advance(ResetTokenLifetime)
	if r := e.endUser(p.ID, "POST", "/recover/confirm", ResetRequest{Token: late, Password: "a brand new password 2"}, ""); r.Status != 400 {
		t.Fatalf("an expired reset token: %d %s", r.Status, r.Body)
	}

	// The cap per address: three messages an hour (two were sent), then
	// nothing, answered alike.
	e.Clock.Advance(time.Hour)
	before := len(e.mail.messages())
	for range 5 {
		if r := e.endUser(p.ID, "POST", "/recover", EmailRequest{Email: "ada@example.com"}, ""); r.Status != 202 || !bytes.Equal(r.Body, unknown.Body) {
			t.Fatalf("over the cap: %d %s", r.Status, r.Body)
		}
	}
	if sent := len(e.mail.messages()) - before; sent != 3 {
		t.Fatalf("%d messages sent to one address in an hour, want 3", sent)
	}
}

// TestMailRefusals: without a mailer, recovery and sign-ups that need a
// message answer 503 for every address; requests from one address are
// capped with 429.
func TestMailRefusals(t *testing.T) {
	e := newEnv(t, options{noMailer: true})
	p := e.pool("customers", map[string]any{"requireEmailVerification": true})
	for _, tt := range []struct {
		name, path string
		body       any
	}{
		{"recover", "/recover", EmailRequest{Email: "ada@example.com"}},
		{"verify/send", "/verify/send", EmailRequest{Email: "ada@example.com"}},
		{"sign-up needing verification", "/signup", Credentials{Email: "ada@example.com", Password: password}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := e.endUser(p.ID, "POST", tt.path, tt.body, ""); r.Status != 503 || r.Code() != "mail_unavailable" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	m := newEnv(t)
	q := m.pool("customers", nil)
	for i := range 10 {
		if r := m.endUser(q.ID, "POST", "/recover", EmailRequest{Email: "ada@example.com"}, ""); r.Status != 202 {
			t.Fatalf("request %d: %d", i, r.Status)
		}
	}
	if r := m.endUser(q.ID, "POST", "/recover", EmailRequest{Email: "bob@example.com"}, ""); r.Status != 429 || r.Code() != "too_many_attempts" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("the eleventh request from one address in an hour: %d %s", r.Status, r.Body)
	}
}
