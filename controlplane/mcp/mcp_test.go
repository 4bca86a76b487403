package mcp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/mcp"
)

// specTools are the connector tools of the areas that exist, with the
// spec's names exactly.
var specTools = []string{"create_agent", "create_repo", "create_suggested_agents", "delete_agent", "delete_memory", "deploy_repo",
	"get_agent", "get_memory", "get_object_url", "get_repo_files", "get_service_config", "list_agent_tools", "list_auth_pools",
	"list_auth_users", "list_buckets", "list_emails", "list_memory_keys", "list_memory_stores", "list_objects", "list_repos",
	"needs_attention", "push_files", "put_memory", "put_object", "run_agent", "security_overview", "send_email",
	"set_agent_status", "set_auth_user_disabled", "suggest_agents", "update_agent", "update_service_config"}

func TestListTools(t *testing.T) {
	e := newEnv(t)
	cs := e.connect(t, cptest.OwnerKey)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		t.Run(tl.Name, func(t *testing.T) {
			if len(tl.Description) < 40 {
				t.Errorf("description too thin for a model: %q", tl.Description)
			}
			if tl.Annotations == nil || tl.Annotations.Title == "" {
				t.Error("no annotations")
			}
			b, _ := json.Marshal(tl.InputSchema)
			var s struct {
				Type                 string                    `json:"type"`
				AdditionalProperties *bool                     `json:"additionalProperties"`
				Properties           map[string]map[string]any `json:"properties"`
			}
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
				t.Errorf("input schema must be a closed object: %s", b)
			}
			for name, p := range s.Properties {
				if d, _ := p["description"].(string); d == "" {
					t.Errorf("property %s has no description", name)
				}
			}
		})
	}
	slices.Sort(names)
	if !slices.Equal(names, specTools) {
		t.Errorf("tools %v, want %v", names, specTools)
	}
	if got := e.MCP.ToolNames(); len(got) != len(specTools) {
		t.Errorf("ToolNames %v", got)
	}
}

