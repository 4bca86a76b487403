package signin

import (
	"sync"
	"testing"
	"time"
)

// refreshOnce presents a refresh token and returns the answer.
func (e *env) refreshOnce(pool, token string) response {
	e.t.Helper()
	return e.endUser(pool, "POST", "/token/refresh", RefreshRequest{RefreshToken: token}, "")
}

// TestRefreshRotation: every refresh answers a new refresh token and
// retires the one used; presenting a used one again revokes the whole
// session (family): the newest refresh token and the session's access
// tokens stop working too, while the user's other sessions go on.
func TestRefreshRotation(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", nil)
	s0 := e.signUp(p.ID, "ada@example.com")
	other := e.signIn(p.ID, "ada@example.com", password)

	var s1, s2 Session
	r := e.refreshOnce(p.ID, s0.RefreshToken)
	r.Decode(t, &s1)
	if r.Status != 200 || s1.RefreshToken == s0.RefreshToken || s1.User.ID != s0.User.ID {
		t.Fatalf("first refresh: %d %s", r.Status, r.Body)
	}
	c0, _ := e.verifyOffline(p.ID, s0.AccessToken)
	c1, err := e.verifyOffline(p.ID, s1.AccessToken)
	if err != nil || c1["sid"] != c0["sid"] {
		t.Fatalf("the refreshed token is of another session: %v %v (%v)", c0["sid"], c1["sid"], err)
	}
	e.Clock.Advance(time.Minute)
	r = e.refreshOnce(p.ID, s1.RefreshToken)
	r.Decode(t, &s2)
	if r.Status != 200 {
		t.Fatalf("second refresh: %d %s", r.Status, r.Body)
	}

	// s1's refresh token again: a copy someone else holds.
	if r := e.refreshOnce(p.ID, s1.RefreshToken); r.Status != 401 || r.Code() != "refresh_token_reused" {
		t.Fatalf("reuse: %d %s", r.Status, r.Body)
	}
	for _, tt := range []struct {
		name string
		r    response
		code string
	}{
		{"newest refresh token", e.refreshOnce(p.ID, s2.RefreshToken), "invalid_refresh_token"},
		{"first refresh token", e.refreshOnce(p.ID, s0.RefreshToken), "invalid_refresh_token"},
		{"the session's access token", e.endUser(p.ID, "GET", "/user", nil, s2.AccessToken), "invalid_token"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.r.Status != 401 || tt.r.Code() != tt.code {
				t.Fatalf("%d %s, want 401 %s", tt.r.Status, tt.r.Body, tt.code)
			}
		})
	}
	if r := e.refreshOnce(p.ID, other.RefreshToken); r.Status != 200 {
		t.Fatalf("the user's other session: %d %s", r.Status, r.Body)
	}
}

// TestRefreshRace: the same refresh token presented twice at once (a
// stolen copy racing its owner) rotates at most once, and the loser's
// presentation revokes the session.
func TestRefreshRace(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", nil)
	s := e.signUp(p.ID, "ada@example.com")
	var wg sync.WaitGroup
	results := make([]response, 8)
	for i := range results {
		wg.Go(func() { results[i] = e.refreshOnce(p.ID, s.RefreshToken) })
	}
	wg.Wait()
	ok, reused := 0, 0
	var won Session
	for _, r := range results {
		switch {
		case r.Status == 200:
			ok++
			r.Decode(t, &won)
		case r.Status == 401 && r.Code() == "refresh_token_reused":
			reused++
		case r.Status == 401 && r.Code() == "invalid_refresh_token":
		default:
			t.Fatalf("unexpected answer %d %s", r.Status, r.Body)
		}
	}
	if ok > 1 || reused == 0 {
		t.Fatalf("%d rotations and %d reuse refusals of one token", ok, reused)
	}
	if ok == 1 {
		if r := e.refreshOnce(p.ID, won.RefreshToken); r.Status != 401 {
			t.Fatalf("the winner's token after the reuse: %d %s", r.Status, r.Body)
		}
	}
}

