package signin

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/usage"
)

// TestSignUpSignIn: a visitor signs up and in; the access token verifies
// offline against the pool's JWKS with golang-jwt and carries iss, aud,
// sub, exp, iat and a kid; /user answers with it; every successful sign-in
// is one end_user_logins; wrong passwords and unknown addresses get the
// same answer.
func TestSignUpSignIn(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", nil)
	s := e.signUp(p.ID, "Ada@Example.com")
	if s.TokenType != "Bearer" || s.ExpiresIn != DefaultAccessTokenSeconds || !strings.HasPrefix(s.RefreshToken, refreshPrefix) ||
		s.User.Email != "ada@example.com" || s.User.EmailVerified || s.User.LastSignInAt == nil {
		t.Fatalf("session %+v", s)
	}
	claims, err := e.verifyOffline(p.ID, s.AccessToken)
	if err != nil {
		t.Fatalf("offline verification: %v", err)
	}
	now := e.Clock.Now().Unix()
	if claims["sub"] != s.User.ID || claims["aud"] != p.ID || claims["iss"] != baseURL+"/api/auth/"+p.ID || claims["email"] != "ada@example.com" ||
		claims["iat"] != float64(now) || claims["exp"] != float64(now+DefaultAccessTokenSeconds) || claims["sid"] == "" {
		t.Fatalf("claims %v", claims)
	}
	tok, _, err := jwt.NewParser().ParseUnverified(s.AccessToken, jwt.MapClaims{})
	if err != nil || tok.Header["kid"] != p.Keys[0].Kid || tok.Header["alg"] != "ES256" {
		t.Fatalf("header %v (%v), want kid %s", tok.Header, err, p.Keys[0].Kid)
	}
	var u UserAnswer
	r := e.endUser(p.ID, "GET", "/user", nil, s.AccessToken)
	r.Decode(t, &u)
	if r.Status != 200 || u.User.ID != s.User.ID {
		t.Fatalf("/user: %d %s", r.Status, r.Body)
	}
	if e.logins() != 1 {
		t.Fatalf("logins after sign-up %v", e.logins())
	}
	s2 := e.signIn(p.ID, "ada@example.com", password)
	if s2.User.ID != s.User.ID || s2.RefreshToken == s.RefreshToken {
		t.Fatalf("second session %+v", s2)
	}
	if e.logins() != 2 {
		t.Fatalf("logins after sign-in %v", e.logins())
	}

	wrong := e.endUser(p.ID, "POST", "/signin", Credentials{Email: "ada@example.com", Password: "not the password"}, "")
	unknown := e.endUser(p.ID, "POST", "/signin", Credentials{Email: "nobody@example.com", Password: "not the password"}, "")
	if wrong.Status != 401 || wrong.Code() != "invalid_credentials" || !bytes.Equal(wrong.Body, unknown.Body) || unknown.Status != wrong.Status {
		t.Fatalf("wrong password %d %s; unknown address %d %s", wrong.Status, wrong.Body, unknown.Status, unknown.Body)
	}
	if e.logins() != 2 {
		t.Fatalf("failed sign-ins were metered: %v", e.logins())
	}

	refusals := []struct {
		name, path, body, code string
		status                 int
	}{
		{"taken address", "/signup", `{"email":"ADA@example.com","password":"another password"}`, "email_taken", 409},
		{"short password", "/signup", `{"email":"bob@example.com","password":"short"}`, "weak_password", 400},
		{"not an address", "/signup", `{"email":"bob","password":"long enough password"}`, "invalid_request", 400},
		{"address with a name", "/signup", `{"email":"Bob <bob@example.com>","password":"long enough password"}`, "invalid_request", 400},
		{"unknown field", "/signup", `{"email":"bob@example.com","password":"long enough password","admin":true}`, "unknown_field", 400},
		{"no password", "/signin", `{"email":"ada@example.com"}`, "invalid_request", 400},
		{"empty body", "/signin", ``, "invalid_request", 400},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			r := e.endUser(p.ID, "POST", tt.path, tt.body, "")
			if r.Status != tt.status || r.Code() != tt.code {
				t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tt.status, tt.code)
			}
		})
	}
	if r := e.endUser("sip_nope", "POST", "/signin", Credentials{Email: "ada@example.com", Password: password}, ""); r.Status != 404 {
		t.Fatalf("unknown pool: %d", r.Status)
	}
}

