package cache

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func staticResp(body string) StaticResponse {
	return StaticResponse{
		Status:       200,
		ContentType:  []byte("text/html; charset=utf-8"),
		ETag:         []byte(`"` + body + `"`),
		LastModified: []byte(httpDate(-time.Hour)),
		Body:         []byte(body),
	}
}

func TestStatic(t *testing.T) {
	const ttl = time.Hour
	type set struct {
		key  StaticKey
		body string
		ttl  time.Duration
	}
	type get struct {
		after time.Duration // clock advance before the lookup
		key   StaticKey
		want  string // "" for a miss
	}
	k := func(dep, path, enc string) StaticKey {
		return StaticKey{Deployment: dep, Path: []byte(path), Encoding: enc}
	}
	tests := []struct {
		name string
		sets []set
		gets []get
	}{
		{
			name: "hit",
			sets: []set{{k("d1", "/", ""), "home", ttl}},
			gets: []get{{key: k("d1", "/", ""), want: "home"}},
		},
		{
			name: "deployment isolation: same path, two deployments, two bodies",
			sets: []set{{k("d1", "/index.html", ""), "old", ttl}, {k("d2", "/index.html", ""), "new", ttl}},
			gets: []get{{key: k("d1", "/index.html", ""), want: "old"}, {key: k("d2", "/index.html", ""), want: "new"}, {key: k("d3", "/index.html", "")}},
		},
		{
			name: "content-encoding variants are separate",
			sets: []set{{k("d1", "/app.js", ""), "plain", ttl}, {k("d1", "/app.js", "br"), "brotli", ttl}},
			gets: []get{{key: k("d1", "/app.js", ""), want: "plain"}, {key: k("d1", "/app.js", "br"), want: "brotli"}, {key: k("d1", "/app.js", "gzip")}},
		},
		{
			name: "key parts cannot run into each other",
			sets: []set{{k("d1", "/a", ""), "x", ttl}},
			gets: []get{{key: k("d1/", "a", "")}, {key: k("d", "1/a", "")}, {key: k("d1", "/", "a")}},
		},
		{
			name: "TTL expiry by the injected clock",
			sets: []set{{k("d1", "/", ""), "home", 10 * time.Second}},
			gets: []get{{after: 9 * time.Second, key: k("d1", "/", ""), want: "home"}, {after: time.Second, key: k("d1", "/", "")}},
		},
		{
			name: "CDN disabled (TTL 0) stores nothing",
			sets: []set{{k("d1", "/", ""), "home", StaticTTL(false, 3600)}, {k("d1", "/b", ""), "b", StaticTTL(true, 0)}},
			gets: []get{{key: k("d1", "/", "")}, {key: k("d1", "/b", "")}},
		},
		{
			name: "a new store replaces the old one",
			sets: []set{{k("d1", "/", ""), "v1", ttl}, {k("d1", "/", ""), "v2", ttl}},
			gets: []get{{key: k("d1", "/", ""), want: "v2"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			c := newCache(t, Config{}, clk)
			for _, s := range tt.sets {
				c.SetStatic(s.key, staticResp(s.body), s.ttl)
				c.Wait()
			}
			for _, g := range tt.gets {
				clk.Add(g.after)
				e, ok := c.GetStatic(g.key)
				if g.want == "" {
					if ok {
						t.Fatalf("GetStatic(%s %s %s) = %q, want miss", g.key.Deployment, g.key.Path, g.key.Encoding, e.Body)
					}
					continue
				}
				if !ok || string(e.Body) != g.want {
					t.Fatalf("GetStatic(%s %s %s) = %v, want %q", g.key.Deployment, g.key.Path, g.key.Encoding, ok, g.want)
				}
			}
		})
	}
}

func TestStaticEntryCopiesAndResponds(t *testing.T) {
	clk := newClock()
	c := newCache(t, Config{}, clk)
	key := StaticKey{Deployment: "d1", Path: []byte("/app.js"), Encoding: "gzip"}
	r := staticResp("js")
	r.ContentEncoding = []byte("gzip")
	if !c.SetStatic(key, r, time.Hour) {
		t.Fatal("SetStatic refused")
	}
	c.Wait()
	// The caller keeps ownership of its buffers.
	r.Body[0] = 'X'
	key.Path[1] = 'X'
	e, ok := c.GetStatic(StaticKey{Deployment: "d1", Path: []byte("/app.js"), Encoding: "gzip"})
	if !ok || string(e.Body) != "js" {
		t.Fatalf("entry changed with the caller's buffers: %v %q", ok, e.Body)
	}
	clk.Add(90 * time.Second)
	var resp fasthttp.Response
	e.Respond(&resp, clk.Now())
	for _, tc := range []struct{ name, want string }{
		{"Content-Type", "text/html; charset=utf-8"},
		{"Content-Encoding", "gzip"},
		{"ETag", `"js"`},
		{"Last-Modified", httpDate(-time.Hour)},
		{"Age", "90"},
	} {
		if got := string(resp.Header.Peek(tc.name)); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, got, tc.want)
		}
	}
	if resp.StatusCode() != 200 || string(resp.Body()) != "js" {
		t.Errorf("status %d body %q", resp.StatusCode(), resp.Body())
	}
}

