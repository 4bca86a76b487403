package edge

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
)

const (
	storageHostName = "storage.apps.test"
	bktPublic       = "bkt_0123456789abcdefghjk"
	bktPrivate      = "bkt_zzzzzzzzzzzzzzzzzzzz"
)

func TestStoragePath(t *testing.T) {
	for _, tc := range []struct {
		path   string
		bucket string // "" when refused
	}{
		{"/storage/" + bktPublic + "/a.txt", bktPublic},
		{"/storage/" + bktPublic + "/dir/sub/a.txt", bktPublic},
		{"/storage/" + bktPublic + "/a%20b.txt", bktPublic},
		{"/storage/" + bktPublic + "/a%2F%2E%2E%2Fb", bktPublic},
		{"/storage/" + bktPublic + "/.hidden", bktPublic},
		{"/storage/" + bktPublic + "/..a", bktPublic},
		{"/storage/bkt_1/x", "bkt_1"},
		{"/storage/" + bktPublic + "/" + strings.Repeat("k", maxStorageKeyLen), bktPublic},
		{"/storage/" + bktPublic + "/" + strings.Repeat("k", maxStorageKeyLen+1), ""},
		{"/", ""},
		{"/storage", ""},
		{"/storage/", ""},
		{"/storage/" + bktPublic, ""},
		{"/storage/" + bktPublic + "/", ""},
		{"/storage//a.txt", ""},
		{"/storage/" + bktPublic + "//a.txt", ""},
		{"/storage/" + bktPublic + "/a//b", ""},
		{"/storage/" + bktPublic + "/a/", ""},
		{"/storage/" + bktPublic + "/../../api/projects", ""},
		{"/storage/" + bktPublic + "/a/./b", ""},
		{"/storage/" + bktPublic + "/..", ""},
		{"/storage/" + bktPublic + "/.", ""},
		{"/storage/%62kt_1/x", ""},
		{"/storage/bkt_/x", ""},
		{"/storage/BKT_1/x", ""},
		{"/storage/bkt_A/x", ""},
		{"/storage/bkt_1_2/x", ""},
		{"/storage/buckets/x", ""},
		{"/storage/" + strings.Repeat("b", 65) + "/x", ""},
		{"/storage/" + bktPublic + "/a b", ""},
		{"/storage/" + bktPublic + "/a\\b", ""},
		{"/storage/" + bktPublic + "/a#b", ""},
		{"/storage/" + bktPublic + "/a?b", ""},
		{"/storage/" + bktPublic + "/a\x7fb", ""},
		{"/storage/" + bktPublic + "/é", ""},
		{"/Storage/" + bktPublic + "/a", ""},
		{"//storage/" + bktPublic + "/a", ""},
		{"/api/buckets/" + bktPublic, ""},
		{"/media/med_1/master.m3u8", ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			b, ok := storagePath([]byte(tc.path))
			if ok != (tc.bucket != "") || string(b) != tc.bucket {
				t.Fatalf("storagePath(%q) = %q %v, want %q", tc.path, b, ok, tc.bucket)
			}
		})
	}
}

// FuzzStoragePath checks that every path storagePath lets through is an
// object path the control plane routes as it is: under /storage/, a bucket
// id, then a key of visible ASCII without an empty, "." or ".." segment.
func FuzzStoragePath(f *testing.F) {
	for _, s := range []string{"/storage/bkt_1/a.txt", "/storage/bkt_1/a/../b", "/storage/%2e/x", "/storage/bkt_1//x", "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		b, ok := storagePath([]byte(p))
		if !ok {
			return
		}
		rest, okp := strings.CutPrefix(p, "/storage/")
		id, key, okk := strings.Cut(rest, "/")
		if !okp || !okk || id != string(b) || !strings.HasPrefix(id, "bkt_") || strings.ContainsAny(p, "?#\\ ") {
			t.Fatalf("accepted %q (bucket %q)", p, b)
		}
		for _, c := range []byte(p) {
			if c <= ' ' || c >= 0x7f {
				t.Fatalf("accepted %q: byte %#x", p, c)
			}
		}
		for seg := range strings.SplitSeq(key, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("accepted %q: segment %q", p, seg)
			}
		}
	})
}