// TestAccessTokenExpiry: an access token is refused by /user and by an
// offline verifier once its exp (the pool's accessTokenSeconds) passes on
// the injected clock, and accepted up to then.
func TestAccessTokenExpiry(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", map[string]any{"accessTokenSeconds": 120})
	s := e.signUp(p.ID, "ada@example.com")
	if s.ExpiresIn != 120 || !s.ExpiresAt.Equal(e.Clock.Now().Add(120*time.Second)) {
		t.Fatalf("expiry %d %v", s.ExpiresIn, s.ExpiresAt)
	}
	e.Clock.Advance(119 * time.Second)
	if r := e.endUser(p.ID, "GET", "/user", nil, s.AccessToken); r.Status != 200 {
		t.Fatalf("before exp: %d %s", r.Status, r.Body)
	}
	if _, err := e.verifyOffline(p.ID, s.AccessToken); err != nil {
		t.Fatalf("before exp offline: %v", err)
	}
	e.Clock.Advance(time.Second)
	r := e.endUser(p.ID, "GET", "/user", nil, s.AccessToken)
	if r.Status != 401 || r.Code() != "invalid_token" || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("at exp: %d %s %v", r.Status, r.Body, r.Header)
	}
	if _, err := e.verifyOffline(p.ID, s.AccessToken); err == nil {
		t.Fatal("offline verifier accepted an expired token")
	}
	// The refresh token still works, and the new access token lives again.
	var n Session
	r = e.endUser(p.ID, "POST", "/token/refresh", RefreshRequest{RefreshToken: s.RefreshToken}, "")
	r.Decode(t, &n)
	if r.Status != 200 {
		t.Fatalf("refresh: %d %s", r.Status, r.Body)
	}
	if r := e.endUser(p.ID, "GET", "/user", nil, n.AccessToken); r.Status != 200 {
		t.Fatalf("refreshed token: %d %s", r.Status, r.Body)
	}
}

