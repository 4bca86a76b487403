package edge

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/rules"
)

func TestClientAddr(t *testing.T) {
	trusted, err := ParseTrustedProxies([]string{"10.0.0.0/8, 192.168.1.1", "2001:db8::/32"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"untrusted peer ignores the header", "203.0.113.1", []string{"198.51.100.1"}, "203.0.113.1"},
		{"trusted peer without header", "10.1.1.1", nil, "10.1.1.1"},
		{"trusted peer names the client", "10.1.1.1", []string{"198.51.100.1"}, "198.51.100.1"},
		{"right-most untrusted hop", "10.1.1.1", []string{"1.1.1.1, 198.51.100.1, 10.2.2.2"}, "198.51.100.1"},
		{"spoofed left entries ignored", "10.1.1.1", []string{"127.0.0.1, 8.8.8.8"}, "8.8.8.8"},
		{"several header lines", "10.1.1.1", []string{"1.1.1.1", "8.8.4.4, 192.168.1.1"}, "8.8.4.4"},
		{"every hop trusted", "10.1.1.1", []string{"10.3.3.3, 10.2.2.2"}, "10.3.3.3"},
		{"garbage stops at the last trusted hop", "10.1.1.1", []string{"8.8.8.8, garbage, 10.2.2.2"}, "10.2.2.2"},
		{"port and brackets", "10.1.1.1", []string{"[2001:db9::1]:443"}, "2001:db9::1"},
		{"IPv4 with port", "10.1.1.1", []string{"198.51.100.1:5555"}, "198.51.100.1"},
		{"IPv4-mapped", "::ffff:10.1.1.1", []string{"::ffff:198.51.100.1"}, "198.51.100.1"},
		{"zone refused", "10.1.1.1", []string{"fe80::1%eth0"}, "10.1.1.1"},
		{"empty entries skipped", "10.1.1.1", []string{" , ,198.51.100.1 , "}, "198.51.100.1"},
		{"IPv6 proxy", "2001:db8::5", []string{"198.51.100.9"}, "198.51.100.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h fasthttp.RequestHeader
			for _, v := range tc.xff {
				h.Add(headerXFF, v)
			}
			got := clientAddr(&h, netip.MustParseAddr(tc.peer).Unmap(), trusted)
			if got != netip.MustParseAddr(tc.want) {
				t.Fatalf("got %v, want %s", got, tc.want)
			}
		})
	}
	if _, err := ParseTrustedProxies([]string{"10.0.0.0/8,nonsense"}); err == nil {
		t.Error("a bad trusted proxy was accepted")
	}
}

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		h               string
		size            int64
		start, end      int64
		ok, satisfiable bool
	}{
		{"bytes=0-9", 100, 0, 9, true, true},
		{"bytes=90-", 100, 90, 99, true, true},
		{"bytes=-10", 100, 90, 99, true, true},
		{"bytes=-200", 100, 0, 99, true, true},
		{"bytes=50-500", 100, 50, 99, true, true},
		{"BYTES=1-2", 100, 1, 2, true, true},
		{"bytes=100-", 100, 0, 0, true, false},
		{"bytes=-0", 100, 0, 0, true, false},
		{"bytes=5-1", 100, 0, 0, false, false},
		{"bytes=0-1,5-6", 100, 0, 0, false, false},
		{"bytes=a-b", 100, 0, 0, false, false},
		{"bytes=", 100, 0, 0, false, false},
		{"items=0-1", 100, 0, 0, false, false},
		{"bytes=99999999999999999999-", 100, 0, 0, false, false},
	} {
		s, e, ok, sat := parseRange([]byte(tc.h), tc.size)
		if s != tc.start || e != tc.end || ok != tc.ok || sat != tc.satisfiable {
			t.Errorf("%q: %d-%d %v %v", tc.h, s, e, ok, sat)
		}
	}
}

func TestNegotiate(t *testing.T) {
	for ae, want := range map[string]encoding{
		"": encIdentity, "gzip": encGzip, "br": encBrotli, "gzip, deflate, br, zstd": encBrotli,
		"br;q=0.1, gzip;q=0.9": encGzip, "br;q=0": encIdentity, "*": encBrotli, "*;q=0": encIdentity,
		"gzip;q=0, *": encBrotli, "identity": encIdentity, "BR": encBrotli, "x-gzip": encGzip,
		"br;q=1.5": encBrotli, "br;q=0.000": encIdentity, "gzip;q=junk": encIdentity,
	} {
		if got := negotiate([]byte(ae)); got != want {
			t.Errorf("%q: %v, want %v", ae, got, want)
		}
	}
}

