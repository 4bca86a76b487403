package signin

import (
	"testing"
)

// TestCORS: browsers on the pool's effective origins (the project's own
// address until allowedOrigins is set, then only those) get the CORS
// headers on preflights and answers; other origins get 403 and no CORS
// header, so their pages cannot read anything; requests without an Origin
// (an app's server) are not a browser's and pass.
func TestCORS(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", nil)
	e.signUp(p.ID, "ada@example.com")
	preflight := func(origin, method, headers string) response {
		h := map[string]string{"Access-Control-Request-Method": method}
		if headers != "" {
			h["Access-Control-Request-Headers"] = headers
		}
		return e.call("OPTIONS", "/api/auth/"+p.ID+"/token/refresh", nil, req{origin: origin, header: h})
	}
	signIn := func(origin string) response {
		return e.call("POST", "/api/auth/"+p.ID+"/signin", Credentials{Email: "ada@example.com", Password: password}, req{origin: origin})
	}
	check := func(t *testing.T, r response, status int, code, allow string) {
		t.Helper()
		if r.Status != status || (code != "" && r.Code() != code) || r.Header.Get("Access-Control-Allow-Origin") != allow {
			t.Fatalf("%d %s %v; want %d %s with Access-Control-Allow-Origin %q", r.Status, r.Body, r.Header, status, code, allow)
		}
	}

	tests := []struct {
		name   string
		do     func() response
		status int
		code   string
		allow  string
	}{
		{"preflight from the project's address", func() response { return preflight(appOrigin, "POST", "Content-Type, Authorization") }, 204, "", appOrigin},
		{"preflight from elsewhere", func() response { return preflight("https://evil.example", "POST", "Content-Type") }, 403, "origin_not_allowed", ""},
		{"preflight from a look-alike", func() response { return preflight("https://shop.apps.test.evil.example", "POST", "") }, 403, "origin_not_allowed", ""},
		{"preflight over plain http", func() response { return preflight("http://shop.apps.test", "POST", "") }, 403, "origin_not_allowed", ""},
		{"preflight from a null origin", func() response { return preflight("null", "POST", "") }, 403, "origin_not_allowed", ""},
		{"preflight for PUT", func() response { return preflight(appOrigin, "PUT", "") }, 405, "method_not_allowed", ""},
		{"preflight for another header", func() response { return preflight(appOrigin, "POST", "X-Custom") }, 403, "header_not_allowed", ""},
		{"sign-in from the project's address", func() response { return signIn(appOrigin) }, 200, "", appOrigin},
		{"sign-in from elsewhere", func() response { return signIn("https://evil.example") }, 403, "origin_not_allowed", ""},
		{"sign-in without an origin", func() response { return signIn("") }, 200, "", ""},
		{"an error to an allowed origin is readable", func() response {
			return e.call("POST", "/api/auth/"+p.ID+"/signin", Credentials{Email: "ada@example.com", Password: "wrong password"}, req{origin: appOrigin})
		}, 401, "invalid_credentials", appOrigin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, tt.do(), tt.status, tt.code, tt.allow) })
	}
	r := preflight(appOrigin, "POST", "")
	if r.Header.Get("Access-Control-Allow-Methods") != "GET, POST" || r.Header.Get("Access-Control-Allow-Headers") != "Authorization, Content-Type" ||
		r.Header.Get("Access-Control-Allow-Credentials") != "" || r.Header.Get("Vary") == "" {
		t.Fatalf("preflight headers %v", r.Header)
	}

	// allowedOrigins replaces the project's address.
	e.must(200, "PATCH", "/api/auth-pools/"+p.ID, map[string]any{"settings": map[string]any{"allowedOrigins": []string{"https://app.example.com", "http://localhost:5173"}}})
	for _, tt := range []struct {
		origin string
		status int
		allow  string
	}{
		{"https://app.example.com", 200, "https://app.example.com"},
		{"http://localhost:5173", 200, "http://localhost:5173"},
		{appOrigin, 403, ""},
		{"https://app.example.com:8443", 403, ""},
	} {
		t.Run("allowed origins "+tt.origin, func(t *testing.T) {
			check(t, signIn(tt.origin), tt.status, "", tt.allow)
			want := 204
			if tt.status != 200 {
				want = 403
			}
			check(t, preflight(tt.origin, "POST", ""), want, "", tt.allow)
		})
	}
	if r := e.call("OPTIONS", "/api/auth/sip_nope/signin", nil, req{origin: appOrigin, header: map[string]string{"Access-Control-Request-Method": "POST"}}); r.Status != 404 {
		t.Fatalf("preflight of an unknown pool: %d", r.Status)
	}
}