// TestToolsMatchREST calls every tool and the REST route it names with the
// same key and request, and compares the answers.
func TestToolsMatchREST(t *testing.T) {
	e := newEnv(t)
	owner := e.Owner
	cs := e.connect(t, cptest.OwnerKey)
	prj := e.CreateProject("Blog")

	created := mustOK(t, cs, "create_repo", map[string]any{"name": "site", "description": "the blog"})
	repo := created["repo"].(map[string]any)
	repoID := repo["id"].(string)
	detail := restJSON(t, owner.Must(200, "GET", "/api/repos/"+repoID, nil))
	if !reflect.DeepEqual(detail["repo"], repo) {
		t.Errorf("create_repo answered %v; REST reads %v", repo, detail["repo"])
	}

	files := []map[string]any{
		{"path": "index.html", "content": "<h1>hello</h1>"},
		{"path": "img/dot.png", "content": base64.StdEncoding.EncodeToString([]byte{0x89, 'P', 'N', 'G', 0, 1, 2}), "base64": true},
		{"path": ".env", "content": "SECRET=1"},
	}
	pushed := mustOK(t, cs, "push_files", map[string]any{"repoId": repoID, "message": "first", "files": files})
	detail = restJSON(t, owner.Must(200, "GET", "/api/repos/"+repoID, nil))
	if commits := detail["commits"].([]any); len(commits) != 1 || !reflect.DeepEqual(commits[0], pushed["commit"]) {
		t.Errorf("push_files answered %v; REST reads %v", pushed, detail["commits"])
	}

	// Before any site is live (the deploy below goes live in the background).
	settings := map[string]any{"enabled": true, "blockedCountries": []any{"RU"}, "blockAiCrawlers": true}
	updated := mustOK(t, cs, "update_service_config", map[string]any{"service": "shield", "settings": settings})
	again := restJSON(t, owner.Must(200, "PUT", "/api/services/shield", settings))
	if !reflect.DeepEqual(updated, again) {
		t.Errorf("update_service_config answered %v; the same REST PUT %v", updated, again)
	}

	cdnSettings := map[string]any{"enabled": false, "cacheTtlSeconds": 60}
	updated = mustOK(t, cs, "update_service_config", map[string]any{"service": "cdn", "settings": cdnSettings})
	again = restJSON(t, owner.Must(200, "PUT", "/api/services/cdn", cdnSettings))
	if !reflect.DeepEqual(updated, again) || updated["cacheTtlSeconds"] != float64(60) || updated["enabled"] != false {
		t.Errorf("update_service_config cdn answered %v; the same REST PUT %v", updated, again)
	}

	deployed := mustOK(t, cs, "deploy_repo", map[string]any{"repoId": repoID, "projectId": prj, "commit": 1})
	dep := deployed["deployment"].(map[string]any)
	e.CP.Deploys().Wait() // the deploy goes live in the background
	got := restJSON(t, owner.Must(200, "GET", "/api/deployments/"+dep["id"].(string), nil))
	if d := got["deployment"].(map[string]any); d["projectId"] != prj || d["commit"] != float64(1) {
		t.Errorf("deployment %v is not of project %s", d, prj)
	}

	// Reads: the same request over REST answers exactly the same.
	reads := []struct {
		tool string
		args map[string]any
		path string
	}{
		{"list_repos", nil, "/api/repos"},
		{"get_repo_files", map[string]any{"repoId": repoID}, "/api/repos/" + repoID + "/files"},
		{"get_repo_files", map[string]any{"repoId": repoID, "commit": 1}, "/api/repos/" + repoID + "/files?commit=1"},
		{"get_repo_files", map[string]any{"repoId": repoID, "path": "index.html"}, "/api/repos/" + repoID + "/files?path=index.html"},
		{"get_service_config", map[string]any{"service": "shield"}, "/api/services/shield"},
		{"get_service_config", map[string]any{"service": "cdn"}, "/api/services/cdn"},
		{"security_overview", nil, "/api/security/overview"},
		{"needs_attention", nil, "/api/attention"},
	}
	for _, rd := range reads {
		t.Run(rd.tool+" "+rd.path, func(t *testing.T) {
			want := restJSON(t, owner.Must(200, "GET", rd.path, nil))
			got := mustOK(t, cs, rd.tool, rd.args)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("tool answered\n%v\nREST answered\n%v", got, want)
			}
		})
	}
	if f := mustOK(t, cs, "get_repo_files", map[string]any{"repoId": repoID, "path": "index.html"}); f["content"] != "<h1>hello</h1>" {
		t.Errorf("file read back %v", f)
	}

	// Agents: create, read, pause, resume, suggestions, catalogue, delete;
	// each answer is the REST answer for the same request.
	agentAns := mustOK(t, cs, "create_agent", map[string]any{"projectId": prj, "name": "watcher", "model": "gpt-4o-mini",
		"tools": []any{"project_info"}, "maxSteps": 3})
	agentID := agentAns["agent"].(map[string]any)["id"].(string)
	for _, rd := range []struct {
		tool string
		args map[string]any
		path string
	}{
		{"get_agent", map[string]any{"agentId": agentID}, "/api/agents/" + agentID},
		{"list_agent_tools", map[string]any{"writes": true}, "/api/agents/tools?writes=1"},
		{"suggest_agents", map[string]any{"projectId": prj, "appType": "store"}, "/api/projects/" + prj + "/agents/suggested?appType=store"},
	} {
		want := restJSON(t, owner.Must(200, "GET", rd.path, nil))
		if got := mustOK(t, cs, rd.tool, rd.args); !reflect.DeepEqual(got, want) {
			t.Errorf("%s answered\n%v\nREST answered\n%v", rd.tool, got, want)
		}
	}
	paused := mustOK(t, cs, "set_agent_status", map[string]any{"agentId": agentID, "status": "paused"})
	if a := paused["agent"].(map[string]any); a["status"] != "paused" {
		t.Errorf("set_agent_status paused: %v", a)
	}
	mustOK(t, cs, "update_agent", map[string]any{"agentId": agentID, "maxSteps": 5})
	if a := restJSON(t, owner.Must(200, "GET", "/api/agents/"+agentID, nil))["agent"].(map[string]any); a["maxSteps"] != float64(5) {
		t.Errorf("update_agent: maxSteps %v", a["maxSteps"])
	}
	mustOK(t, cs, "delete_agent", map[string]any{"agentId": agentID})
	owner.Must(404, "GET", "/api/agents/"+agentID, nil)
}

