package controlplane_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/cptest"
)

var param = regexp.MustCompile(`\{[A-Za-z]+\}`)

// Every route that needs credentials refuses a caller without them, a
// read-only key where it changes something, and a project key where it is
// workspace-wide or another project's: checked over HTTP for the whole
// route table, so routes added by later areas are covered too.
func TestRouteTableAuthMatrix(t *testing.T) {
	env := cptest.New(t)
	own := env.CreateProject("own")
	other := env.CreateProject("other")
	anon := env.Client("")
	readOnly := env.NewKey("read_only", "")
	projectKey := env.NewKey("full", own)
	for _, rt := range env.CP.Routes() {
		if rt.Public {
			continue
		}
		rule, ok := auth.RuleOf(rt.Op)
		if !ok {
			t.Errorf("%s %s names op %q, which is not in the permission table", rt.Method, rt.Path, rt.Op)
			continue
		}
		path := param.ReplaceAllString(rt.Path, "x_missing")
		if rt.ProjectParam != "" {
			path = strings.Replace(rt.Path, "{"+rt.ProjectParam+"}", other, 1)
			path = param.ReplaceAllString(path, "x_missing")
		}
		name := rt.Method + " " + rt.Path
		t.Run(name+"/no credentials", func(t *testing.T) {
			if r := anon.Do(rt.Method, path, "{}"); r.Status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", r.Status, r.Body)
			}
		})
		t.Run(name+"/bad key", func(t *testing.T) {
			if r := env.Client("svc_aaaaaaaaaaaa_"+strings.Repeat("b", 40)).Do(rt.Method, path, "{}"); r.Status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", r.Status, r.Body)
			}
		})
		if rule.Write || rule.FullAccess {
			t.Run(name+"/read-only key", func(t *testing.T) {
				r := readOnly.Do(rt.Method, path, "{}")
				if r.Status != http.StatusForbidden {
					t.Fatalf("status %d, want 403: %s", r.Status, r.Body)
				}
			})
		}
		if rule.Scope == auth.ScopeWorkspace || (rule.Scope == auth.ScopeProject && rt.ProjectParam != "") {
			t.Run(name+"/project key elsewhere", func(t *testing.T) {
				r := projectKey.Do(rt.Method, path, "{}")
				if r.Status != http.StatusForbidden {
					t.Fatalf("status %d, want 403: %s", r.Status, r.Body)
				}
			})
		}
	}
}

// The OpenAPI document lists exactly the routes of the table, each with a
// summary, and is valid JSON served without credentials.
func TestOpenAPIDocument(t *testing.T) {
	env := cptest.New(t)
	r := env.Client("").Must(http.StatusOK, "GET", "/api/openapi.json", nil)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	r.JSON(t, &doc)
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q", doc.OpenAPI)
	}
	seen := 0
	for _, rt := range env.CP.Routes() {
		raw, ok := doc.Paths[strings.ReplaceAll(rt.Path, "...}", "}")][strings.ToLower(rt.Method)]
		if !ok {
			t.Errorf("%s %s missing from the document", rt.Method, rt.Path)
			continue
		}
		seen++
		var op struct {
			Summary   string                     `json:"summary"`
			Responses map[string]json.RawMessage `json:"responses"`
		}
		json.Unmarshal(raw, &op)
		if op.Summary == "" || len(op.Responses) < 2 {
			t.Errorf("%s %s: summary %q, %d responses", rt.Method, rt.Path, op.Summary, len(op.Responses))
		}
	}
	total := 0
	for _, ops := range doc.Paths {
		total += len(ops)
	}
	if total != seen {
		t.Errorf("document has %d operations, route table %d", total, seen)
	}
}

func TestUnknownRouteIsJSON404(t *testing.T) {
	env := cptest.New(t)
	r := env.Owner.Do("GET", "/api/nothing-here", nil)
	if r.Status != 404 || r.ErrorCode() != "no_route" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}