func TestStaticLimits(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		body int
		want bool
	}{
		{name: "within MaxEntryBytes", cfg: Config{MaxEntryBytes: 4096}, body: 1024, want: true},
		{name: "over MaxEntryBytes not stored", cfg: Config{MaxEntryBytes: 4096}, body: 8192, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache(t, tt.cfg, nil)
			key := StaticKey{Deployment: "d", Path: []byte("/big")}
			got := c.SetStatic(key, StaticResponse{Status: 200, Body: make([]byte, tt.body)}, time.Hour)
			c.Wait()
			_, hit := c.GetStatic(key)
			if got != tt.want || hit != tt.want {
				t.Fatalf("SetStatic = %v, hit = %v, want %v", got, hit, tt.want)
			}
		})
	}
}

// TestCollision forces every key onto one hash: a collision must be a miss,
// never another key's response.
func TestCollision(t *testing.T) {
	c := newCache(t, Config{}, newClock())
	c.hash = func([]byte) uint64 { return 42 }
	a := StaticKey{Deployment: "d1", Path: []byte("/a")}
	b := StaticKey{Deployment: "d1", Path: []byte("/b")}
	c.SetStatic(a, staticResp("A"), time.Hour)
	c.Wait()
	t.Run("static: other key misses", func(t *testing.T) {
		if e, ok := c.GetStatic(b); ok {
			t.Fatalf("GetStatic(b) = %q, want miss", e.Body)
		}
	})
	t.Run("static: own key hits", func(t *testing.T) {
		if e, ok := c.GetStatic(a); !ok || string(e.Body) != "A" {
			t.Fatalf("GetStatic(a) = %v", ok)
		}
	})
	t.Run("shared: colliding static entry is not a shared hit", func(t *testing.T) {
		if r := c.Lookup("app", newReq(t, "GET /a")); r.State != Miss {
			t.Fatalf("Lookup = %v, want miss", r.State)
		}
	})
	t.Run("shared: other URL misses", func(t *testing.T) {
		req := newReq(t, "GET /x")
		c.Store("app", req, newResp(t, 200, "X", "Cache-Control: max-age=60"), t0, t0)
		c.Wait()
		if r := c.Lookup("app", newReq(t, "GET /y")); r.State != Miss {
			t.Fatalf("Lookup(/y) = %v, want miss", r.State)
		}
		if r := c.Lookup("app", req); r.State != Hit || string(r.Entry.Body()) != "X" {
			t.Fatalf("Lookup(/x) = %v", r.State)
		}
	})
}