// TestRefusals: a tool call is refused exactly when the REST call is, with
// the REST code and status; the connector's own limits refuse before the API.
func TestRefusals(t *testing.T) {
	e := newEnv(t)
	cs := e.connect(t, cptest.OwnerKey)
	prj := e.CreateProject("Shop")
	repoID := mustOK(t, cs, "create_repo", map[string]any{"name": "shop"})["repo"].(map[string]any)["id"].(string)
	mustOK(t, cs, "push_files", map[string]any{"repoId": repoID, "message": "one", "files": []any{
		map[string]any{"path": "index.html", "content": "hi"}, map[string]any{"path": ".env.production", "content": "K=V"},
	}})
	push := func(files ...any) map[string]any {
		return map[string]any{"repoId": repoID, "message": "m", "files": files}
	}
	file := func(path string, size int) map[string]any {
		return map[string]any{"path": path, "content": strings.Repeat("a", size)}
	}
	many := make([]any, mcp.MaxPushFiles+1)
	for i := range many {
		many[i] = file("f"+strings.Repeat("x", i%7)+"/"+string(rune('a'+i%26))+"-"+itoa(i)+".txt", 1)
	}

	readOnly := e.NewKey("read_only", "")
	projectKey := e.NewKey("full", prj)
	developer := e.Member("dev@example.com", "developer")

	cases := []struct {
		name   string
		key    string
		tool   string
		args   map[string]any
		code   string
		status float64
	}{
		{"read-only key cannot push", readOnly.Key, "push_files", push(file("index.html", 3)), "read_only_key", 403},
		{"read-only key cannot create a repo", readOnly.Key, "create_repo", map[string]any{"name": "x"}, "read_only_key", 403},
		{"read-only key cannot deploy", readOnly.Key, "deploy_repo", map[string]any{"repoId": repoID, "projectId": prj}, "read_only_key", 403},
		{"read-only key cannot change shield", readOnly.Key, "update_service_config", map[string]any{"service": "shield", "settings": map[string]any{"enabled": true}}, "read_only_key", 403},
		{"project key refused for workspace-wide repos", projectKey.Key, "list_repos", nil, "workspace_key_required", 403},
		{"project key cannot push", projectKey.Key, "push_files", push(file("index.html", 3)), "workspace_key_required", 403},
		{"project key refused for the security overview", projectKey.Key, "security_overview", nil, "workspace_key_required", 403},
		{"developer cannot change shield", developer.Key, "update_service_config", map[string]any{"service": "shield", "settings": map[string]any{"enabled": true}}, "insufficient_role", 403},
		{"read-only key cannot change the cdn", readOnly.Key, "update_service_config", map[string]any{"service": "cdn", "settings": map[string]any{"enabled": false}}, "read_only_key", 403},
		{"developer cannot change the cdn", developer.Key, "update_service_config", map[string]any{"service": "cdn", "settings": map[string]any{"cacheTtlSeconds": 5}}, "insufficient_role", 403},
		{"project key refused for the workspace's cdn", projectKey.Key, "get_service_config", map[string]any{"service": "cdn"}, "workspace_key_required", 403},
		{"shield settings are not the cdn's, nothing stored", cptest.OwnerKey, "update_service_config", map[string]any{"service": "cdn", "settings": map[string]any{"blockAiCrawlers": true}}, "unknown_field", 400},
		{"cdn cache time past a year", cptest.OwnerKey, "update_service_config", map[string]any{"service": "cdn", "settings": map[string]any{"cacheTtlSeconds": 31536001}}, "", 0},
		{"an unknown service", cptest.OwnerKey, "get_service_config", map[string]any{"service": "mail"}, "", 0},
		{"environment files never readable", cptest.OwnerKey, "get_repo_files", map[string]any{"repoId": repoID, "path": ".env.production"}, "env_file_unreadable", 403},
		{"unknown repo", cptest.OwnerKey, "get_repo_files", map[string]any{"repoId": "repo_nope"}, "not_found", 404},
		{"bad shield setting, nothing stored", cptest.OwnerKey, "update_service_config", map[string]any{"service": "shield", "settings": map[string]any{"blockedCountries": []any{"XX1"}}}, "", 400},
		{"REST path rules still apply", cptest.OwnerKey, "push_files", push(file("../up.txt", 3)), "invalid_path", 400},
		{"more than 300 files", cptest.OwnerKey, "push_files", push(many...), "", 0},
		{"a file over 600 KB", cptest.OwnerKey, "push_files", push(file("big.bin", mcp.MaxPushFileBytes+1)), "file_too_large", 413},
		{"a base64 file over 600 KB", cptest.OwnerKey, "push_files", push(map[string]any{"path": "big.bin", "base64": true,
			"content": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, mcp.MaxPushFileBytes+1))}), "file_too_large", 413},
		{"blank repo id", cptest.OwnerKey, "get_repo_files", map[string]any{"repoId": "  "}, "invalid_request", 400},
	}
	before := restJSON(t, e.Owner.Must(200, "GET", "/api/repos/"+repoID, nil))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := cs
			if c.key != cptest.OwnerKey {
				s = e.connect(t, c.key)
			}
			res := call(t, s, c.tool, c.args)
			if !res.IsError {
				t.Fatalf("want a refusal, got %s", text(res))
			}
			if c.status == 0 {
				// Refused by the input schema (maxItems) before the handler.
				return
			}
			code, status := errorCode(t, res)
			if status != c.status || (c.code != "" && code != c.code) {
				t.Errorf("got %s %v (%s), want %s %v", code, status, text(res), c.code, c.status)
			}
			if !strings.Contains(text(res), code) {
				t.Errorf("text %q does not name the code", text(res))
			}
		})
	}
	// Nothing refused was stored: the repo still holds one commit.
	after := restJSON(t, e.Owner.Must(200, "GET", "/api/repos/"+repoID, nil))
	if !reflect.DeepEqual(before, after) {
		t.Errorf("a refused push changed the repo:\n%v\n%v", before, after)
	}
	// Exactly at the connector's limits the call is made.
	at := make([]any, 2)
	at[0] = file("a.txt", mcp.MaxPushFileBytes)
	at[1] = map[string]any{"path": "b.bin", "base64": true, "content": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, mcp.MaxPushFileBytes))}
	mustOK(t, cs, "push_files", push(at...))
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestTransportAuthentication(t *testing.T) {
	e := newEnv(t)
	var created struct {
		Key struct {
			ID string `json:"id"`
		} `json:"key"`
		Secret string `json:"secret"`
	}
	e.Owner.Must(201, "POST", "/api/keys", map[string]any{"name": "gone"}).JSON(t, &created)
	e.Owner.Must(200, "DELETE", "/api/keys/"+created.Key.ID, nil)
	revoked := created.Secret
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	cases := []struct {
		name, method, authz string
		status              int
		code                string
	}{
		{"no key", "POST", "", 401, "unauthenticated"},
		{"not bearer", "POST", "Basic dXNlcjpwYXNz", 401, "unauthenticated"},
		{"unknown key", "POST", "Bearer svc_not_a_key_at_all_0123456789", 401, ""},
		{"revoked key", "POST", "Bearer " + revoked, 401, ""},
		{"owner key", "POST", "Bearer " + cptest.OwnerKey, 200, ""},
		{"no event stream", "GET", "Bearer " + cptest.OwnerKey, 405, ""},
		{"no event stream without a key", "GET", "", 401, "unauthenticated"},
		{"no sessions", "DELETE", "Bearer " + cptest.OwnerKey, 405, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, e.URL+mcp.Path, strings.NewReader(init))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if c.authz != "" {
				req.Header.Set("Authorization", c.authz)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error struct{ Code string } `json:"error"`
			}
			json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != c.status || (c.code != "" && body.Error.Code != c.code) {
				t.Errorf("status %d code %q, want %d %q", resp.StatusCode, body.Error.Code, c.status, c.code)
			}
			if c.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}
