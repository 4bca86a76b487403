package deploys_test

import (
	"strings"
	"testing"
)

// The areas' routes are in the API's OpenAPI document, with their bodies.
func TestOpenAPIHasHostingRoutes(t *testing.T) {
	env := newCP(t)
	doc := string(env.Client("").Must(200, "GET", "/api/openapi.json", nil).Body)
	for _, want := range []string{`"/api/repos/{id}/commits"`, `"/api/repos/{id}/deploy"`, `"/api/deployments/{id}"`,
		`"/api/services/shield/blocks"`, `"/api/services/cdn"`, `"/edge/v1/config"`, `"/edge/v1/counts"`, `"PatchDoc"`, `"Snapshot"`,
		`"/api/projects/{id}/logs"`, `"text/event-stream"`, `"Last-Event-ID"`, `"application/gzip"`, `"multipart/form-data"`, `"X-Commit-Message"`} {
		if !strings.Contains(doc, want) {
			t.Errorf("OpenAPI document lacks %s", want)
		}
	}
}