func TestNormalizeHost(t *testing.T) {
	for in, want := range map[string]string{
		"Blog.Apps.Test": "blog.apps.test", "blog.apps.test:8443": "blog.apps.test", "blog.apps.test.": "blog.apps.test",
		"blog.apps.test.:443": "blog.apps.test", "[::1]:443": "", "": "", strings.Repeat("a", 300): "",
	} {
		var buf [256]byte
		got, ok := normalizeHost(buf[:0], []byte(in))
		if string(got) != want || ok != (want != "") {
			t.Errorf("%q: %q %v", in, got, ok)
		}
	}
}

// TestGuardBeforeManifest proves the file guard answers 404 even for a
// private file that a (hand-made) manifest lists: the guard runs at
// request time, not only at deploy.
func TestGuardBeforeManifest(t *testing.T) {
	ue := newUnitEdge(t, rules.Settings{}, map[string][]byte{".env": []byte("SECRET=1"), "index.html": []byte("ok"), "id_rsa": []byte("k")})
	for _, p := range []string{"/.env", "/%2eenv", "/id_rsa", "/ID_RSA"} {
		var ctx fasthttp.RequestCtx
		request(&ctx, "GET", "blog.apps.test", p, "192.0.2.1:1", nil)
		ue.serve(&ctx, protoHTTPS)
		if ctx.Response.StatusCode() != 404 {
			t.Errorf("%s: %d %q", p, ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}

func TestThrottle(t *testing.T) {
	th := newThrottle(2, time.Minute)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, b := netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("2001:db8:1:2::1")
	const site = "prj_a"
	for range 2 {
		if _, ok := th.reserve(a, site, now); !ok {
			t.Fatal("throttled too early")
		}
	}
	if wait, ok := th.reserve(a, site, now); ok || wait <= 0 || wait > time.Minute {
		t.Fatalf("not throttled: %v %v", wait, ok)
	}
	if _, ok := th.reserve(a, "prj_b", now); !ok {
		t.Fatal("another site throttled")
	}
	if _, ok := th.reserve(b, site, now); !ok {
		t.Fatal("another address throttled")
	}
	th.reserve(netip.MustParseAddr("2001:db8:1:2::ffff"), site, now) // same /64
	if _, ok := th.reserve(b, site, now); ok {
		t.Fatal("IPv6 /64 not throttled as one")
	}
	if _, ok := th.reserve(a, site, now.Add(time.Minute)); !ok {
		t.Fatal("no refill after a minute")
	}
	th.release(a, site, now.Add(time.Minute))
	if _, ok := th.reserve(a, site, now.Add(time.Minute)); !ok {
		t.Fatal("a released attempt was not given back")
	}
	th.succeeded(a, site)
	if len(th.m) != 2 {
		t.Fatalf("entries: %d", len(th.m))
	}
}

// TestThrottleRightPasswordElsewhere is issue 11 item 3(b): 9 wrong on
// site B, 1 right on site A, repeated, must not give B endless guesses.
func TestThrottleRightPasswordElsewhere(t *testing.T) {
	th := newThrottle(10, time.Hour)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	addr := netip.MustParseAddr("203.0.113.9")
	checked := 0
	for round := range 5 {
		for range 9 {
			if _, ok := th.reserve(addr, "prj_b", now); ok {
				checked++
			}
		}
		if _, ok := th.reserve(addr, "prj_a", now); !ok {
			t.Fatalf("round %d: the right password on A throttled", round)
		}
		th.succeeded(addr, "prj_a")
	}
	if checked != 10 {
		t.Fatalf("%d wrong passwords checked on B, want the burst of 10", checked)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"ok", func(*Config) {}, ""},
		{"no control plane", func(c *Config) { c.ControlPlane = "" }, "controlPlane is required"},
		{"bad control plane", func(c *Config) { c.ControlPlane = "ftp://x" }, "not an http(s) URL"},
		{"no token", func(c *Config) { c.Token = "" }, "edge token"},
		{"bad proxy", func(c *Config) { c.TrustedProxies = []string{"x"} }, "trusted proxy"},
		{"bad addr", func(c *Config) { c.HTTPSAddr = "nope" }, "httpsAddr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{DataDir: t.TempDir(), ControlPlane: "http://127.0.0.1:1", Token: "svc_edge_x"}
			tc.edit(&c)
			c.Provision()
			err := c.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n"))) {
				t.Fatalf("err = %v, want one line with %q", err, tc.want)
			}
		})
	}
}

