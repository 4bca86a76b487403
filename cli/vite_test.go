package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/cli"
	"github.com/svcplatform/platform/runtime/engine"
	"github.com/svcplatform/platform/runtime/sandbox"
	"github.com/svcplatform/platform/runtime/supervise"
)

// viteSite is a Vite project (package.json, lockfile, index.html,
// src/main.js). `make testdeps` runs npm ci in it once with the npm cache
// in .npm-cache, so the platform's build can install Vite without the
// network.
const viteSite = "testdata/vite-site"

// TestDeployViteSite deploys a site made with a real static-site generator
// as a user would: the folder holds only sources and a lockfile, the
// platform detects Vite, installs it with npm ci and builds it in the
// sandbox, and the edge serves the generated pages; a second deploy and a
// rollback behave as with a plain folder.
func TestDeployViteSite(t *testing.T) {
	cache := filepath.Join(viteSite, ".npm-cache")
	_, npmErr := exec.LookPath("npm")
	if _, err := os.Stat(cache); err != nil || npmErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("cli: npm or %s missing (make testdeps installs them): %v %v", cache, err, npmErr)
		}
		t.Skip("cli: the Vite fixture's npm cache is missing (Debian nodejs npm, then make testdeps)")
	}
	h := newHarness(t)
	runtimeDir := filepath.Join(t.TempDir(), "runtime")
	eng, err := engine.New(context.Background(), engine.Config{Dir: runtimeDir,
		Supervise: supervise.Config{StartTimeout: 30 * time.Second, StopGrace: 2 * time.Second}}, sandbox.None{}, h.env.Clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	if err := h.env.CP.Deploys().SetRuntime(context.Background(), eng); err != nil {
		t.Fatal(err)
	}

	site := filepath.Join(t.TempDir(), "vite-site")
	for _, name := range []string{"package.json", "package-lock.json", "index.html", "src/main.js"} {
		b, err := os.ReadFile(filepath.Join(viteSite, name))
		if err != nil {
			t.Fatal(err)
		}
		write(t, site, map[string]string{name: string(b)})
	}
	h.login()
	if r := h.run(site, "", "link", "--create"); r.code != 0 {
		t.Fatalf("link: %+v", r)
	}
	linkJSON, err := os.ReadFile(filepath.Join(site, cli.LinkDir, cli.LinkFile))
	if err != nil {
		t.Fatal(err)
	}
	var link cli.Link
	if err := json.Unmarshal(linkJSON, &link); err != nil || link.ProjectID == "" {
		t.Fatalf("link file %q: %v", linkJSON, err)
	}
	// The project's build cache starts with the packages npm ci needs, as
	// it would after a first build with network.
	npmCache := filepath.Join(runtimeDir, ".build-cache", link.ProjectID, "npm")
	if err := os.MkdirAll(filepath.Dir(npmCache), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", cache, npmCache).CombinedOutput(); err != nil {
		t.Fatalf("seed the build cache: %v: %s", err, out)
	}

	r := h.run(site, "", "deploy", "--json")
	d := deployResult(t, r)
	if r.code != 0 || d.State != "live" {
		t.Fatalf("deploy: %+v", r)
	}
	status, body := h.get(d.URL + "/")
	if status != 200 || !strings.Contains(string(body), "<title>Built by Vite</title>") {
		t.Fatalf("GET / = %d %q", status, body)
	}
	// Vite rewrote the module script into a hashed asset under /assets/.
	asset := regexp.MustCompile(`src="(/assets/index-[A-Za-z0-9_-]+\.js)"`).FindStringSubmatch(string(body))
	if asset == nil {
		t.Fatalf("no built script in %q", body)
	}
	if status, js := h.get(d.URL + asset[1]); status != 200 || !strings.Contains(string(js), "hello from vite") {
		t.Fatalf("GET %s = %d %q", asset[1], status, js)
	}
	// The sources are not served: only the output folder is.
	if status, _ := h.get(d.URL + "/src/main.js"); status != 404 {
		t.Fatalf("GET /src/main.js = %d, want 404 (only dist is served)", status)
	}
	logs := h.run(site, "", "logs", "--source", "build")
	if logs.code != 0 || !strings.Contains(logs.stdout, "npm ci") || !strings.Contains(logs.stdout, "vite build") {
		t.Fatalf("build log: %+v", logs)
	}

	// A second version, then a rollback to the first without a rebuild.
	main := "document.getElementById(\"msg\").textContent = \"second version\";\n"
	write(t, site, map[string]string{"src/main.js": main})
	r = h.run(site, "", "deploy", "--json")
	if d2 := deployResult(t, r); r.code != 0 || d2.State != "live" {
		t.Fatalf("deploy 2: %+v", r)
	}
	_, body = h.get(d.URL + "/")
	asset2 := regexp.MustCompile(`src="(/assets/index-[A-Za-z0-9_-]+\.js)"`).FindStringSubmatch(string(body))
	if asset2 == nil || asset2[1] == asset[1] {
		t.Fatalf("second build served %q", body)
	}
	if r := h.run(site, "", "rollback", "1"); r.code != 0 {
		t.Fatalf("rollback: %+v", r)
	}
	if status, _ := h.get(d.URL + asset[1]); status != 200 {
		t.Fatalf("after rollback GET %s = %d", asset[1], status)
	}
}