// TestSignOut: signing out with the access token or the refresh token ends
// that session; scope global ends every session of the user; signing out
// twice is fine.
func TestSignOut(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", nil)
	a := e.signUp(p.ID, "ada@example.com")
	b := e.signIn(p.ID, "ada@example.com", password)
	c := e.signIn(p.ID, "ada@example.com", password)
	d := e.signIn(p.ID, "ada@example.com", password)

	if r := e.endUser(p.ID, "POST", "/signout", nil, a.AccessToken); r.Status != 200 {
		t.Fatalf("sign out by access token: %d %s", r.Status, r.Body)
	}
	if r := e.refreshOnce(p.ID, a.RefreshToken); r.Status != 401 {
		t.Fatalf("refresh after sign-out: %d", r.Status)
	}
	if r := e.endUser(p.ID, "GET", "/user", nil, a.AccessToken); r.Status != 401 {
		t.Fatalf("access token after sign-out: %d", r.Status)
	}
	if r := e.endUser(p.ID, "POST", "/signout", SignOutRequest{RefreshToken: b.RefreshToken}, ""); r.Status != 200 {
		t.Fatalf("sign out by refresh token: %d %s", r.Status, r.Body)
	}
	if r := e.endUser(p.ID, "POST", "/signout", SignOutRequest{RefreshToken: b.RefreshToken}, ""); r.Status != 200 {
		t.Fatalf("signing out twice: %d %s", r.Status, r.Body)
	}
	if r := e.endUser(p.ID, "GET", "/user", nil, b.AccessToken); r.Status != 401 {
		t.Fatalf("b after sign-out: %d", r.Status)
	}
	if r := e.endUser(p.ID, "GET", "/user", nil, c.AccessToken); r.Status != 200 {
		t.Fatalf("c still signed in: %d", r.Status)
	}
	if r := e.endUser(p.ID, "POST", "/signout", SignOutRequest{Scope: "global"}, c.AccessToken); r.Status != 200 {
		t.Fatalf("global sign-out: %d %s", r.Status, r.Body)
	}
	for _, s := range []Session{c, d} {
		if r := e.refreshOnce(p.ID, s.RefreshToken); r.Status != 401 {
			t.Fatalf("a session after global sign-out: %d", r.Status)
		}
	}
	for _, tt := range []struct {
		name   string
		body   any
		bearer string
		status int
		code   string
	}{
		{"nothing named", nil, "", 400, "invalid_request"},
		{"bad scope", SignOutRequest{RefreshToken: d.RefreshToken, Scope: "everyone"}, "", 400, "invalid_request"},
		{"bad access token", nil, "x.y.z", 401, "invalid_token"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.endUser(p.ID, "POST", "/signout", tt.body, tt.bearer)
			if r.Status != tt.status || r.Code() != tt.code {
				t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tt.status, tt.code)
			}
		})
	}
}

// TestRefreshExpiry: an unused refresh token dies after the pool's
// refreshTokenSeconds, and the sweep deletes it and its session.
func TestRefreshExpiry(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", map[string]any{"refreshTokenSeconds": 3600})
	s := e.signUp(p.ID, "ada@example.com")
	e.Clock.Advance(time.Hour)
	if r := e.refreshOnce(p.ID, s.RefreshToken); r.Status != 401 || r.Code() != "invalid_refresh_token" {
		t.Fatalf("expired refresh token: %d %s", r.Status, r.Body)
	}
	if err := e.svc.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"signin_refresh_tokens", "signin_sessions"} {
		var n int
		e.DB.QueryRowContext(t.Context(), `SELECT count(*) FROM `+table+` WHERE pool_id = ?`, p.ID).Scan(&n)
		if n != 0 {
			t.Errorf("%s keeps %d rows after the sweep", table, n)
		}
	}
}
