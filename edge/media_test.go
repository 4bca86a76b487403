package edge

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
)

func TestMediaPath(t *testing.T) {
	id := "med_0123456789abcdefghij"
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"/media/" + id + "/master.m3u8", true},
		{"/media/" + id + "/360p/index.m3u8", true},
		{"/media/" + id + "/360p/seg_00001.ts", true},
		{"/media/" + id + "/poster.jpg", true},
		{"/media/" + id + "/1732291234567.ts", true},
		{"/media/" + id + "/Mixed-Case_1.m4s", true},
		{"/media/uploads/tok", false},
		{"/media/live/hooks/s/publish", false},
		{"/media/med_/x.ts", false},
		{"/media/med_A/x.ts", false},
		{"/", false},
		{"/media", false},
		{"/media/", false},
		{"/media/" + id, false},
		{"/media/" + id + "/", false},
		{"/media//master.m3u8", false},
		{"/media/" + id + "//master.m3u8", false},
		{"/media/" + id + "/a/b/c.ts", false},
		{"/media/" + id + "/../../api/projects", false},
		{"/media/" + id + "/./master.m3u8", false},
		{"/media/" + id + "/.hidden", false},
		{"/media/" + id + "/%2e%2e/x", false},
		{"/media/" + id + "%2fmaster.m3u8", false},
		{"/media/MED_X/master.m3u8", false},
		{"/media/med_x_y/master.m3u8", false},
		{"/media/" + id + "/a b.ts", false},
		{"/media/" + id + "/a\\b.ts", false},
		{"/media/" + id + "/master.m3u8?x=1", false}, // the path alone is checked
		{"/media/" + strings.Repeat("a", 65) + "/x.ts", false},
		{"/media/" + id + "/" + strings.Repeat("a", 201), false},
		{"/Media/" + id + "/master.m3u8", false},
		{"/api/media/" + id, false},
		{"//media/" + id + "/master.m3u8", false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if got := mediaPath([]byte(tc.path)); got != tc.ok {
				t.Fatalf("mediaPath(%q) = %v, want %v", tc.path, got, tc.ok)
			}
		})
	}
}

// FuzzMediaPath checks that every path mediaPath lets through is one the
// control plane routes as it is: under /media/, no dot segment, no
// percent-encoding, no empty segment, at most two segments after the id.
func FuzzMediaPath(f *testing.F) {
	for _, s := range []string{"/media/med_1/master.m3u8", "/media/a/b/c", "/media/%2e/x", "/media/a/../b", "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if !mediaPath([]byte(p)) {
			return
		}
		rest, ok := strings.CutPrefix(p, "/media/")
		segs := strings.Split(rest, "/")
		if !ok || len(segs) < 2 || len(segs) > 3 || strings.ContainsAny(p, "%?#\\ ") {
			t.Fatalf("accepted %q", p)
		}
		for _, s := range segs {
			if s == "" || s[0] == '.' {
				t.Fatalf("accepted %q: segment %q", p, s)
			}
		}
	})
}

func TestCompileMedia(t *testing.T) {
	noOrigins := func(string, bool) (*origin, error) { return nil, errors.New("no pool in this test") }
	s := &snapshot.Snapshot{Version: 1, Sites: []snapshot.Site{{Host: "media.apps.test", ProjectID: "prj_1",
		Deployment: snapshot.Deployment{ID: "dpl_1", Kind: snapshot.KindStatic}}}}
	for _, tc := range []struct {
		name  string
		media *snapshot.Media
		ok    bool
	}{
		{"none", nil, true},
		{"playback host", &snapshot.Media{Host: "Media.Apps.Test.", Origin: "http://127.0.0.1:7070/"}, true},
		{"no host", &snapshot.Media{Origin: "http://127.0.0.1:7070"}, false},
		{"host with port", &snapshot.Media{Host: "media.apps.test:8443", Origin: "http://127.0.0.1:7070"}, false},
		{"no origin", &snapshot.Media{Host: "media.apps.test"}, false},
		{"origin with a path", &snapshot.Media{Host: "media.apps.test", Origin: "http://127.0.0.1:7070/api"}, false},
		{"origin not http", &snapshot.Media{Host: "media.apps.test", Origin: "unix:///run/cp.sock"}, false},
		{"origin with user", &snapshot.Media{Host: "media.apps.test", Origin: "http://u:p@127.0.0.1:7070"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.Media = tc.media
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
			st := tab.lookupHost([]byte("media.apps.test:8443"))
			if tc.media == nil {
				if st == nil || st.kind != kindStatic {
					t.Fatalf("project site replaced without a playback host: %+v", st)
				}
				return
			}
			if st == nil || st.kind != kindApp || st.rules != nil || st.dep.origin == nil ||
				st.dep.origin.base != "http://127.0.0.1:7070" || st.dep.target != "media http://127.0.0.1:7070" {
				t.Fatalf("playback site %+v", st)
			}
			if _, err := st.dep.origin.dial(0); !errors.Is(err, errMediaUpgrade) {
				t.Fatalf("upgrade dial: %v", err)
			}
		})
	}
}

// The playback origin's transport answers what it does not forward
// itself, without a connection (its HostClient points at a closed port).
func TestMediaTransportRefuses(t *testing.T) {
	o, err := mediaOrigins.get("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, uri string
		status      int
	}{
		{"GET", "/api/projects", 404},
		{"POST", "/media/uploads/tok/x", 404},
		{"GET", "/media/med_1/%2e%2e/x", 404},
		{"POST", "/media/med_1/master.m3u8", 405},
		{"PUT", "/media/med_1/master.m3u8", 405},
	} {
		t.Run(tc.method+" "+tc.uri, func(t *testing.T) {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.Header.SetMethod(tc.method)
			req.SetRequestURI("http://127.0.0.1:1" + tc.uri)
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
	// A playback request is forwarded: to a closed port here, so it fails.
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://127.0.0.1:1/media/med_1/master.m3u8")
	if _, err := o.fwd.RoundTrip(req, resp, time.Now().Add(5*time.Second)); err == nil {
		t.Fatalf("a playback request to a closed port answered %d", resp.StatusCode())
	}
}
