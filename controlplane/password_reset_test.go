package controlplane_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/cptest"
)

// resetToken returns the token of a reset mail to address not in seen
// (and adds it there), "" when there is none.
func resetToken(env *cptest.Env, address string, seen map[string]bool) string {
	env.T.Helper()
	files, _ := filepath.Glob(filepath.Join(env.CP.Config().DataDir, "mail", "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), "To: <"+address+">") {
			continue
		}
		if t := regexp.MustCompile(`svcreset_[A-Za-z0-9_-]+`).FindString(string(b)); t != "" && !seen[t] {
			seen[t] = true
			return t
		}
	}
	return ""
}

// TestPasswordReset: a forgotten password is reset by a mailed token, which
// also proves the address; someone who signed up first with an address
// that is not theirs cannot keep its owner out (their sessions end and
// their second factor goes). Every refusal changes nothing.
func TestPasswordReset(t *testing.T) {
	env := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) { c.Accounts.SignUp = accounts.SignUpPolicy{Open: true} }})
	anon := env.Client("")
	const victim = "ada@example.com"
	seen := map[string]bool{}
	// A squatter signs up first with Ada's address.
	anon.Must(http.StatusAccepted, "POST", "/api/signup", map[string]any{"email": victim, "password": "the squatter's password"})
	squatter := env.SignIn(victim, "the squatter's password", "")

	// An address without an account gets the same answer and no mail.
	a := anon.Must(http.StatusAccepted, "POST", "/api/account/password/reset", map[string]any{"email": "nobody@example.com"})
	if !strings.Contains(string(a.Body), "nobody@example.com") || resetToken(env, "nobody@example.com", seen) != "" {
		t.Fatalf("unknown address: %s, or a mail was sent", a.Body)
	}
	anon.Must(http.StatusAccepted, "POST", "/api/account/password/reset", map[string]any{"email": "Ada@Example.com"})
	tok := resetToken(env, victim, seen)
	if tok == "" {
		t.Fatal("no reset mail to the address")
	}

	for _, tc := range []struct {
		name, token, password, code string
		status                      int
	}{
		{"no token", "", "a new long password 1", "invalid_token", http.StatusNotFound},
		{"not a reset token", "svcverify_" + strings.Repeat("a", 40), "a new long password 1", "invalid_token", http.StatusNotFound},
		{"unknown token", "svcreset_" + strings.Repeat("a", 40), "a new long password 1", "invalid_token", http.StatusNotFound},
		{"too long", "svcreset_" + strings.Repeat("a", 300), "a new long password 1", "invalid_token", http.StatusNotFound},
		{"weak password", tok, "short", "weak_password", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := anon.Do("POST", "/api/account/password/reset/confirm", map[string]any{"token": tc.token, "password": tc.password})
			if r.Status != tc.status || r.ErrorCode() != tc.code {
				t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
		})
	}
	// The refusals changed nothing: the squatter still signs in.
	env.SignIn(victim, "the squatter's password", "")

	anon.Must(http.StatusOK, "POST", "/api/account/password/reset/confirm", map[string]any{"token": tok, "password": "Ada's own long password"})
	if r := squatter.Do("GET", "/api/workspace", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("the squatter's session after the reset: %d %s", r.Status, r.Body)
	}
	if r := anon.Do("POST", "/api/session", map[string]any{"email": victim, "password": "the squatter's password"}); r.Status != http.StatusUnauthorized {
		t.Fatalf("the old password after the reset: %d %s", r.Status, r.Body)
	}
	ada := env.SignIn(victim, "Ada's own long password", "")
	// The mail proved the address: the signed-up workspace works now.
	ada.Must(http.StatusCreated, "POST", "/api/projects", map[string]any{"name": "first"})
	if r := anon.Do("POST", "/api/account/password/reset/confirm", map[string]any{"token": tok, "password": "another long password"}); r.Status != http.StatusNotFound {
		t.Fatalf("a token used twice: %d %s", r.Status, r.Body)
	}

	t.Run("expired", func(t *testing.T) {
		anon.Must(http.StatusAccepted, "POST", "/api/account/password/reset", map[string]any{"email": victim})
		old := resetToken(env, victim, seen)
		if old == "" {
			t.Fatal("no second reset mail")
		}
		env.Clock.Advance(accounts.ResetLifetime + time.Second)
		if r := anon.Do("POST", "/api/account/password/reset/confirm", map[string]any{"token": old, "password": "another long password"}); r.Status != http.StatusNotFound {
			t.Fatalf("an expired token: %d %s", r.Status, r.Body)
		}
		env.SignIn(victim, "Ada's own long password", "")
	})
	t.Run("throttled per address", func(t *testing.T) {
		env.Clock.Advance(2 * time.Hour)
		var last *cptest.Response
		for i := 0; i <= accounts.ResetsPerHour; i++ {
			last = anon.Do("POST", "/api/account/password/reset", map[string]any{"email": victim})
		}
		if last.Status != http.StatusTooManyRequests || last.Header.Get("Retry-After") == "" {
			t.Fatalf("%d %s, want 429 with Retry-After", last.Status, last.Body)
		}
	})
}
