package repos_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestBlobRefs: the repos name every blob of every commit of the repos
// that remain (old commits too), each once, never an environment file's
// and never a deleted repo's.
func TestBlobRefs(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			kept, gone := newRepo(t, env, "kept"), newRepo(t, env, "gone")
			env.Owner.Must(http.StatusCreated, "POST", "/api/repos/"+kept+"/commits", push(file("a.txt", "one"), file("b.txt", "shared")))
			env.Owner.Must(http.StatusCreated, "POST", "/api/repos/"+kept+"/commits", push(file("a.txt", "two"), file("b.txt", "shared"), file(".env", "SECRET=1")))
			env.Owner.Must(http.StatusCreated, "POST", "/api/repos/"+gone+"/commits", push(file("x.txt", "only gone"), file("b.txt", "shared")))

			var src blobs.RefSource = env.CP.Repos()
			cases := []struct {
				name   string
				delete string
				want   []string
			}{
				{"both repos", "", []string{"one", "two", "shared", "only gone"}},
				{"after deleting one", gone, []string{"one", "two", "shared"}},
			}
			for _, tc := range cases {
				if tc.delete != "" {
					env.Owner.Must(http.StatusOK, "DELETE", "/api/repos/"+tc.delete, nil)
				}
				var got, want []string
				if err := src.BlobRefs(context.Background(), func(s string) error { got = append(got, s); return nil }); err != nil {
					t.Fatal(err)
				}
				for _, c := range tc.want {
					h := sha256.Sum256([]byte(c))
					want = append(want, hex.EncodeToString(h[:]))
				}
				sort.Strings(got)
				sort.Strings(want)
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("%s: BlobRefs = %v, want %v", tc.name, got, want)
				}
			}

			stop := errors.New("stop")
			if err := src.BlobRefs(context.Background(), func(string) error { return stop }); !errors.Is(err, stop) {
				t.Fatalf("BlobRefs with a failing fn = %v, want %v", err, stop)
			}
		})
	}
}
