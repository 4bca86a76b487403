package deploys

import (
	"errors"
	"strings"
	"testing"
)

// TestManifestPrivateRoot is issue 11 item 5 at deploy: a static root that
// is itself private is refused with a clear error, before anything is
// published.
func TestManifestPrivateRoot(t *testing.T) {
	for _, tc := range []struct {
		root string
		ok   bool
	}{
		{".git", false}, {".ssh", false}, {"a/.git", false}, {".github", false}, {"public/.hidden", false},
		{"deploy/id_rsa", false}, {"keys.pem", false}, {`a\.git`, false}, {".well-known", true},
		{"public", true}, {"dist", true}, {"site/public", true},
	} {
		t.Run(tc.root, func(t *testing.T) {
			_, err := ParseManifest([]byte(`{"kind":"static","root":` + quote(tc.root) + `}`))
			if tc.ok && err != nil {
				t.Fatalf("root %q refused: %v", tc.root, err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "is private")) {
				t.Fatalf("root %q: %v, want a private-root error", tc.root, err)
			}
		})
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }

// TestManifestSitePath: the file guard judges the full repository path.
func TestManifestSitePath(t *testing.T) {
	m := Manifest{Kind: "static", Root: "public"}
	for _, tc := range []struct {
		repo, site string
		ok         bool
	}{
		{"public/index.html", "index.html", true},
		{"public/docs/a.html", "docs/a.html", true},
		{"public/.env", "", false},
		{"public/.git/config", "", false},
		{"src/main.go", "", false}, // outside the root
		{"publicity/x.html", "", false},
	} {
		t.Run(tc.repo, func(t *testing.T) {
			site, ok := m.SitePath(tc.repo)
			if site != tc.site || ok != tc.ok {
				t.Fatalf("SitePath(%q) = %q, %v; want %q, %v", tc.repo, site, ok, tc.site, tc.ok)
			}
		})
	}
	// A root that slipped past Validate (an old deployment) still serves
	// nothing private: the full path is judged.
	old := Manifest{Kind: "static", Root: ".git"}
	if p, ok := old.SitePath(".git/config"); ok {
		t.Fatalf("SitePath under a private root = %q, served", p)
	}
	whole := Manifest{Kind: "static"}
	if _, ok := whole.SitePath("a/.git/HEAD"); ok {
		t.Fatal("a/.git/HEAD served from the repo root")
	}
	if p, ok := whole.SitePath("index.html"); !ok || p != "index.html" {
		t.Fatalf("index.html: %q %v", p, ok)
	}
}

// TestManifestCheckOrigin is issue 11 item 8 at deploy: internal origins
// are refused unless private networks are allowed; the check never
// connects, so a closed port and an open one read the same.
func TestManifestCheckOrigin(t *testing.T) {
	for _, tc := range []struct {
		origin       string
		allowPrivate bool
		refused      bool
	}{
		{"http://127.0.0.1:9090", false, true},  // the admin address
		{"http://127.0.0.1:7070", false, true},  // the API
		{"http://127.0.0.1:1", false, true},     // nothing listens: same answer
		{"http://localhost:3000", false, true},  // a name for loopback
		{"http://10.1.2.3:80", false, true},     // RFC 1918
		{"http://[fd00::1]:80", false, true},    // unique local
		{"http://169.254.169.254", false, true}, // cloud metadata
		{"http://127.0.0.1:3000", true, false},  // allowed by the operator
		{"https://8.8.8.8", false, false},
	} {
		t.Run(tc.origin, func(t *testing.T) {
			m, err := ParseManifest([]byte(`{"kind":"app","origin":"` + tc.origin + `"}`))
			if err != nil {
				t.Fatal(err)
			}
			err = m.CheckOrigin(tc.allowPrivate)
			if tc.refused != (err != nil) || tc.refused && !errors.Is(err, ErrPrivateOrigin) {
				t.Fatalf("CheckOrigin(%s, %v) = %v, want refused=%v", tc.origin, tc.allowPrivate, err, tc.refused)
			}
			if err != nil && !strings.Contains(err.Error(), "--allow-private-networks") {
				t.Fatalf("the refusal does not say how to allow it: %v", err)
			}
		})
	}
	static := Manifest{Kind: "static", Root: "public"}
	if err := static.CheckOrigin(false); err != nil {
		t.Fatalf("static: %v", err)
	}
}