// TestAccessTokenRefusals: /user refuses anything but a token this pool
// signed: none, garbage, a changed payload, alg none, a key of another
// pool, another pool's issuer and audience signed with this pool's key id.
func TestAccessTokenRefusals(t *testing.T) {
	e := newEnv(t)
	a, b := e.pool("a", nil), e.pool("b", nil)
	sa := e.signUp(a.ID, "ada@example.com")
	sb := e.signUp(b.ID, "ada@example.com")
	parts := strings.Split(sa.AccessToken, ".")
	keyB, err := e.svc.signingKey(t.Context(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	keyA, err := e.svc.signingKey(t.Context(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	claims := func(pool, sub, sid string) Claims {
		now := e.Clock.Now()
		return Claims{Issuer: baseURL + "/api/auth/" + pool, Audience: pool, Subject: sub, SessionID: sid, IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Minute).Unix()}
	}
	pa, err := parseToken(sa.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	// b's key signing a token naming pool a: a does not know the key.
	forgedKey, _ := signToken(keyB.k, keyB.id, claims(a.ID, sa.User.ID, pa.claims.SessionID))
	// a's key id with b's key: the signature does not verify.
	forgedSig, _ := signToken(keyB.k, keyA.id, claims(a.ID, sa.User.ID, pa.claims.SessionID))
	// a's own key, but issuer and audience of b.
	wrongAud, _ := signToken(keyA.k, keyA.id, claims(b.ID, sa.User.ID, pa.claims.SessionID))
	// a's own key and claims, for a session that does not exist.
	noSession, _ := signToken(keyA.k, keyA.id, claims(a.ID, sa.User.ID, "sis_nope"))
	none := b64.EncodeToString([]byte(`{"alg":"none","kid":"`+keyA.id+`"}`)) + "." + parts[1] + "."
	tampered := parts[0] + "." + b64.EncodeToString([]byte(`{"iss":"x"}`)) + "." + parts[2]
	for _, tt := range []struct{ name, token string }{
		{"no token", ""},
		{"garbage", "not.a.token"},
		{"another pool's token", sb.AccessToken},
		{"another pool's key", forgedKey},
		{"this pool's kid, another key", forgedSig},
		{"another pool's issuer and audience", wrongAud},
		{"no such session", noSession},
		{"alg none", none},
		{"tampered payload", tampered},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.endUser(a.ID, "GET", "/user", nil, tt.token)
			if r.Status != 401 || r.Code() != "invalid_token" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	if _, err := e.verifyOffline(a.ID, sb.AccessToken); err == nil {
		t.Fatal("an offline verifier of pool a accepted pool b's token")
	}
	// Refresh tokens are per pool too.
	if r := e.endUser(a.ID, "POST", "/token/refresh", RefreshRequest{RefreshToken: sb.RefreshToken}, ""); r.Status != 401 || r.Code() != "invalid_refresh_token" {
		t.Fatalf("b's refresh token at a: %d %s", r.Status, r.Body)
	}
	if r := e.endUser(b.ID, "POST", "/token/refresh", RefreshRequest{RefreshToken: sb.RefreshToken}, ""); r.Status != 200 {
		t.Fatalf("b's refresh token at b after the refusal at a: %d %s", r.Status, r.Body)
	}
}

// TestDisabledUser: a disabled user cannot sign in, refresh or use /user
// (their sessions end); enabled again, they sign in.
func TestDisabledUser(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", nil)
	s := e.signUp(p.ID, "ada@example.com")
	var u UserAnswer
	e.must(200, "PATCH", "/api/auth-pools/"+p.ID+"/users/"+s.User.ID, map[string]any{"disabled": true}).Decode(t, &u)
	if !u.User.Disabled {
		t.Fatalf("not disabled: %+v", u)
	}
	for _, tt := range []struct {
		name, method, path string
		body               any
		bearer             string
		status             int
		code               string
	}{
		{"sign in", "POST", "/signin", Credentials{Email: "ada@example.com", Password: password}, "", 403, "user_disabled"},
		{"refresh", "POST", "/token/refresh", RefreshRequest{RefreshToken: s.RefreshToken}, "", 401, "invalid_refresh_token"},
		{"user", "GET", "/user", nil, s.AccessToken, 401, "invalid_token"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.endUser(p.ID, tt.method, tt.path, tt.body, tt.bearer)
			if r.Status != tt.status || r.Code() != tt.code {
				t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tt.status, tt.code)
			}
		})
	}
	if r := e.endUser(p.ID, "POST", "/signin", Credentials{Email: "ada@example.com", Password: "wrong password"}, ""); r.Status != 401 {
		t.Fatalf("a disabled user's wrong password: %d %s", r.Status, r.Body)
	}
	e.must(200, "PATCH", "/api/auth-pools/"+p.ID+"/users/"+s.User.ID, map[string]any{"disabled": false})
	e.signIn(p.ID, "ada@example.com", password)
}

// TestUserLimit: sign-ups stop at the plan's users per pool (403
// user_limit naming the limit), the attention list warns near it and is
// critical at it, and deleting a user makes room.
func TestUserLimit(t *testing.T) {
	e := newEnv(t, options{cfg: Config{Limits: map[plans.Name]Limits{plans.Pro: {Pools: 5, UsersPerPool: 5}}}})
	p := e.pool("customers", nil)
	var last Session
	for i := range 4 {
		last = e.signUp(p.ID, "user"+string(rune('a'+i))+"@example.com")
	}
	items, err := e.svc.Attention(t.Context(), e.Owner.WorkspaceID)
	if err != nil || len(items) != 1 || items[0].Severity != usage.Warning || items[0].ProjectID != e.project || !strings.Contains(items[0].Reason, "4 of 5 users") {
		t.Fatalf("near the cap: %v %+v", err, items)
	}
	e.signUp(p.ID, "usere@example.com")
	r := e.endUser(p.ID, "POST", "/signup", Credentials{Email: "userf@example.com", Password: password}, "")
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Limit   int    `json:"limit"`
		} `json:"error"`
	}
	r.Decode(t, &body)
	if r.Status != 403 || body.Error.Code != "user_limit" || body.Error.Limit != 5 || !strings.Contains(body.Error.Message, "limit of 5 users") {
		t.Fatalf("sixth user: %d %s", r.Status, r.Body)
	}
	items, _ = e.svc.Attention(t.Context(), e.Owner.WorkspaceID)
	if len(items) != 1 || items[0].Severity != usage.Critical {
		t.Fatalf("at the cap: %+v", items)
	}
	var pa PoolAnswer
	e.must(200, "GET", "/api/auth-pools/"+p.ID, nil).Decode(t, &pa)
	if pa.Pool.UserCount != 5 || pa.Pool.UserLimit != 5 {
		t.Fatalf("count %d limit %d", pa.Pool.UserCount, pa.Pool.UserLimit)
	}
	e.must(200, "DELETE", "/api/auth-pools/"+p.ID+"/users/"+last.User.ID, nil)
	e.signUp(p.ID, "userf@example.com")
	if r := e.endUser(p.ID, "GET", "/user", nil, last.AccessToken); r.Status != 401 {
		t.Fatalf("a deleted user's token: %d %s", r.Status, r.Body)
	}
}
