package edge

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/rules"
)

// TestFileGuardFullPath is issue 11 item 5 at request time: the guard
// judges the full repository path, root included. A deployment whose root
// is private (".git", ".ssh", "a/.git") answers 404 for every path,
// .git/config at /config included; private files a snapshot names anyway
// are never served.
func TestFileGuardFullPath(t *testing.T) {
	for _, tc := range []struct {
		root    string
		private bool
	}{
		{".git", true}, {".ssh", true}, {"a/.git", true}, {"keys/.aws", true}, {"", false}, {"public", false}, {"dist/site", false},
	} {
		t.Run("root="+tc.root, func(t *testing.T) {
			if got := rootPrivate(tc.root); got != tc.private {
				t.Fatalf("rootPrivate(%q) = %v, want %v", tc.root, got, tc.private)
			}
		})
	}

	ue := newUnitEdge(t, rules.Settings{}, map[string][]byte{"config": []byte("[remote]\nurl = https://user:token@example.com\n"),
		"index.html": []byte("<p>site</p>"), "a/.env": []byte("SECRET=1"), ".git/HEAD": []byte("ref")})
	get := func(path string) int {
		var ctx fasthttp.RequestCtx
		request(&ctx, "GET", "blog.apps.test", path, "10.0.0.1:40000", nil)
		ue.serve(&ctx, protoHTTPS)
		return ctx.Response.StatusCode()
	}
	for _, p := range []string{"/a/.env", "/.git/HEAD", "/a/%2eenv"} {
		if st := get(p); st != 404 {
			t.Errorf("%s: %d, want 404", p, st)
		}
	}
	if st := get("/config"); st != 200 {
		t.Fatalf("/config under a public root: %d", st)
	}
	if f := ue.table.Load().sites["blog.apps.test"].dep.files["a/.env"]; f != nil {
		t.Fatal("a private file named by the snapshot is in the table")
	}
	// The same files deployed from the root ".git": nothing is served.
	ue.table.Load().sites["blog.apps.test"].dep.private = rootPrivate(".git")
	for _, p := range []string{"/config", "/", "/index.html"} {
		if st := get(p); st != 404 {
			t.Errorf("root .git: %s: %d, want 404", p, st)
		}
	}
}
