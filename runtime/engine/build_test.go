package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/runtime/sandbox"
	"github.com/svcplatform/platform/runtime/supervise"
	"github.com/svcplatform/platform/runtime/wasm"
)

// collected gathers a build's output lines.
type collected struct {
	mu    sync.Mutex
	lines []string
}

func (c *collected) add(stream, line string) {
	c.mu.Lock()
	c.lines = append(c.lines, stream+": "+line)
	c.mu.Unlock()
}

func (c *collected) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// buildJS writes dist/index.html from the project's variable and counts
// the builds in the cache (HOME persists between builds of a project).
const buildJS = `
const fs = require("fs"), path = require("path");
const seen = path.join(process.env.HOME, "builds");
const n = (fs.existsSync(seen) ? Number(fs.readFileSync(seen, "utf8")) : 0) + 1;
fs.writeFileSync(seen, String(n));
fs.mkdirSync("dist", {recursive: true});
fs.writeFileSync("dist/index.html", "<h1>" + process.env.TITLE + " " + n + "</h1>");
console.log("built page", n);
console.error("a warning");
`

func TestBuild(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("runtime/engine: node not found (apt-get install nodejs)")
	}
	for _, box := range sandboxes(t) {
		t.Run(box.Name(), func(t *testing.T) {
			e := newEngineWith(t, box)
			ctx := context.Background()
			files := []File{file("build.js", []byte(buildJS)), file("package.json", []byte(`{"scripts":{"build":"node build.js"}}`))}
			for i := 1; i <= 2; i++ {
				var out collected
				res, err := e.Build(ctx, Build{ID: fmt.Sprintf("dpl_b%d", i), Project: "prj_b", Files: files, Env: map[string]string{"TITLE": "Hi"},
					Steps: []BuildStep{{Name: "build", Command: "npm run build"}}, Output: out.add})
				if err != nil {
					t.Fatalf("build %d: %v\n%s", i, err, out.text())
				}
				page, err := os.ReadFile(filepath.Join(res.Dir, "dist/index.html"))
				if err != nil || string(page) != fmt.Sprintf("<h1>Hi %d</h1>", i) {
					t.Fatalf("build %d wrote %q (%v)", i, page, err)
				}
				for _, want := range []string{"platform: build: npm run build", fmt.Sprintf("stdout: built page %d", i), "stderr: a warning", "platform: build: done in"} {
					if !strings.Contains(out.text(), want) {
						t.Fatalf("build %d output lacks %q:\n%s", i, want, out.text())
					}
				}
				if _, err := os.Stat(filepath.Join(res.Dir, cacheInBuild)); !os.IsNotExist(err) {
					t.Fatalf("the cache stays in the build's output: %v", err)
				}
				res.Release()
				if _, err := os.Stat(res.Dir); !os.IsNotExist(err) {
					t.Fatalf("Release left %s", res.Dir)
				}
			}
		})
	}
}

func TestBuildFailures(t *testing.T) {
	e := newEngineWith(t, sandbox.None{})
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		b       Build
		want    []string
		logWant string
	}{
		{"exit status", Build{Steps: []BuildStep{{Name: "install", Command: "echo fetching; echo broken >&2; exit 3"}, {Name: "build", Command: "echo never"}}},
			[]string{"the install step (", "failed with exit status 3", "last output: ", "fetching", "broken"}, ""},
		{"time limit", Build{Timeout: 300 * time.Millisecond, Steps: []BuildStep{{Name: "build", Command: "echo slow; exec sleep 30"}}},
			[]string{"ran past the build time limit of 300ms", "last output: slow"}, ""},
		{"output limit", Build{LogBytes: 1000, Steps: []BuildStep{{Name: "build", Command: "i=0; while [ $i -lt 500 ]; do echo line $i; i=$((i+1)); done; exit 1"}}},
			[]string{"failed with exit status 1", "line 499"}, "build output past 0 KiB is not logged"},
		// npm answers from the project's cache; without network it does
		// not try the registry at all.
		{"npm without network", Build{Steps: []BuildStep{{Name: "install", Command: `echo "offline=$npm_config_offline prefer=$npm_config_prefer_offline."; exit 4`}}},
			[]string{"offline=true prefer=."}, ""},
		{"npm with network", Build{Network: true, Steps: []BuildStep{{Name: "install", Command: `echo "offline=$npm_config_offline prefer=$npm_config_prefer_offline."; exit 4`}}},
			[]string{"offline= prefer=true."}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out collected
			b := c.b
			b.ID, b.Project, b.Output = "dpl_f", "prj_f", out.add
			began := time.Now()
			_, err := e.Build(ctx, b)
			if !errors.Is(err, ErrBuildFailed) {
				t.Fatalf("err %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error lacks %q: %v", w, err)
				}
			}
			if c.logWant != "" && !strings.Contains(out.text(), c.logWant) {
				t.Fatalf("output lacks %q:\n%s", c.logWant, out.text())
			}
			if strings.Contains(out.text(), "never") {
				t.Fatal("a step ran after a failed one")
			}
			if time.Since(began) > 20*time.Second {
				t.Fatal("the step was not stopped")
			}
			if _, err := os.Stat(filepath.Join(e.cfg.Dir, "build-dpl_f")); !os.IsNotExist(err) {
				t.Fatalf("a failed build's directory is left: %v", err)
			}
		})
	}
	if _, err := e.Build(ctx, Build{ID: "../x", Project: "p"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad id: %v", err)
	}
}

// sandboxes are None and, when this machine runs it, Bwrap.
func sandboxes(t *testing.T) []sandbox.Sandbox {
	out := []sandbox.Sandbox{sandbox.None{}}
	b := &sandbox.Bwrap{MemoryBytes: 512 << 20}
	if err := b.Provision(); err != nil {
		if os.Getenv("CI") != "" && errors.Is(err, sandbox.ErrUnavailable) {
			t.Logf("runtime/engine: builds under bwrap not tested: %v", err)
		}
		return out
	}
	return append(out, b)
}

func newEngineWith(t *testing.T, box sandbox.Sandbox) (e *Engine) {
	t.Helper()
	// Bwrap runs the steps as a uid of their own: every directory above
	// the runtime root must let it pass.
	root, err := os.MkdirTemp("", "engine-build-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	e, err = New(context.Background(), Config{Dir: filepath.Join(root, "rt"),
		Supervise: supervise.Config{HealthInterval: 20 * time.Millisecond, DrainTimeout: time.Minute, StopGrace: 2 * time.Second},
		Wasm:      wasm.Config{Timeout: 2 * time.Second}}, box, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}
