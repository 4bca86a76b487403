package deploys_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/cptest"
)

func sumHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// refsOf collects what src streams, sorted.
func refsOf(t *testing.T, src blobs.RefSource) []string {
	t.Helper()
	var out []string
	if err := src.BlobRefs(context.Background(), func(s string) error { out = append(out, s); return nil }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func sums(contents ...string) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range contents {
		if s := sumHex(c); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// twoSites deploys two projects sharing one file, then deletes the second
// project (its repo stays).
func twoSites(t *testing.T, env *cptest.Env) (kept, gone *site) {
	t.Helper()
	kept, gone = newSite(t, env, "Kept"), newSite(t, env, "Gone")
	if d := kept.deploy(t, kept.push(t, map[string]string{"index.html": "<h1>kept</h1>", "shared.css": "a{}", ".env": "SECRET=1"})); d.Deployment.State != "live" {
		t.Fatalf("deploy kept: %+v\n%s", d.Deployment, d.logText())
	}
	if d := gone.deploy(t, gone.push(t, map[string]string{"index.html": "<h1>gone</h1>", "shared.css": "a{}", "only-gone.txt": "bye"})); d.Deployment.State != "live" {
		t.Fatalf("deploy gone: %+v\n%s", d.Deployment, d.logText())
	}
	env.Owner.Must(200, "DELETE", "/api/projects/"+gone.project, nil)
	return kept, gone
}

// TestBlobRefs: the deployments name exactly the files of the live
// project's deployment, not those of a deleted project, nor private files.
func TestBlobRefs(t *testing.T) {
	env := newCP(t)
	twoSites(t, env)
	got := refsOf(t, env.CP.Deploys())
	want := sums("<h1>kept</h1>", "a{}")
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("BlobRefs = %v, want %v", got, want)
	}

	// A failing fn stops the stream with its error.
	stop := context.Canceled
	n := 0
	err := env.CP.Deploys().BlobRefs(context.Background(), func(string) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("BlobRefs with a failing fn = %v after %d calls, want %v after 1", err, n, stop)
	}
}

// TestBlobCollectAssembled runs the cleanup on the assembled control plane
// with the repos and deploys sources: a deleted repo's files go once no
// deployment names them, and everything still named stays readable.
func TestBlobCollectAssembled(t *testing.T) {
	env := newCP(t)
	_, gone := twoSites(t, env)
	// An orphan written by no area, and the deleted project's repo deleted
	// too: its only-gone.txt and <h1>gone</h1> are now unreferenced.
	orphan, _, err := env.CP.Blobs().Put([]byte("orphan"))
	if err != nil {
		t.Fatal(err)
	}
	env.Owner.Must(200, "DELETE", "/api/repos/"+gone.repo, nil)

	ctx := context.Background()
	sources := []blobs.RefSource{env.CP.Repos(), env.CP.Deploys()}
	// Now (the blobs' times are the wall clock's): everything is young.
	st, err := blobs.Collect(ctx, env.CP.Blobs(), sources, time.Now(), 0)
	if err != nil || st.Deleted != 0 || st.Listed != 5 || st.KeptYoung != 3 || st.Referenced != 2 {
		t.Fatalf("young: %+v %v", st, err)
	}
	// Two days on: the unreferenced three go.
	st, err = blobs.Collect(ctx, env.CP.Blobs(), sources, time.Now().Add(48*time.Hour), 0)
	if err != nil || st.Deleted != 3 || st.Referenced != 2 || st.Missing != 0 {
		t.Fatalf("old: %+v %v", st, err)
	}
	for _, s := range sums("<h1>kept</h1>", "a{}") {
		if !env.CP.Blobs().Has(s) {
			t.Errorf("referenced blob %s deleted", s)
		}
	}
	for _, s := range append(sums("<h1>gone</h1>", "bye"), orphan) {
		if env.CP.Blobs().Has(s) {
			t.Errorf("unreferenced blob %s kept", s)
		}
	}
	// The live site's files still read.
	for _, c := range []string{"<h1>kept</h1>", "a{}"} {
		if b, err := env.CP.Blobs().Read(sumHex(c)); err != nil || string(b) != c {
			t.Errorf("read %q after cleanup = %q, %v", c, b, err)
		}
	}
}
