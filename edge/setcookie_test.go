package edge

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/valyala/fasthttp"
)

// cookieCases are Set-Cookie values an origin of app.apps.test sends and
// what the visitor must receive.
var cookieCases = []struct {
	name, in, out string
}{
	{"apps domain", "a=1; Domain=apps.test; Path=/; Secure; HttpOnly; SameSite=Lax", "a=1; Path=/; Secure; HttpOnly; SameSite=Lax"},
	{"apps domain with a dot, any case", "b=2; Path=/x; domain=.APPS.TEST; Max-Age=60", "b=2; Path=/x; Max-Age=60"},
	{"own host", "c=3; Domain=app.apps.test; Secure", "c=3; Domain=app.apps.test; Secure"},
	{"own host with a dot", "d=4; Domain=.App.Apps.Test; HttpOnly", "d=4; Domain=.App.Apps.Test; HttpOnly"},
	{"another tenant", "e=5; Domain=other.apps.test; SameSite=None; Secure", "e=5; SameSite=None; Secure"},
	{"another domain", "f=6; Expires=Wed, 21 Oct 2037 07:28:00 GMT; Domain=evil.example", "f=6; Expires=Wed, 21 Oct 2037 07:28:00 GMT"},
	{"a host below", "g=7; Domain=x.app.apps.test", "g=7"},
	{"the last Domain wins in browsers: every foreign one goes", "h=8; Domain=app.apps.test; Domain=apps.test", "h=8; Domain=app.apps.test"},
	{"same name, other path", "a=9; Domain=apps.test; Path=/other", "a=9; Path=/other"},
	{"no attributes", "i=10", "i=10"},
}

// TestSetCookieScopedToSite: an app's Set-Cookie fields reach the visitor
// over HTTP/1.1, HTTP/2 and HTTP/3 with every Domain attribute that is not
// the site's own host removed, the other attributes as they were, every
// field in order; a 304 that revalidates a stored response is scoped alike.
func TestSetCookieScopedToSite(t *testing.T) {
	se := newSharedEdge(t)
	se.origin.handle("/cookies", func(w http.ResponseWriter, r *http.Request) {
		for _, c := range cookieCases {
			w.Header().Add("Set-Cookie", c.in)
		}
		io.WriteString(w, "ok")
	})
	var want []string
	for _, c := range cookieCases {
		want = append(want, c.out)
	}
	// A stored response revalidated by a 304 that sets a cookie is served
	// once with it, then dropped from the store: one path per protocol.
	for _, path := range []string{"/revalidated/1", "/revalidated/2", "/revalidated/3"} {
		se.origin.handle(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "no-cache")
			w.Header().Set("Etag", `"v1"`)
			if r.Header.Get("If-None-Match") == `"v1"` {
				w.Header().Add("Set-Cookie", "r=1; Domain=.apps.test; Path=/; Secure")
				w.WriteHeader(http.StatusNotModified)
				return
			}
			io.WriteString(w, "stored")
		})
		se.get(path).want(t, 200, "MISS", "stored")
	}
	for _, c := range []struct {
		name   string
		client *http.Client
		major  int
	}{{"HTTP/1.1", se.client, 1}, {"HTTP/2", se.h2Client(), 2}, {"HTTP/3", se.h3Client(t), 3}} {
		for _, tc := range []struct {
			path, xcache, body string
			want               []string
		}{
			{"/cookies", "MISS", "ok", want},
			{"/revalidated/" + strconv.Itoa(c.major), "REVALIDATED", "stored", []string{"r=1; Path=/; Secure"}},
		} {
			t.Run(c.name+tc.path, func(t *testing.T) {
				resp, err := c.client.Get("https://app.apps.test" + tc.path)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.ProtoMajor != c.major || resp.StatusCode != 200 || string(b) != tc.body || resp.Header.Get("X-Cache") != tc.xcache {
					t.Fatalf("%s %d %q X-Cache %q", resp.Proto, resp.StatusCode, b, resp.Header.Get("X-Cache"))
				}
				if got := resp.Header.Values("Set-Cookie"); !slices.Equal(got, tc.want) {
					t.Fatalf("Set-Cookie\n got %q\nwant %q", got, tc.want)
				}
			})
		}
	}
}

// TestSetCookieScopedOnUpgrade: the origin's answer to an upgrade is
// scoped too, the 101 that starts a WebSocket and a refusal alike.
func TestSetCookieScopedOnUpgrade(t *testing.T) {
	se := newSharedEdge(t)
	se.origin.handle("/ws", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Set-Cookie", "ws=1; Domain=apps.test; Path=/; HttpOnly")
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c.Close(websocket.StatusNormalClosure, "")
	})
	se.origin.handle("/nows", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Set-Cookie", "no=1; Domain=apps.test; SameSite=Strict")
		http.Error(w, "no websockets here", http.StatusBadRequest)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/ws", http.StatusSwitchingProtocols, "ws=1; Path=/; HttpOnly"},
		{"/nows", http.StatusBadRequest, "no=1; SameSite=Strict"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			c, resp, _ := se.wsDial(ctx, tc.path, "")
			if c != nil {
				c.CloseNow()
			}
			if resp == nil || resp.StatusCode != tc.status {
				t.Fatalf("answer %v, want %d", resp, tc.status)
			}
			if got := resp.Header.Values("Set-Cookie"); len(got) != 1 || got[0] != tc.want {
				t.Fatalf("Set-Cookie %q, want [%q]", got, tc.want)
			}
		})
	}
}

