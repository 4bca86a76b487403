package cli_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/cptest"
)

// fetch is get with a User-Agent, answering the X-Robots-Tag header too.
func (h *harness) fetch(rawURL, userAgent string) (status int, body, robots string) {
	h.t.Helper()
	h.synced()
	req, err := http.NewRequest("GET", rawURL, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	if userAgent != "" {
		req.Header.Set("User-Agent", userAgent)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("X-Robots-Tag")
}

// TestPreviews: a preview answers at its own address while production keeps
// serving, behind the same Shield rules and site password, kept out of
// search engines; an earlier deployment keeps its address; promote makes
// the preview live without building it again.
func TestPreviews(t *testing.T) {
	h := newHarness(t)
	site := filepath.Join(t.TempDir(), "previewed")
	write(t, site, map[string]string{"index.html": "<h1>v1</h1>"})
	h.login()
	if r := h.run(site, "", "link", "--create"); r.code != 0 {
		t.Fatalf("link: %+v", r)
	}
	r := h.run(site, "", "deploy", "--json")
	d1 := deployResult(t, r)
	if r.code != 0 || d1.State != "live" || d1.URL != "https://previewed.apps.test" || d1.PreviewURL != "https://1--previewed.apps.test" {
		t.Fatalf("deploy: %+v", r)
	}

	write(t, site, map[string]string{"index.html": "<h1>v2</h1>"})
	r = h.run(site, "", "deploy", "--preview")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "https://2--previewed.apps.test" || !strings.Contains(r.stderr, "platform promote dpl_") {
		t.Fatalf("deploy --preview: %+v", r)
	}
	for _, c := range []struct {
		url, body, robots string
	}{
		{"https://previewed.apps.test/", "<h1>v1</h1>", ""},            // production keeps serving
		{"https://2--previewed.apps.test/", "<h1>v2</h1>", "noindex"},  // the preview
		{"https://1--previewed.apps.test/", "<h1>v1</h1>", "noindex"},  // an earlier deployment, a rollback target
		{"https://3--previewed.apps.test/", "404 page not found", "_"}, // no such deployment
		{"https://2--previewed.apps.test/missing", "404 page not found", "noindex"},
	} {
		status, body, robots := h.fetch(c.url, "")
		if !strings.Contains(body, c.body) || (c.robots != "_" && robots != c.robots) || (c.body != "404 page not found") != (status == 200) {
			t.Fatalf("GET %s = %d %q (X-Robots-Tag %q), want %q (%q)", c.url, status, body, robots, c.body, c.robots)
		}
	}

	// The project's Shield rules and site password apply to its previews.
	h.env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"enabled": true, "blockAiCrawlers": true})
	h.env.Owner.Must(200, "POST", "/api/services/shield", nil)
	if status, _, _ := h.fetch("https://2--previewed.apps.test/", "GPTBot/1.2"); status != 403 {
		t.Fatalf("an AI crawler on the preview: %d, want 403", status)
	}
	h.env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"passwords": map[string]any{"previewed": "a preview password"}})
	if status, body, _ := h.fetch("https://2--previewed.apps.test/", ""); status != 401 || strings.Contains(body, "v2") {
		t.Fatalf("the preview behind the site password: %d %q", status, body)
	}
	h.env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"passwords": map[string]any{"previewed": nil}})

	// Refusals.
	var list struct {
		Deployments []struct {
			ID, State string
			Number    int
		}
	}
	h.env.Owner.Must(200, "GET", "/api/projects/"+d1.ProjectID+"/deployments", nil).JSON(t, &list)
	if len(list.Deployments) != 2 || list.Deployments[0].State != "preview" || list.Deployments[1].State != "live" {
		t.Fatalf("deployments: %+v", list.Deployments)
	}
	preview := list.Deployments[0].ID
	viewer := h.env.Member("viewer@example.com", "viewer")
	for _, c := range []struct {
		name   string
		client *cptest.Client
		id     string
		status int
		code   string
	}{
		{"already live", h.env.Owner, d1.DeploymentID, 409, "already_live"},
		{"unknown", h.env.Owner, "dpl_nosuchdeployment00", 404, "not_found"},
		{"viewer", viewer, preview, 403, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := c.client.Do("POST", "/api/deployments/"+c.id+"/promote", nil)
			if resp.Status != c.status || (c.code != "" && resp.ErrorCode() != c.code) {
				t.Fatalf("promote: %d %s", resp.Status, resp.Body)
			}
		})
	}
	// An app cannot be previewed: the answer says so before anything runs.
	write(t, site, map[string]string{"platform.json": `{"kind":"app","origin":"https://origin.example.com"}`})
	if r := h.run(site, "", "deploy", "--preview"); r.code == 0 || !strings.Contains(r.stderr, "previews are made of static sites") {
		t.Fatalf("deploy --preview of an app: %+v", r)
	}

	// Promote: production serves the preview's files, nothing is built.
	began := time.Now()
	r = h.run(site, "", "promote", "--json")
	if r.code != 0 {
		t.Fatalf("promote: %+v", r)
	}
	pr := deployResult(t, r)
	if pr.DeploymentID != preview || pr.State != "live" || pr.URL != "https://previewed.apps.test" {
		t.Fatalf("promote: %+v", pr)
	}
	if status, body, robots := h.fetch("https://previewed.apps.test/", ""); status != 200 || body != "<h1>v2</h1>" || robots != "" {
		t.Fatalf("production after promote: %d %q %q", status, body, robots)
	}
	if time.Since(began) > 10*time.Second {
		t.Fatal("promote took as long as a build")
	}
	if r := h.run(site, "", "promote"); r.code == 0 || !strings.Contains(r.stderr, "no preview to promote") {
		t.Fatalf("promote with no preview left: %+v", r)
	}
	// Promoting the earlier deployment back is an instant rollback.
	if r := h.run(site, "", "promote", d1.DeploymentID); r.code != 0 {
		t.Fatalf("promote the first deployment: %+v", r)
	}
	if _, body, _ := h.fetch("https://previewed.apps.test/", ""); body != "<h1>v1</h1>" {
		t.Fatalf("production after promoting deployment 1: %q", body)
	}
}
