package signin

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// kidOf is the key id in a token's header.
func kidOf(t *testing.T, token string) string {
	t.Helper()
	tok, _, err := jwt.NewParser().ParseUnverified(token, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := tok.Header["kid"].(string)
	return kid
}

// TestKeyRotation: rotating makes the published next key current; the old
// key stays in the JWKS, and its tokens keep verifying (offline and at
// /user), until the last token it signed has expired, then the sweep drops
// it. A longer accessTokenSeconds set while a key signs keeps it published
// that much longer.
func TestKeyRotation(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", map[string]any{"accessTokenSeconds": 600})
	k1, k2 := p.Keys[0].Kid, p.Keys[1].Kid
	// The current key signs tokens living 900 s from now on.
	e.must(200, "PATCH", "/api/auth-pools/"+p.ID, map[string]any{"settings": map[string]any{"accessTokenSeconds": 900}})
	s := e.signUp(p.ID, "ada@example.com")
	if kidOf(t, s.AccessToken) != k1 {
		t.Fatal("not signed by the current key")
	}
	e.must(200, "PATCH", "/api/auth-pools/"+p.ID, map[string]any{"settings": map[string]any{"accessTokenSeconds": 300}})

	var a PoolAnswer
	e.must(200, "POST", "/api/auth-pools/"+p.ID+"/keys/rotate", nil).Decode(t, &a)
	keys := a.Pool.Keys
	if len(keys) != 3 || keys[0].Kid != k2 || keys[0].State != keyCurrent || keys[1].State != keyNext || keys[2].Kid != k1 || keys[2].State != keyRetired ||
		keys[2].PublishedUntil == nil || !keys[2].PublishedUntil.Equal(e.Clock.Now().Add(900*time.Second+clockSkew)) {
		t.Fatalf("after rotation %+v", keys)
	}
	k3 := keys[1].Kid
	if got := kids(e.jwks(p.ID)); !slices.Equal(got, []string{k2, k3, k1}) {
		t.Fatalf("jwks %v, want %v", got, []string{k2, k3, k1})
	}
	if s2 := e.signIn(p.ID, "ada@example.com", password); kidOf(t, s2.AccessToken) != k2 {
		t.Fatal("a new token is not signed by the new current key")
	}
	e.Clock.Advance(899 * time.Second)
	if _, err := e.verifyOffline(p.ID, s.AccessToken); err != nil {
		t.Fatalf("the old key's token offline: %v", err)
	}
	if r := e.endUser(p.ID, "GET", "/user", nil, s.AccessToken); r.Status != 200 {
		t.Fatalf("the old key's token at /user: %d %s", r.Status, r.Body)
	}
	e.Clock.Advance(time.Second + clockSkew)
	if err := e.svc.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := kids(e.jwks(p.ID)); !slices.Equal(got, []string{k2, k3}) {
		t.Fatalf("jwks after the old key's tokens expired: %v", got)
	}
}

// TestKeyRevoke: rotating with revokePrevious drops every earlier key at
// once: their tokens stop verifying at /user and offline, and the new
// current and next keys are both new.
func TestKeyRevoke(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", nil)
	s := e.signUp(p.ID, "ada@example.com")
	var a PoolAnswer
	e.must(200, "POST", "/api/auth-pools/"+p.ID+"/keys/rotate", map[string]any{"revokePrevious": true}).Decode(t, &a)
	got := kids(e.jwks(p.ID))
	if len(got) != 2 || slices.Contains(got, p.Keys[0].Kid) || slices.Contains(got, p.Keys[1].Kid) {
		t.Fatalf("jwks after revoking %v (was %v)", got, p.Keys)
	}
	if r := e.endUser(p.ID, "GET", "/user", nil, s.AccessToken); r.Status != 401 {
		t.Fatalf("a revoked key's token at /user: %d", r.Status)
	}
	if _, err := e.verifyOffline(p.ID, s.AccessToken); err == nil || !strings.Contains(err.Error(), "not in the JWKS") {
		t.Fatalf("a revoked key's token offline: %v", err)
	}
	// The session itself goes on: a refresh signs with the new key.
	var n Session
	r := e.refreshOnce(p.ID, s.RefreshToken)
	r.Decode(t, &n)
	if r.Status != 200 || kidOf(t, n.AccessToken) != a.Pool.Keys[0].Kid {
		t.Fatalf("refresh after revoking: %d %s", r.Status, r.Body)
	}
}

// TestKeyRotationSweep: the sweep rotates a key that has signed for
// KeyRotateEvery, once however often it runs, and leaves younger ones.
func TestKeyRotationSweep(t *testing.T) {
	e := newEnv(t, options{cfg: Config{KeyRotateEvery: 48 * time.Hour}})
	p := e.pool("customers", nil)
	e.Clock.Advance(47 * time.Hour)
	young := e.pool("young", nil)
	e.Clock.Advance(time.Hour)
	for range 2 {
		if err := e.svc.Sweep(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	var a PoolAnswer
	e.must(200, "GET", "/api/auth-pools/"+p.ID, nil).Decode(t, &a)
	if a.Pool.Keys[0].Kid != p.Keys[1].Kid || len(a.Pool.Keys) != 3 {
		t.Fatalf("after the sweep %+v, want %s current", a.Pool.Keys, p.Keys[1].Kid)
	}
	e.must(200, "GET", "/api/auth-pools/"+young.ID, nil).Decode(t, &a)
	if a.Pool.Keys[0].Kid != young.Keys[0].Kid {
		t.Fatal("a young key was rotated")
	}
}

// TestJWKSAnswer: the JWKS is public, readable from any page, cacheable,
// and holds only public parts.
func TestJWKSAnswer(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", nil)
	r := e.call("GET", "/api/auth/"+p.ID+"/.well-known/jwks.json", nil, req{origin: "https://anywhere.example"})
	if r.Status != http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") != "*" || r.Header.Get("Cache-Control") != "public, max-age=300" ||
		r.Header.Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("%d %v", r.Status, r.Header)
	}
	if strings.Contains(string(r.Body), `"d"`) {
		t.Fatalf("a private part in the JWKS: %s", r.Body)
	}
	var k JWKS
	r.Decode(t, &k)
	for _, j := range k.Keys {
		if j.Kty != "EC" || j.Crv != "P-256" || j.Alg != "ES256" || j.Use != "sig" || len(j.X) != 43 || len(j.Y) != 43 {
			t.Fatalf("jwk %+v", j)
		}
	}
}
