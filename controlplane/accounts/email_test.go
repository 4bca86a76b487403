package accounts_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// mailbox is a Mailer that keeps what it is given.
type mailbox struct {
	mu   sync.Mutex
	msgs []accounts.Message
	fail error
}

func (m *mailbox) Send(_ context.Context, msg accounts.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.msgs = append(m.msgs, msg)
	return nil
}

// token returns the verification token of the last message.
func (m *mailbox) token(t *testing.T) string {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.msgs) == 0 {
		t.Fatal("no mail")
	}
	for _, f := range strings.Fields(m.msgs[len(m.msgs)-1].Body) {
		if strings.HasPrefix(f, "svcverify_") {
			return f
		}
	}
	t.Fatalf("no token in %q", m.msgs[len(m.msgs)-1].Body)
	return ""
}

func status(err error) int {
	if err == nil {
		return http.StatusOK
	}
	var e *api.Error
	if errors.As(err, &e) {
		return e.Kind.Status()
	}
	return http.StatusInternalServerError
}

func code(err error) string {
	var e *api.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// The owner asks for a verification token, which reaches them by mail
// only; redeeming it verifies their e-mail once. Tokens expire after 24
// hours, a new one replaces the old, mails are limited per hour, and
// OwnerEmailVerified and the answers follow.
func TestEmailVerification(t *testing.T) { eachEngine(t, testEmailVerification) }

func testEmailVerification(t *testing.T, e pgtest.Engine) {
	ctx := context.Background()
	svc, clk, b := newService(t, e, cheap)
	ws := b.Workspace.ID
	members, err := svc.Members(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	owner := &auth.Principal{WorkspaceID: ws, MemberID: members[0].ID, Role: auth.Owner, Session: true}

	// Without a mailer there is no way to deliver a token.
	if _, err := svc.RequestEmailVerification(ctx, owner); status(err) != http.StatusServiceUnavailable || code(err) != "mail_unavailable" {
		t.Fatalf("no mailer: %v", err)
	}
	box := &mailbox{}
	svc.SetMailer(box)
	box.fail = errors.New("smtp down")
	if _, err := svc.RequestEmailVerification(ctx, owner); code(err) != "mail_failed" {
		t.Fatalf("failing mailer: %v", err)
	}
	box.fail = nil

	sent, err := svc.RequestEmailVerification(ctx, owner)
	if err != nil || sent.Email != "owner@example.com" || !sent.ExpiresAt.Equal(clk.Now().Add(accounts.VerificationLifetime)) {
		t.Fatalf("sent %+v %v", sent, err)
	}
	first := box.token(t)
	if strings.Contains(sent.Note, first) || box.msgs[0].To != "owner@example.com" {
		t.Fatalf("token outside the mail: %+v", sent)
	}
	if ok, _ := svc.OwnerEmailVerified(ctx, ws); ok {
		t.Fatal("verified before the token was used")
	}

	// Expired after 24 hours.
	clk.Advance(accounts.VerificationLifetime)
	if _, err := svc.VerifyEmail(ctx, accounts.VerifyRequest{Token: first}); code(err) != "invalid_token" {
		t.Fatalf("expired token: %v", err)
	}
	// A new token replaces the old one.
	if _, err := svc.RequestEmailVerification(ctx, owner); err != nil {
		t.Fatal(err)
	}
	older := box.token(t)
	if _, err := svc.RequestEmailVerification(ctx, owner); err != nil {
		t.Fatal(err)
	}
	token := box.token(t)
	flip := "a"
	if strings.HasSuffix(token, "a") {
		flip = "b"
	}
	for _, tc := range []struct{ name, token string }{
		{"replaced token", older},
		{"empty", ""},
		{"no prefix", strings.TrimPrefix(token, "svcverify_")},
		{"one character off", token[:len(token)-1] + flip},
		{"too long", token + strings.Repeat("x", 300)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := svc.VerifyEmail(ctx, accounts.VerifyRequest{Token: tc.token}); status(err) != http.StatusNotFound || code(err) != "invalid_token" {
				t.Fatalf("%v", err)
			}
		})
	}
	m, err := svc.VerifyEmail(ctx, accounts.VerifyRequest{Token: token})
	if err != nil || !m.EmailVerified || m.Email != "owner@example.com" {
		t.Fatalf("verify: %+v %v", m, err)
	}
	// Single use.
	if _, err := svc.VerifyEmail(ctx, accounts.VerifyRequest{Token: token}); code(err) != "invalid_token" {
		t.Fatalf("second use: %v", err)
	}
	if ok, err := svc.OwnerEmailVerified(ctx, ws); !ok || err != nil {
		t.Fatalf("OwnerEmailVerified %v %v", ok, err)
	}
	if w, _ := svc.Workspace(ctx, ws); !w.OwnerEmailVerified {
		t.Fatalf("workspace %+v", w)
	}
	if _, err := svc.RequestEmailVerification(ctx, owner); status(err) != http.StatusConflict {
		t.Fatalf("already verified: %v", err)
	}

	// A developer's verification does not make the owner's e-mail verified
	// for another workspace's purposes, and mails are limited per hour.
	inv, err := svc.Invite(ctx, owner, accounts.InviteRequest{Email: "dev@example.com", Role: auth.Developer})
	if err != nil {
		t.Fatal(err)
	}
	dev := &auth.Principal{WorkspaceID: ws, MemberID: inv.Member.ID, Role: auth.Developer}
	for i := range accounts.VerificationsPerHour {
		if _, err := svc.RequestEmailVerification(ctx, dev); err != nil {
			t.Fatalf("mail %d: %v", i, err)
		}
	}
	if _, err := svc.RequestEmailVerification(ctx, dev); status(err) != http.StatusTooManyRequests {
		t.Fatalf("past the hourly limit: %v", err)
	}
	clk.Advance(time.Hour)
	if _, err := svc.RequestEmailVerification(ctx, dev); err != nil {
		t.Fatalf("after an hour: %v", err)
	}
}

// The default mailer writes the message to a file only its owner reads,
// and logs the recipient and the file, never the token.
func TestFileMailer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mail")
	var logs bytes.Buffer
	f := &accounts.FileMailer{Dir: dir, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	if err := f.Send(context.Background(), accounts.Message{To: "owner@example.com", Subject: "Verify", Body: "token svcverify_secret"}); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("mail dir: %v %v", entries, err)
	}
	info, _ := entries[0].Info()
	body, _ := os.ReadFile(filepath.Join(dir, entries[0].Name()))
	if info.Mode().Perm() != 0o600 || !strings.Contains(string(body), "svcverify_secret") || !strings.Contains(string(body), "To: owner@example.com") {
		t.Fatalf("mail file %v: %s", info.Mode(), body)
	}
	if !strings.Contains(logs.String(), entries[0].Name()) || strings.Contains(logs.String(), "svcverify_secret") {
		t.Fatalf("log: %s", logs.String())
	}
}