func TestStorageSigned(t *testing.T) {
	for _, tc := range []struct {
		query  string
		signed bool
	}{
		{"expires=1&signature=abc", true},
		{"signature=abc", true},
		{"expires=1", true},
		{"a=1&expires", true},
		{"", false},
		{"a=1", false},
		{"expiresx=1&xsignature=2", false},
		{"%65xpires=1", false},
		{"a=expires", false},
	} {
		t.Run(tc.query, func(t *testing.T) {
			if got := storageSigned([]byte(tc.query)); got != tc.signed {
				t.Fatalf("storageSigned(%q) = %v, want %v", tc.query, got, tc.signed)
			}
		})
	}
}

func TestCompileStorage(t *testing.T) {
	noOrigins := func(string, bool) (*origin, error) { return nil, errors.New("no pool in this test") }
	s := &snapshot.Snapshot{Version: 1, Sites: []snapshot.Site{{Host: storageHostName, ProjectID: "prj_1",
		Deployment: snapshot.Deployment{ID: "dpl_1", Kind: snapshot.KindStatic}}}}
	for _, tc := range []struct {
		name    string
		storage *snapshot.Storage
		media   *snapshot.Media
		ok      bool
	}{
		{"none", nil, nil, true},
		{"storage host", &snapshot.Storage{Host: "Storage.Apps.Test.", Origin: "http://127.0.0.1:7070/", PublicBuckets: []string{bktPublic}}, nil, true},
		{"no host", &snapshot.Storage{Origin: "http://127.0.0.1:7070"}, nil, false},
		{"host with port", &snapshot.Storage{Host: "storage.apps.test:8443", Origin: "http://127.0.0.1:7070"}, nil, false},
		{"no origin", &snapshot.Storage{Host: storageHostName}, nil, false},
		{"origin with a path", &snapshot.Storage{Host: storageHostName, Origin: "http://127.0.0.1:7070/api"}, nil, false},
		{"origin not http", &snapshot.Storage{Host: storageHostName, Origin: "unix:///run/cp.sock"}, nil, false},
		{"origin with user", &snapshot.Storage{Host: storageHostName, Origin: "http://u:p@127.0.0.1:7070"}, nil, false},
		{"the playback host", &snapshot.Storage{Host: storageHostName, Origin: "http://127.0.0.1:7070"},
			&snapshot.Media{Host: "Storage.Apps.Test", Origin: "http://127.0.0.1:7070"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.Storage, s.Media = tc.storage, tc.media
			tab, err := compile(s, noOrigins)
			if !tc.ok {
				if !errors.Is(err, errSnapshot) {
					t.Fatalf("compile: %v, want errSnapshot", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st := tab.lookupHost([]byte("storage.apps.test:8443"))
			if tc.storage == nil {
				if st == nil || st.kind != kindStatic || st.storage != nil {
					t.Fatalf("project site replaced without a storage host: %+v", st)
				}
				return
			}
			if st == nil || st.kind != kindApp || st.rules != nil || st.storage == nil || st.dep.origin == nil ||
				st.dep.origin.base != "http://127.0.0.1:7070" || st.dep.target != "storage http://127.0.0.1:7070" {
				t.Fatalf("storage site %+v", st)
			}
			if _, ok := st.storage.public[bktPublic]; !ok || len(st.storage.public) != 1 {
				t.Fatalf("public buckets %v", st.storage.public)
			}
			if _, err := st.dep.origin.dial(0); !errors.Is(err, errStorageUpgrade) {
				t.Fatalf("upgrade dial: %v", err)
			}
		})
	}
}

// The storage origin's transport answers what it does not forward itself,
// without a connection (its HostClient points at a closed port).
func TestStorageTransportRefuses(t *testing.T) {
	o, err := storageOrigins.get("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, uri string
		status      int
	}{
		{"GET", "/api/projects", 404},
		{"GET", "/storage/" + bktPublic + "/../../api/projects", 404},
		{"GET", "/edge/v1/config", 404},
		{"POST", "/storage/" + bktPublic + "/a.txt", 405},
		{"PUT", "/storage/" + bktPublic + "/a.txt", 405},
	} {
		t.Run(tc.method+" "+tc.uri, func(t *testing.T) {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.Header.SetMethod(tc.method)
			req.Header.DisableNormalizing()
			req.URI().DisablePathNormalizing = true
			req.SetRequestURI(tc.uri)
			req.Header.SetHost("127.0.0.1:1")
			for _, way := range []string{"forwarding transport", "HostClient.Do"} {
				var err error
				if way == "HostClient.Do" {
					err = o.client.Do(req, resp)
				} else {
					_, err = o.fwd.RoundTrip(req, resp, time.Now().Add(5*time.Second))
				}
				if err != nil {
					t.Fatalf("%s: %v", way, err)
				}
				if resp.StatusCode() != tc.status || string(resp.Header.Peek("Cache-Control")) != "no-store" {
					t.Fatalf("%s: %d %q, want %d no-store", way, resp.StatusCode(), resp.Header.Peek("Cache-Control"), tc.status)
				}
				if tc.status == 405 && string(resp.Header.Peek("Allow")) != "GET, HEAD" {
					t.Fatalf("%s: Allow %q", way, resp.Header.Peek("Allow"))
				}
			}
		})
	}
}

// storageOrigin is a stand-in for the control plane's /storage route: it
// answers every object with public, max-age=3600 (also, wrongly, signed
// ones: the edge must not keep those), and counts the requests per
// request target.
type storageOrigin struct {
	url  string
	hits map[string]*atomic.Int64
}

func newStorageOrigin(tb testing.TB, targets ...string) *storageOrigin {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	so := &storageOrigin{url: "http://" + ln.Addr().String(), hits: map[string]*atomic.Int64{}}
	for _, t := range targets {
		so.hits[t] = new(atomic.Int64)
	}
	body := []byte(strings.Repeat("object bytes ", 20))
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if c := so.hits[string(ctx.Request.Header.RequestURI())]; c != nil {
			c.Add(1)
		}
		ctx.Response.Header.SetContentType("text/plain")
		ctx.Response.Header.Set("Cache-Control", "public, max-age=3600")
		ctx.Response.Header.Set("ETag", `"o1"`)
		ctx.Response.Header.Set("Access-Control-Allow-Origin", "*")
		ctx.Response.SetBodyRaw(body)
	}}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Shutdown() })
	return so
}

