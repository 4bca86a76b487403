package edge

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/rules"
)

// TestSitePassword walks the site-password flow: the form, wrong passwords,
// throttling per client address, the right password and its 7-day cookie,
// a cookie of another site, a new password ending old sessions, and a
// safe return address.
func TestSitePassword(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PasswordAttempts, c.PasswordRefill = 2, time.Hour })
	s := h.newSite("secret")
	s.deploy(map[string]string{"index.html": "<h1>members only</h1>", "page.html": "<h1>page</h1>", ".env": "X=1"})
	other := h.newSite("other")
	other.deploy(map[string]string{"index.html": "<h1>other</h1>"})
	h.env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"passwords": map[string]any{"secret": "correct horse", "other": "battery staple"}})
	h.synced()

	post := func(addr, password, next string, header ...string) *response {
		form := url.Values{"password": {password}, "next": {next}}.Encode()
		header = append(header, "Content-Type: application/x-www-form-urlencoded", "X-Forwarded-For: "+addr)
		return h.do("POST", s.host, passwordPath, strings.NewReader(form), header...)
	}

	r := h.get(s.host, "/page?x=1")
	if r.status != 401 || !strings.Contains(r.body, `action="/__platform/password"`) || !strings.Contains(r.body, `value="/page?x=1"`) ||
		r.header.Get("Cache-Control") != "no-store" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("form: %d %v %s", r.status, r.header, r.body)
	}
	if r := h.get(s.host, "/.env"); r.status != 401 {
		t.Errorf("the password comes before the file guard: %d", r.status)
	}

	// Wrong passwords, then throttling of that address only.
	for i := range 2 {
		if r := post("203.0.113.50", "wrong", "/"); r.status != 401 || !strings.Contains(r.body, "not right") {
			t.Fatalf("wrong password %d: %d %s", i, r.status, r.body)
		}
	}
	r = post("203.0.113.50", "correct horse", "/")
	if r.status != 429 || r.header.Get("Retry-After") == "" || !strings.Contains(r.body, "Too many") {
		t.Fatalf("throttled: %d %v", r.status, r.header)
	}

	// The right password from another address.
	r = post("203.0.113.51", "correct horse", "/page?x=1")
	if r.status != 303 || r.header.Get("Location") != "/page?x=1" {
		t.Fatalf("right password: %d %v %s", r.status, r.header, r.body)
	}
	cookie := r.header.Get("Set-Cookie")
	for _, want := range []string{rules.SessionCookieName + "=", "Max-Age=604800", "HttpOnly", "Secure", "SameSite=Lax", "Path=/"} {
		if !strings.Contains(strings.ToLower(cookie), strings.ToLower(want)) {
			t.Errorf("Set-Cookie %q lacks %q", cookie, want)
		}
	}
	value := strings.SplitN(strings.SplitN(cookie, ";", 2)[0], "=", 2)[1]
	withCookie := "Cookie: " + rules.SessionCookieName + "=" + value
	if r := h.get(s.host, "/page", withCookie); r.status != 200 || r.body != "<h1>page</h1>" {
		t.Fatalf("with cookie: %d %q", r.status, r.body)
	}
	if r := h.get(s.host, "/.env", withCookie); r.status != 404 {
		t.Errorf("file guard behind the password: %d", r.status)
	}
	if r := h.get(other.host, "/", withCookie); r.status != 401 {
		t.Errorf("cookie of another site admitted: %d", r.status)
	}
	if r := h.get(s.host, "/", "Cookie: "+rules.SessionCookieName+"=forged"); r.status != 401 {
		t.Errorf("forged cookie admitted: %d", r.status)
	}
	if r := post("203.0.113.52", "correct horse", "//evil.example/x"); r.header.Get("Location") != "/" {
		t.Errorf("open redirect: %q", r.header.Get("Location"))
	}

	// The same flow over HTTP/3.
	h3 := &http.Client{Transport: h.h3, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := h3.Post("https://"+s.host+passwordPath, "application/x-www-form-urlencoded",
		strings.NewReader(url.Values{"password": {"correct horse"}, "next": {"/page"}}.Encode()))
	if r := read(t, resp, err); r.status != 303 || r.proto != "HTTP/3.0" || !strings.Contains(r.header.Get("Set-Cookie"), rules.SessionCookieName) {
		t.Errorf("password over HTTP/3: %s %d %v", r.proto, r.status, r.header)
	}

	// Six days later the cookie still works; eight days later it does not.
	h.env.Clock.Advance(6 * 24 * time.Hour)
	if r := h.get(s.host, "/", withCookie); r.status != 200 {
		t.Errorf("cookie after 6 days: %d", r.status)
	}
	h.env.Clock.Advance(2 * 24 * time.Hour)
	if r := h.get(s.host, "/", withCookie); r.status != 401 {
		t.Errorf("cookie after 8 days: %d", r.status)
	}

	// A new password ends the sessions of the old one.
	r = post("203.0.113.53", "correct horse", "/")
	fresh := "Cookie: " + strings.SplitN(r.header.Get("Set-Cookie"), ";", 2)[0]
	if r := h.get(s.host, "/", fresh); r.status != 200 {
		t.Fatalf("fresh cookie: %d", r.status)
	}
	h.env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"passwords": map[string]any{"secret": "new password"}})
	h.synced()
	if r := h.get(s.host, "/", fresh); r.status != 401 {
		t.Errorf("cookie of the old password admitted: %d", r.status)
	}

	// Removing the password opens the site.
	h.env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"passwords": map[string]any{"secret": nil}})
	h.synced()
	if r := h.get(s.host, "/"); r.status != 200 {
		t.Errorf("after removing the password: %d", r.status)
	}
}