// TestScopeCookie is the attribute rewriter on its own.
func TestScopeCookie(t *testing.T) {
	cases := append(slices.Clone(cookieCases), []struct{ name, in, out string }{
		{"spaces and tabs around the name", "j=1;\t DOMAIN \t=apps.test ; Path=/", "j=1; Path=/"},
		{"a control byte before the name", "k=1;\x01Domain=apps.test", "k=1"},
		{"empty Domain", "l=1; Domain=; Secure", "l=1; Secure"},
		{"Domain without a value", "m=1; Domain; Secure", "m=1; Secure"},
		{"own host with a trailing dot is not the host", "n=1; Domain=app.apps.test.", "n=1"},
		{"two leading dots", "o=1; Domain=..app.apps.test", "o=1"},
		{"a value that says Domain", "p=Domain=apps.test; Path=/", "p=Domain=apps.test; Path=/"},
		{"attribute names that hold domain", "q=1; Domains=apps.test; XDomain=apps.test", "q=1; Domains=apps.test; XDomain=apps.test"},
		{"empty attributes", "r=1;;; Domain=apps.test;", "r=1;;;"},
		{"empty", "", ""},
	}...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := scopeCookie(nil, []byte(tc.in), "app.apps.test", true)
			if string(got) != tc.out || changed != (tc.in != tc.out) {
				t.Fatalf("scopeCookie(%q) = %q, %v; want %q", tc.in, got, changed, tc.out)
			}
			if _, c := scopeCookie(nil, []byte(tc.in), "app.apps.test", false); c != changed {
				t.Fatalf("the check says changed=%v, the rewrite %v", c, changed)
			}
		})
	}
	// An empty host keeps no Domain at all.
	if got, _ := scopeCookie(nil, []byte("a=1; Domain=; Path=/"), "", true); string(got) != "a=1; Path=/" {
		t.Fatalf("empty host: %q", got)
	}
}

// TestScopeCookies: the fields of a response header, duplicates of a name
// and their order kept, the other fields untouched.
func TestScopeCookies(t *testing.T) {
	var h fasthttp.ResponseHeader
	h.Set("Content-Type", "text/plain")
	for _, c := range cookieCases {
		h.Add("Set-Cookie", c.in)
	}
	h.Set("X-Other", "Domain=apps.test")
	scopeCookies(&h, "app.apps.test")
	var got []string
	for _, v := range h.Cookies() {
		got = append(got, string(v))
	}
	var want []string
	for _, c := range cookieCases {
		want = append(want, c.out)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("cookies\n got %q\nwant %q", got, want)
	}
	if string(h.Peek("X-Other")) != "Domain=apps.test" || string(h.ContentType()) != "text/plain" {
		t.Fatalf("other fields changed: %s", h.Header())
	}
}

// FuzzScopeCookie: whatever the value, the rewrite leaves no Domain that
// is not the host (read as a browser reads it), keeps the name-value pair
// and every other attribute in order, and changes nothing on a second pass.
func FuzzScopeCookie(f *testing.F) {
	for _, c := range cookieCases {
		f.Add(c.in, "app.apps.test")
	}
	f.Add("a=1;\tdomain\t=\t.apps.test\t;x", "app.apps.test")
	f.Add("a=1; Domain=", "")
	f.Fuzz(func(t *testing.T, v, host string) {
		host = strings.ToLower(host)
		out, changed := scopeCookie(nil, []byte(v), host, true)
		again, changedAgain := scopeCookie(nil, out, host, true)
		if changedAgain || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q -> %q", v, out, again)
		}
		if changed == (string(out) == v) {
			t.Fatalf("changed=%v but %q -> %q", changed, v, out)
		}
		in := strings.Split(v, ";")
		kept := strings.Split(string(out), ";")
		if kept[0] != in[0] {
			t.Fatalf("name-value pair %q became %q", in[0], kept[0])
		}
		var others []string
		for _, av := range in[1:] {
			name, value, _ := strings.Cut(av, "=")
			if !strings.EqualFold(strings.TrimFunc(name, func(r rune) bool { return r <= ' ' }), "domain") {
				others = append(others, av)
				continue
			}
			value = strings.TrimPrefix(strings.Trim(value, " \t"), ".")
			if host != "" && strings.EqualFold(value, host) {
				others = append(others, av)
			}
		}
		if !slices.Equal(kept[1:], others) {
			t.Fatalf("%q -> %q: attributes %q, want %q", v, out, kept[1:], others)
		}
	})
}