func (so *storageOrigin) count(target string) int64 { return so.hits[target].Load() }

// storageSnapshot serves the storage host from origin with public buckets.
func storageSnapshot(version int64, origin string, public ...string) *snapshot.Snapshot {
	s := appSnapshot(nil)
	s.Version = version
	s.Storage = &snapshot.Storage{Host: storageHostName, Origin: origin, PublicBuckets: public}
	return s
}

// newStorageEdge returns an edge (no listener) serving the storage host
// from origin with public buckets.
func newStorageEdge(tb testing.TB, origin string, public ...string) *Edge {
	tb.Helper()
	cfg := Config{
		HTTPAddr: "-", HTTPSAddr: "127.0.0.1:0", AppsDomain: "apps.test", DataDir: tb.TempDir(),
		ControlPlane: "http://127.0.0.1:1", Token: "svc_edge_unit", Locator: fixedLocator{'U', 'S'}, Logger: quiet,
		TrustedProxies: []string{"127.0.0.1/32"},
	}
	e, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.close)
	if err := e.apply(context.Background(), storageSnapshot(1, origin, public...), nil); err != nil {
		tb.Fatal(err)
	}
	return e
}

// TestStorageHost: on the storage host a public bucket's object is
// forwarded once and then served from the shared cache (a query other
// than a signature dropped, so it shares the entry); a signed request is
// forwarded with its query every time and answered private, never
// stored; a private or unknown bucket's object and every other path are
// answered 404 and other methods 405 by the edge without asking the
// origin; and once a snapshot no longer lists the bucket, its cached
// object is not served.
func TestStorageHost(t *testing.T) {
	obj := "/storage/" + bktPublic + "/docs/a.txt"
	signed := obj + "?expires=1999999999&signature=abc"
	privObj := "/storage/" + bktPrivate + "/a.txt"
	so := newStorageOrigin(t, obj, signed, privObj, privObj+"?x=1")
	e := newStorageEdge(t, so.url, bktPublic)
	get := func(method, uri string) *fasthttp.Response {
		t.Helper()
		var ctx fasthttp.RequestCtx
		request(&ctx, method, storageHostName, uri, "127.0.0.1:40000", nil)
		e.serve(&ctx, protoHTTPS)
		e.cache.Wait()
		var r fasthttp.Response
		ctx.Response.CopyTo(&r)
		r.SetBody(ctx.Response.Body())
		return &r
	}
	for i, tc := range []struct {
		name, method, uri, xcache string
		status                    int
		cacheControl              string
	}{
		{"first fetch", "GET", obj, "MISS", 200, "public, max-age=3600"},
		{"from the cache", "GET", obj, "HIT", 200, "public, max-age=3600"},
		{"HEAD from the cache", "HEAD", obj, "HIT", 200, "public, max-age=3600"},
		{"another query shares the entry", "GET", obj + "?v=2", "HIT", 200, "public, max-age=3600"},
		{"signed", "GET", signed, "MISS", 200, "private, no-store"},
		{"signed again", "GET", signed, "MISS", 200, "private, no-store"},
		{"private bucket", "GET", privObj, "", 404, "no-store"},
		{"private bucket with a query", "GET", privObj + "?x=1", "", 404, "no-store"},
		{"unknown bucket", "GET", "/storage/bkt_1/a.txt", "", 404, "no-store"},
		{"root", "GET", "/", "", 404, "no-store"},
		{"API", "GET", "/api/buckets/" + bktPublic, "", 404, "no-store"},
		{"edge protocol", "GET", snapshot.ConfigPath, "", 404, "no-store"},
		{"bucket without key", "GET", "/storage/" + bktPublic + "/", "", 404, "no-store"},
		{"dot segments", "GET", "/storage/" + bktPublic + "/../../api/projects", "", 404, "no-store"},
		{"POST", "POST", obj, "", 405, "no-store"},
		{"PUT", "PUT", obj, "", 405, "no-store"},
		{"DELETE", "DELETE", obj, "", 405, "no-store"},
		{"POST signed", "POST", signed, "", 405, "no-store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := get(tc.method, tc.uri)
			if r.StatusCode() != tc.status || string(r.Header.Peek("X-Cache")) != tc.xcache ||
				string(r.Header.Peek("Cache-Control")) != tc.cacheControl {
				t.Fatalf("%d: %s %s: %d X-Cache %q Cache-Control %q, want %d %q %q", i, tc.method, tc.uri, r.StatusCode(),
					r.Header.Peek("X-Cache"), r.Header.Peek("Cache-Control"), tc.status, tc.xcache, tc.cacheControl)
			}
			if tc.status == 405 && string(r.Header.Peek("Allow")) != "GET, HEAD" {
				t.Fatalf("Allow %q", r.Header.Peek("Allow"))
			}
		})
	}
	if n := so.count(obj); n != 1 {
		t.Fatalf("the public object was fetched %d times, want 1", n)
	}
	if n := so.count(signed); n != 2 {
		t.Fatalf("the signed URL was forwarded %d times, want 2", n)
	}
	if n := so.count(privObj) + so.count(privObj+"?x=1"); n != 0 {
		t.Fatalf("the private bucket's object was asked for %d times, want 0", n)
	}
	// The bucket leaves the public list: its cached object is not served,
	// its signed URLs still go through.
	if err := e.apply(context.Background(), storageSnapshot(2, so.url), nil); err != nil {
		t.Fatal(err)
	}
	if r := get("GET", obj); r.StatusCode() != 404 || len(r.Header.Peek("X-Cache")) != 0 {
		t.Fatalf("object of a bucket made private: %d X-Cache %q", r.StatusCode(), r.Header.Peek("X-Cache"))
	}
	if r := get("GET", signed); r.StatusCode() != 200 || string(r.Header.Peek("Cache-Control")) != "private, no-store" {
		t.Fatalf("signed URL of a bucket made private: %d %q", r.StatusCode(), r.Header.Peek("Cache-Control"))
	}
	if n := so.count(obj); n != 1 {
		t.Fatalf("the object of a bucket made private was fetched: %d", n)
	}
	// Public again: the entry kept meanwhile answers.
	if err := e.apply(context.Background(), storageSnapshot(3, so.url, bktPublic), nil); err != nil {
		t.Fatal(err)
	}
	if r := get("GET", obj); r.StatusCode() != 200 || string(r.Header.Peek("X-Cache")) != "HIT" {
		t.Fatalf("public again: %d X-Cache %q", r.StatusCode(), r.Header.Peek("X-Cache"))
	}
}
