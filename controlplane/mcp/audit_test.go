package mcp_test

import (
	"testing"

	"github.com/svcplatform/platform/controlplane/cptest"
)

// TestAuditVia: a change made through the connector is in the audit log as
// made through it; the same change over REST is not.
func TestAuditVia(t *testing.T) {
	e := newEnv(t)
	cs := e.connect(t, cptest.OwnerKey)
	mustOK(t, cs, "create_repo", map[string]any{"name": "via-connector"})
	e.Owner.Must(201, "POST", "/api/repos", map[string]any{"name": "via-rest"})
	var page struct {
		Entries []struct {
			Action  string         `json:"action"`
			Actor   map[string]any `json:"actor"`
			Details map[string]any `json:"details"`
		} `json:"entries"`
	}
	var who struct {
		Workspace struct {
			ID string `json:"id"`
		} `json:"workspace"`
	}
	e.Owner.Must(200, "GET", "/api/workspace", nil).JSON(t, &who)
	r := e.Owner.Must(200, "GET", "/api/orgs/"+who.Workspace.ID+"/audit-logs?action=repo.create", nil)
	r.JSON(t, &page)
	if len(page.Entries) != 2 {
		t.Fatalf("entries %s", r.Body)
	}
	// Newest first: the REST create, then the connector's.
	if page.Entries[0].Actor["via"] != nil || page.Entries[1].Actor["via"] != "connector" {
		t.Errorf("via not recorded as made through the connector: %s", r.Body)
	}
}
