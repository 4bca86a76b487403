package edge

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/rules"
)

// staticSite is a static site for a snapshot: host, files and an optional
// site password.
type staticSite struct {
	host     string
	files    map[string]string
	password string
}

// staticSnapshot builds a configuration of static sites, their blobs
// written under blobDir.
func staticSnapshot(t testing.TB, blobDir string, sites ...staticSite) *snapshot.Snapshot {
	t.Helper()
	s := &snapshot.Snapshot{Version: 1, AppsDomain: "apps.test", SessionKey: make([]byte, 32),
		Workspaces: []snapshot.Workspace{{ID: "ws_1"}}}
	for _, site := range sites {
		var fs []snapshot.File
		for p, c := range site.files {
			fs = append(fs, putBlob(t, blobDir, p, "text/html; charset=utf-8", []byte(c)))
		}
		ss := snapshot.Site{Host: site.host, Slug: site.host, ProjectID: "prj_" + site.host, WorkspaceID: "ws_1",
			Deployment: snapshot.Deployment{ID: "dpl_" + site.host, Kind: snapshot.KindStatic,
				CDN: snapshot.CDN{Enabled: true, CacheTTLSeconds: 60}, Files: fs}}
		if site.password != "" {
			hash, err := rules.HashPassword(site.password)
			if err != nil {
				t.Fatal(err)
			}
			ss.Password = &snapshot.Password{Hash: hash, Version: rules.PasswordVersion(hash)}
		}
		s.Sites = append(s.Sites, ss)
	}
	return s
}

func newStaticLiveEdge(t *testing.T, opts []func(*Config), sites ...staticSite) *liveEdge {
	t.Helper()
	blobDir := filepath.Join(t.TempDir(), "blobs")
	snap := staticSnapshot(t, blobDir, sites...)
	return newLiveEdge(t, snap, append([]func(*Config){func(c *Config) { c.BlobDir = blobDir }}, opts...)...)
}

func (le *liveEdge) postPassword(host, client, password string) int {
	le.t.Helper()
	form := url.Values{"password": {password}, "next": {"/"}}.Encode()
	req, _ := http.NewRequest("POST", "https://"+host+passwordPath, strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", client)
	resp, err := le.client.Do(req)
	if err != nil {
		le.t.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestPasswordThrottleConcurrent is issue 11 item 3(a): 40 wrong passwords
// sent at once from one address are not all checked: the attempt is
// reserved before the hash, so at most the burst is.
func TestPasswordThrottleConcurrent(t *testing.T) {
	le := newStaticLiveEdge(t, []func(*Config){func(c *Config) { c.PasswordAttempts, c.PasswordRefill = 10, time.Hour }},
		staticSite{host: "secret.apps.test", files: map[string]string{"index.html": "members"}, password: "correct horse"})
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 40 {
		wg.Go(func() {
			c := le.postPassword("secret.apps.test", "203.0.113.7", "wrong")
			mu.Lock()
			codes[c]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes[401] > 10 || codes[401]+codes[429] != 40 {
		t.Fatalf("statuses %v: want at most 10 checked (401), the rest 429", codes)
	}
	// Another address is not affected.
	if c := le.postPassword("secret.apps.test", "203.0.113.8", "correct horse"); c != 303 {
		t.Fatalf("another address: %d, want 303", c)
	}
}

// TestPasswordThrottlePerSite is issue 11 item 3(b) over the wire: 9 wrong
// on B then 1 right on A, repeated, does not reset B's count.
func TestPasswordThrottlePerSite(t *testing.T) {
	le := newStaticLiveEdge(t, []func(*Config){func(c *Config) { c.PasswordAttempts, c.PasswordRefill = 10, time.Hour }},
		staticSite{host: "a.apps.test", files: map[string]string{"index.html": "a"}, password: "right a"},
		staticSite{host: "b.apps.test", files: map[string]string{"index.html": "b"}, password: "right b"})
	const client = "198.51.100.77"
	checkedB := 0
	for round := range 3 {
		for range 9 {
			switch c := le.postPassword("b.apps.test", client, "guess"); c {
			case 401:
				checkedB++
			case 429:
			default:
				t.Fatalf("wrong on B: %d", c)
			}
		}
		if c := le.postPassword("a.apps.test", client, "right a"); c != 303 {
			t.Fatalf("round %d: right on A: %d", round, c)
		}
	}
	if checkedB != 10 {
		t.Fatalf("%d wrong passwords checked on B over 3 rounds, want 10 (the burst)", checkedB)
	}
}
