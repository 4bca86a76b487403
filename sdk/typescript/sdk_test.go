// Package typescript_test runs the TypeScript SDK's tests (test/, node's
// test runner) against a real control plane started here, with a key
// limited to one project as PLATFORM_TOKEN, the way a deployed app gets it.
package typescript_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/ai"
	"github.com/svcplatform/platform/controlplane/ai/upstreamtest"
	"github.com/svcplatform/platform/controlplane/cptest"
)

// need skips, or under CI fails, naming what is missing.
func need(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI: sdk/typescript: %s", why)
	}
	t.Skip("sdk/typescript: " + why)
}

func TestSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		need(t, "node not found (apt-get install nodejs)")
	}
	if _, err := os.Stat(filepath.Join("node_modules", ".bin", "tsc")); err != nil {
		need(t, "its dependencies are not installed: run npm ci in sdk/typescript")
	}
	build := exec.Command(filepath.Join("node_modules", ".bin", "tsc"), "-p", "tsconfig.json")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}
	if err := os.MkdirAll(filepath.Join("dist", "generated"), 0o755); err != nil {
		t.Fatal(err)
	}
	schema, err := os.ReadFile(filepath.Join("src", "generated", "schema.d.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("dist", "generated", "schema.d.ts"), schema, 0o644); err != nil {
		t.Fatal(err)
	}

	model := upstreamtest.NewOpenAI()
	t.Cleanup(model.Close)
	env := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) {
		c.AI = ai.Config{FirstByteTimeout: 10 * time.Second, IdleTimeout: 10 * time.Second,
			Providers: map[string]ai.ProviderConfig{"openai": {Protocol: "openai", BaseURL: model.BaseURL(), APIKey: "sk-test"}}}
	}})
	project := env.CreateProject("SDK")
	other := env.CreateProject("Other")
	id := func(path, field string, body map[string]any) string {
		t.Helper()
		m := env.Owner.Must(http.StatusCreated, "POST", path, body).Map(t)
		obj, _ := m[field].(map[string]any)
		s, _ := obj["id"].(string)
		if s == "" {
			t.Fatalf("POST %s: no %s.id in %v", path, field, m)
		}
		return s
	}
	vars := map[string]string{
		"PLATFORM_API_URL":        env.Server.URL,
		"SERVICE_PROJECT_ID":      project,
		"SDK_TEST_DATABASE":       id("/api/projects/"+project+"/databases", "database", map[string]any{"name": "main"}),
		"SDK_TEST_OTHER_DATABASE": id("/api/projects/"+other+"/databases", "database", map[string]any{"name": "theirs"}),
		"SDK_TEST_MEMORY":         id("/api/projects/"+project+"/memory", "store", map[string]any{"name": "cache"}),
		"SDK_TEST_VECTORS":        id("/api/projects/"+project+"/vectors", "collection", map[string]any{"name": "docs", "dimensions": 384}),
		"SDK_TEST_BUCKET":         id("/api/projects/"+project+"/buckets", "bucket", map[string]any{"name": "files"}),
	}
	key := env.NewKey("full", project)
	vars["PLATFORM_TOKEN"] = key.Key
	vars["SDK_TEST_WORKSPACE_KEY"] = cptest.OwnerKey

	cmd := exec.Command(node, "--test", "--test-reporter=spec", "test/")
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("the SDK's tests failed: %v", err)
	}
}