func FuzzClientAddr(f *testing.F) {
	for _, s := range []string{"1.2.3.4", "1.1.1.1, 10.0.0.1", "[::1]:80", "a,,b", "fe80::1%eth0", strings.Repeat("1.2.3.4,", 100)} {
		f.Add(s)
	}
	trusted, _ := ParseTrustedProxies([]string{"10.0.0.0/8", "1.2.3.0/24"})
	f.Fuzz(func(t *testing.T, v string) {
		var h fasthttp.RequestHeader
		h.Set(headerXFF, v)
		peer := netip.MustParseAddr("10.0.0.1")
		got := clientAddr(&h, peer, trusted)
		if !got.IsValid() {
			t.Fatalf("invalid client address for %q", v)
		}
		if got == peer {
			return
		}
		for e := range strings.SplitSeq(v, ",") {
			if a, ok := parseForwardedAddr(trimSpace([]byte(e))); ok && a == got {
				return
			}
		}
		t.Fatalf("client %v is neither the peer nor an entry of %q", got, v)
	})
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-9", "bytes=-5", "bytes=5-", "bytes=1-0", "bytes=0-1,2-3"} {
		f.Add(s, int64(100))
	}
	f.Fuzz(func(t *testing.T, h string, size int64) {
		if size < 0 {
			size = -size
		}
		s, e, ok, sat := parseRange([]byte(h), size)
		if ok && sat && (s < 0 || e < s || e >= size) {
			t.Fatalf("%q size %d: range %d-%d out of bounds", h, size, s, e)
		}
	})
}

func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{"gzip, br", "br;q=0.5", "*;q=0", ";;,,q=", "gzip;q=1.0000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ae string) {
		if e := negotiate([]byte(ae)); e >= numEncodings {
			t.Fatalf("%q: %v", ae, e)
		}
	})
}

// TestLargeFileStreams serves a file larger than a cache entry straight
// from its blob: whole, by range, and revalidated.
func TestLargeFileStreams(t *testing.T) {
	big := []byte(strings.Repeat("0123456789", 300)) // 3000 bytes
	ue := newUnitEdge(t, rules.Settings{}, map[string][]byte{"big.html": big}, func(c *Config) {
		c.Cache.MaxBytes, c.Cache.MaxEntryBytes = 1<<20, 1024
	})
	get := func(header map[string]string) *fasthttp.Response {
		var ctx fasthttp.RequestCtx
		request(&ctx, "GET", "blog.apps.test", "/big.html", "192.0.2.1:1", header)
		ue.serve(&ctx, protoHTTPS)
		var r fasthttp.Response
		ctx.Response.CopyTo(&r)
		r.SetBody(ctx.Response.Body())
		return &r
	}
	r := get(map[string]string{"Accept-Encoding": "br"})
	if r.StatusCode() != 200 || string(r.Body()) != string(big) || len(r.Header.ContentEncoding()) != 0 {
		t.Fatalf("whole: %d %d bytes %q", r.StatusCode(), len(r.Body()), r.Header.ContentEncoding())
	}
	etag := string(r.Header.Peek("ETag"))
	if r := get(map[string]string{"Range": "bytes=2990-"}); r.StatusCode() != 206 || string(r.Body()) != string(big[2990:]) ||
		string(r.Header.Peek("Content-Range")) != "bytes 2990-2999/3000" {
		t.Fatalf("range: %d %q %q", r.StatusCode(), r.Body(), r.Header.Peek("Content-Range"))
	}
	if r := get(map[string]string{"Range": "bytes=5000-"}); r.StatusCode() != 416 {
		t.Fatalf("unsatisfiable: %d", r.StatusCode())
	}
	if r := get(map[string]string{"If-None-Match": etag}); r.StatusCode() != 304 {
		t.Fatalf("304: %d", r.StatusCode())
	}
}

// TestACME checks the ACME mode without a CA: certificates are asked for
// configured hosts only, and http-01 challenges are answered on plain HTTP
// instead of redirected.
func TestACME(t *testing.T) {
	ue := newUnitEdge(t, rules.Settings{}, map[string][]byte{"index.html": []byte("ok")}, func(c *Config) {
		c.ACME = &ACMEConfig{Email: "ops@example.com", DirectoryURL: "https://127.0.0.1:1/directory"}
	})
	if ue.acme == nil || ue.CACertPath() != "" {
		t.Fatal("ACME not configured")
	}
	if err := ue.acmeHostPolicy(t.Context(), "blog.apps.test"); err != nil {
		t.Errorf("configured host refused: %v", err)
	}
	if err := ue.acmeHostPolicy(t.Context(), "evil.example"); err == nil {
		t.Error("certificate allowed for a host no site answers at")
	}
	ue.httpsPort = 443
	for path, want := range map[string]int{"/.well-known/acme-challenge/token": 404, "/page": 301} {
		var ctx fasthttp.RequestCtx
		request(&ctx, "GET", "blog.apps.test", path, "192.0.2.1:1", nil)
		ue.serveHTTP(&ctx)
		if ctx.Response.StatusCode() != want {
			t.Errorf("%s: %d, want %d", path, ctx.Response.StatusCode(), want)
		}
		if want == 301 && string(ctx.Response.Header.Peek("Location")) != "https://blog.apps.test/page" {
			t.Errorf("redirect to %q", ctx.Response.Header.Peek("Location"))
		}
	}
}
