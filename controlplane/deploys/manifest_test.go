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

// TestManifestRuntime: run, health and module are validated with the kind
// they belong to; each refusal names the problem.
func TestManifestRuntime(t *testing.T) {
	long := make([]string, MaxRunArgs+1)
	for i := range long {
		long[i] = "a"
	}
	longJSON := `["` + strings.Join(long, `","`) + `"]`
	for _, tc := range []struct {
		name, json, want string // want "" accepts
	}{
		{"app run", `{"kind":"app","run":["./server"],"health":"/health"}`, ""},
		{"app run from PATH", `{"kind":"app","run":["node","server.js"]}`, ""},
		{"app absolute program", `{"kind":"app","run":["/usr/bin/python3","app.py"]}`, ""},
		{"app origin", `{"kind":"app","origin":"http://127.0.0.1:3000"}`, ""},
		{"worker", `{"kind":"worker","run":["./worker"]}`, ""},
		{"function module", `{"kind":"function","module":"build/fn.wasm"}`, ""},
		{"function origin", `{"kind":"function","origin":"https://fn.example.com"}`, ""},
		{"app both", `{"kind":"app","run":["./s"],"origin":"http://127.0.0.1:1"}`, "not both"},
		{"app neither", `{"kind":"app"}`, "needs run"},
		{"app empty run", `{"kind":"app","run":[]}`, "names no program"},
		{"app empty program", `{"kind":"app","run":[""]}`, "names no program"},
		{"app program escapes", `{"kind":"app","run":["../../bin/sh"]}`, "must be a file of the commit"},
		{"app program escapes deep", `{"kind":"app","run":["./a/../../x"]}`, "must be a file of the commit"},
		{"app NUL", `{"kind":"app","run":["./s","a\u0000b"]}`, "not valid text"},
		{"app too many words", `{"kind":"app","run":` + longJSON + `}`, "at most 64"},
		{"app run too long", `{"kind":"app","run":["./s","` + strings.Repeat("x", MaxRunBytes) + `"]}`, "at most 4096"},
		{"app health relative", `{"kind":"app","run":["./s"],"health":"health"}`, "must be a path"},
		{"app health host", `{"kind":"app","run":["./s"],"health":"//evil.example/"}`, "must be a path"},
		{"app health space", `{"kind":"app","run":["./s"],"health":"/a b"}`, "must be a path"},
		{"app health with origin", `{"kind":"app","origin":"http://127.0.0.1:1","health":"/h"}`, "health applies to apps the platform runs"},
		{"app module", `{"kind":"app","run":["./s"],"module":"x.wasm"}`, "module applies to functions only"},
		{"worker without run", `{"kind":"worker"}`, "needs run"},
		{"worker origin", `{"kind":"worker","run":["./w"],"origin":"http://127.0.0.1:1"}`, "no address"},
		{"worker health", `{"kind":"worker","run":["./w"],"health":"/h"}`, "health applies to apps only"},
		{"function neither", `{"kind":"function"}`, "needs module"},
		{"function both", `{"kind":"function","module":"f.wasm","origin":"http://127.0.0.1:1"}`, "not both"},
		{"function run", `{"kind":"function","run":["./f"]}`, "run applies to apps and worker programs only"},
		{"function bad module", `{"kind":"function","module":"../f.wasm"}`, "module"},
		{"static run", `{"run":["./s"]}`, "run applies to apps and worker programs only"},
		{"static module", `{"module":"f.wasm"}`, "module applies to functions only"},
		{"worker root", `{"kind":"worker","run":["./w"],"root":"public"}`, "root applies to static sites only"},
		{"static build", `{"build":{"install":"npm ci","command":"npm run build","output":"dist"}}`, ""},
		{"app build", `{"kind":"app","run":["./server"],"build":{"command":"go build -o server ."}}`, ""},
		{"build off", `{"build":{}}`, ""},
		{"build private output", `{"build":{"command":"make","output":".git"}}`, "is private"},
		{"build command too long", `{"build":{"command":"` + strings.Repeat("x", MaxBuildCommandBytes+1) + `"}}`, "at most 4096"},
		{"build NUL", `{"build":{"install":"a\u0000b"}}`, "not valid text"},
		{"build with origin", `{"kind":"app","origin":"http://127.0.0.1:1","build":{"command":"make"}}`, "not to an origin"},
		{"build output with root", `{"root":"public","build":{"command":"make","output":"dist"}}`, "not root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseManifest([]byte(tc.json))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if (m.Run != nil || m.Module != "") != m.Managed() {
					t.Fatalf("Managed() = %v for %+v", m.Managed(), m)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestManifestProgram(t *testing.T) {
	for run0, want := range map[string]string{"./server": "server", "bin/app": "bin/app", "./a/./b": "a/b", "node": "", "/usr/bin/node": ""} {
		m := Manifest{Kind: "app", Run: []string{run0}}
		got, ok := m.Program()
		if got != want || ok != (want != "") {
			t.Errorf("Program(%q) = %q %v, want %q", run0, got, ok, want)
		}
	}
}

// FuzzParseManifest: any bytes either fail with an error or give a
// manifest that validates again unchanged and is of a known kind.
func FuzzParseManifest(f *testing.F) {
	for _, s := range []string{`{"kind":"app","run":["./s"],"health":"/h"}`, `{"kind":"function","module":"a/b.wasm"}`,
		`{"kind":"worker","run":["w"]}`, `{"root":"public"}`, `{"kind":"app","origin":"http://h:1"}`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		again := m
		if err := again.Validate(); err != nil {
			t.Fatalf("a parsed manifest does not validate again: %v", err)
		}
		switch m.Kind {
		case "static", "app", "worker", "function":
		default:
			t.Fatalf("kind %q accepted", m.Kind)
		}
		if m.Managed() && m.Origin != "" {
			t.Fatalf("both run/module and origin: %+v", m)
		}
		if p, ok := m.Program(); ok && (strings.HasPrefix(p, "../") || p == "..") {
			t.Fatalf("program %q escapes", p)
		}
	})
}

func TestDetectBuild(t *testing.T) {
	for _, tc := range []struct {
		name     string
		manifest string
		files    map[string]string
		want     string // install|command|output|framework, "" for no build
		err      string
	}{
		{"nothing", `{}`, map[string]string{"index.html": "x"}, "", ""},
		{"vite", `{}`, map[string]string{"package.json": `{"scripts":{"build":"vite build"},"devDependencies":{"vite":"5"}}`, "package-lock.json": "{}"},
			"npm ci|npm run build|dist|Vite", ""},
		{"astro without lock", `{}`, map[string]string{"package.json": `{"scripts":{"build":"astro build"},"dependencies":{"astro":"4"}}`},
			"npm install|npm run build|dist|Astro", ""},
		{"next export", `{}`, map[string]string{"package.json": `{"scripts":{"build":"next build"},"dependencies":{"next":"14","react":"18"}}`},
			"npm install|npm run build|out|Next.js (static export)", ""},
		{"node only", `{}`, map[string]string{"package.json": `{"scripts":{"build":"node build.js"}}`}, "|npm run build||npm", ""},
		{"root is the output", `{"root":"public"}`, map[string]string{"package.json": `{"scripts":{"build":"node b.js"}}`}, "|npm run build|public|npm", ""},
		{"static without build script", `{}`, map[string]string{"package.json": `{"dependencies":{"left-pad":"1"}}`}, "", ""},
		{"app installs", `{"kind":"app","run":["node","s.js"]}`, map[string]string{"package.json": `{"dependencies":{"express":"4"}}`}, "npm install|||npm", ""},
		{"app installed already", `{"kind":"app","run":["node","s.js"]}`, map[string]string{"package.json": `{"dependencies":{"express":"4"}}`,
			"node_modules/.package-lock.json": "{}"}, "", ""},
		{"hugo", `{}`, map[string]string{"hugo.toml": "baseURL = '/'"}, "|hugo --minify|public|Hugo", ""},
		{"explicit build wins", `{"build":{"command":"make"}}`, map[string]string{"package.json": `{"scripts":{"build":"x"}}`}, "", ""},
		{"function", `{"kind":"function","module":"f.wasm"}`, map[string]string{"package.json": `{"scripts":{"build":"x"}}`}, "", ""},
		{"bad package.json", `{}`, map[string]string{"package.json": `{`}, "", "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseManifest([]byte(tc.manifest))
			if err != nil {
				t.Fatal(err)
			}
			b, err := DetectBuild(m, func(p string) ([]byte, bool) {
				c, ok := tc.files[p]
				return []byte(c), ok
			})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if b != nil {
				got = strings.Join([]string{b.Install, b.Command, b.Output, b.Framework}, "|")
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func FuzzDetectBuild(f *testing.F) {
	f.Add(`{"scripts":{"build":"vite build"},"devDependencies":{"vite":"5"}}`)
	f.Add(`{"dependencies":{"next":"1"},"scripts":{"build":""}}`)
	f.Fuzz(func(t *testing.T, pkg string) {
		b, err := DetectBuild(Manifest{Kind: "static"}, func(p string) ([]byte, bool) { return []byte(pkg), p == "package.json" })
		if err == nil && b != nil && !b.Steps() {
			t.Fatalf("a build without steps for %q", pkg)
		}
	})
}
