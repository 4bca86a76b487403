package edge

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// newOrigin starts an app or function origin answering body on every path.
func newOrigin(t *testing.T, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestShield drives every Shield path through the control plane's API and
// the edge: deny list, allow list, country (IPv4 and IPv6, against the real
// country database), AI crawlers and robots.txt, log-only, the scope per
// target kind, functions pinned to the rules of their deploy, the
// right-most untrusted X-Forwarded-For hop, and the counts reaching GET
// /api/services/shield/blocks.
func TestShield(t *testing.T) {
	h := newHarness(t)
	static := h.newSite("shop")
	static.deploy(map[string]string{"index.html": "<h1>shop</h1>", "robots.txt": "User-agent: *"})
	app := h.newSite("webapp")
	app.deployOrigin("app", newOrigin(t, "app ok").URL)
	fn := h.newSite("fn")
	fnOrigin := newOrigin(t, "fn ok").URL
	fn.deployOrigin("function", fnOrigin)

	type check struct {
		site   *testSite
		path   string
		header []string
		status int
		body   string
	}
	run := func(t *testing.T, checks []check) {
		t.Helper()
		for _, c := range checks {
			r := h.get(c.site.host, c.path, c.header...)
			if r.status != c.status || !strings.Contains(r.body, c.body) {
				t.Errorf("%s%s %v: %d %q, want %d %q", c.site.host, c.path, c.header, r.status, short(r.body), c.status, c.body)
			}
		}
	}
	xff := func(a string) string { return "X-Forwarded-For: " + a }
	const denied, gptBot = "203.0.113.7", "User-Agent: Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.1; +https://openai.com/gptbot)"

	t.Run("deny list and AI crawlers", func(t *testing.T) {
		h.shield(map[string]any{"denyIps": []string{"203.0.113.0/24", "2001:db8:bad::/48"}, "blockAiCrawlers": true})
		run(t, []check{
			{static, "/", []string{xff(denied)}, 403, "Access denied"},
			{static, "/", []string{xff("2001:db8:bad::1")}, 403, "Access denied"},
			{static, "/", []string{xff("198.51.100.1")}, 200, "shop"},
			{static, "/", []string{gptBot}, 403, "AI crawlers are not allowed"},
			{static, "/robots.txt", []string{gptBot}, 200, "User-agent"},
			{static, "/", []string{"User-Agent: Mozilla/5.0 (compatible; Googlebot/2.1)"}, 200, "shop"},
			// Server apps get country rules only.
			{app, "/", []string{xff(denied)}, 200, "app ok"},
			{app, "/", []string{gptBot}, 200, "app ok"},
			// Functions run the rules of their last deploy: none yet.
			{fn, "/", []string{xff(denied)}, 200, "fn ok"},
		})
		fn.deployOrigin("function", fnOrigin) // picks up the rules
		run(t, []check{
			{fn, "/", []string{xff(denied)}, 403, "Access denied"},
			{fn, "/", []string{gptBot}, 403, "AI crawlers"},
			{fn, "/", nil, 200, "fn ok"},
		})
		// An address on both lists is refused: deny beats allow.
		h.shield(map[string]any{"allowIps": []string{denied}})
		run(t, []check{{static, "/", []string{xff(denied)}, 403, "Access denied"}})
	})

	t.Run("country", func(t *testing.T) {
		needGeo(t)
		// de, de6: Germany (heise.de, Hetzner) in the fixture and real databases alike.
		const de, de6, us, jp = "193.99.144.80", "2a01:4f8::1", "8.8.8.8", "133.242.0.1"
		h.shield(map[string]any{"denyIps": []string{}, "allowIps": []string{jp}, "blockAiCrawlers": false,
			"blockedCountries": []string{"DE", "JP"}, "logOnly": false})
		fn.deployOrigin("function", fnOrigin)
		run(t, []check{
			{static, "/", []string{xff(de)}, 403, "Not available in your region"},
			{static, "/", []string{xff(de6)}, 403, "Not available in your region"},
			{static, "/", []string{xff(us)}, 200, "shop"},
			{static, "/", []string{xff(jp)}, 200, "shop"}, // allow list passes the country rule
			{app, "/", []string{xff(de)}, 403, "Not available in your region"},
			{app, "/", []string{xff(jp)}, 403, "Not available in your region"}, // no allow list for apps
			{app, "/", []string{xff(us)}, 200, "app ok"},
			{fn, "/", []string{xff(de)}, 403, "Not available in your region"},
			{fn, "/", []string{xff(us)}, 200, "fn ok"},
			// The right-most address that is not a trusted proxy is the client.
			{static, "/", []string{xff(de + ", " + us)}, 200, "shop"},
			{static, "/", []string{xff(us + ", " + de)}, 403, "region"},
			{static, "/", []string{xff(us + ", " + de + ", 127.0.0.1")}, 403, "region"},
			{static, "/", []string{xff("not-an-address")}, 200, "shop"}, // the peer, 127.0.0.1: XX, not blocked
		})
	})

	t.Run("log-only", func(t *testing.T) {
		needGeo(t)
		h.shield(map[string]any{"blockedCountries": []string{"DE"}, "logOnly": true, "allowIps": []string{}})
		run(t, []check{
			{static, "/", []string{xff("193.99.144.80")}, 200, "shop"},
			{app, "/", []string{xff("193.99.144.80")}, 403, "region"}, // apps have no log-only
		})
	})

	t.Run("disabled", func(t *testing.T) {
		h.shield(map[string]any{"enabled": false, "denyIps": []string{denied}, "logOnly": false})
		run(t, []check{{static, "/", []string{xff(denied)}, 200, "shop"}})
		h.shield(map[string]any{"enabled": true, "denyIps": []string{}})
	})

	t.Run("counts", func(t *testing.T) {
		want := map[string]bool{"shop/denyList/refused": true, "shop/aiCrawler/refused": true, "fn/denyList/refused": true}
		if loc, _ := realGeo(); loc != nil {
			want["shop/country/refused"], want["shop/country/wouldRefuse"], want["fn/country/refused"] = true, true, true
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			b := h.blocks()
			got := map[string]bool{}
			items, _ := b["items"].([]any)
			for _, it := range items {
				m := it.(map[string]any)
				if n, _ := m["refused"].(float64); n > 0 {
					got[fmt.Sprint(m["site"], "/", m["rule"], "/refused")] = true
				}
				if n, _ := m["wouldRefuse"].(float64); n > 0 {
					got[fmt.Sprint(m["site"], "/", m["rule"], "/wouldRefuse")] = true
				}
				if m["site"] == "webapp" {
					t.Errorf("a server app was counted: %v", m)
				}
			}
			missing := []string{}
			for k := range want {
				if !got[k] {
					missing = append(missing, k)
				}
			}
			if len(missing) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("blocks lack %v: %s", missing, jsonString(b))
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
