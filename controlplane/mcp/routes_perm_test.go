package mcp_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/mcp"
)

// routeRecorder answers every request with {} and keeps the route row
// (of the control plane's table) that the API's mux chose for it.
type routeRecorder struct {
	mu   sync.Mutex
	mux  *http.ServeMux
	last *api.Route
}

func newRouteRecorder(routes []api.Route) *routeRecorder {
	rr := &routeRecorder{mux: http.NewServeMux()}
	for i := range routes {
		rt := &routes[i]
		rr.mux.HandleFunc(rt.Method+" "+rt.Path, func(w http.ResponseWriter, r *http.Request) {
			rr.mu.Lock()
			rr.last = rt
			rr.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{}`))
		})
	}
	return rr
}

func (rr *routeRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rr.mu.Lock()
	rr.last = nil
	rr.mu.Unlock()
	rr.mux.ServeHTTP(w, r)
}

// TestEveryToolIsAnAuthorizedRoute: every tool's call is a route of the
// control plane's table that needs credentials and names an operation of
// the permission table, so the table (roles, read-only keys, full access,
// project keys) decides each call; the operation each tool reaches is
// pinned here, and a tool added without a row fails.
func TestEveryToolIsAnAuthorizedRoute(t *testing.T) {
	e := cptest.New(t)
	rr := newRouteRecorder(e.CP.Routes())
	s, err := mcp.New(mcp.Config{}, mcp.Deps{API: rr})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	cs := (&env{Env: e, MCP: s, URL: srv.URL}).connect(t, "k")
	cases := []struct {
		tool string
		args map[string]any
		op   auth.Op
	}{
		{"list_repos", nil, auth.OpRepoRead},
		{"create_repo", map[string]any{"name": "r"}, auth.OpRepoWrite},
		{"push_files", map[string]any{"repoId": "r1", "message": "m", "files": []any{map[string]any{"path": "a", "content": "b"}}}, auth.OpRepoWrite},
		{"get_repo_files", map[string]any{"repoId": "r1"}, auth.OpRepoRead},
		{"deploy_repo", map[string]any{"repoId": "r1", "projectId": "p1"}, auth.OpRepoDeploy},
		{"get_service_config", map[string]any{"service": "shield"}, auth.OpShieldRead},
		{"update_service_config", map[string]any{"service": "cdn", "settings": map[string]any{"enabled": true}}, auth.OpCDNWrite},
		{"security_overview", nil, auth.OpSecurityRead},
		{"needs_attention", nil, auth.OpUsageRead},
		{"list_agent_tools", nil, auth.OpAgentRead},
		{"create_agent", map[string]any{"projectId": "p1", "name": "a", "model": "m"}, auth.OpAgentWrite},
		{"get_agent", map[string]any{"agentId": "a1"}, auth.OpAgentRead},
		{"update_agent", map[string]any{"agentId": "a1", "maxSteps": 2}, auth.OpAgentWrite},
		{"set_agent_status", map[string]any{"agentId": "a1", "status": "paused"}, auth.OpAgentWrite},
		{"delete_agent", map[string]any{"agentId": "a1"}, auth.OpAgentWrite},
		{"run_agent", map[string]any{"agentId": "a1", "input": "hi"}, auth.OpAgentRun},
		{"suggest_agents", map[string]any{"projectId": "p1"}, auth.OpAgentRead},
		{"create_suggested_agents", map[string]any{"projectId": "p1", "appType": "blog", "keys": []any{"k"}}, auth.OpAgentWrite},
		{"list_memory_stores", map[string]any{"projectId": "p1"}, auth.OpMemoryRead},
		{"list_memory_keys", map[string]any{"storeId": "m1"}, auth.OpMemoryRead},
		{"get_memory", map[string]any{"storeId": "m1", "keys": []any{"k"}}, auth.OpMemoryRead},
		{"put_memory", map[string]any{"storeId": "m1", "key": "k", "value": "v"}, auth.OpMemoryWrite},
		{"delete_memory", map[string]any{"storeId": "m1", "keys": []any{"k"}}, auth.OpMemoryWrite},
		{"list_buckets", map[string]any{"projectId": "p1"}, auth.OpBucketRead},
		{"list_objects", map[string]any{"bucketId": "b1"}, auth.OpBucketRead},
		{"get_object_url", map[string]any{"bucketId": "b1", "key": "k"}, auth.OpBucketData},
		{"put_object", map[string]any{"bucketId": "b1", "key": "a/b", "content": "x"}, auth.OpBucketWrite},
		{"list_auth_pools", map[string]any{"projectId": "p1"}, auth.OpAuthPoolRead},
		{"list_auth_users", map[string]any{"poolId": "s1"}, auth.OpAuthUserRead},
		{"set_auth_user_disabled", map[string]any{"poolId": "s1", "userId": "u1", "disabled": true}, auth.OpAuthPoolWrite},
		{"send_email", map[string]any{"projectId": "p1", "to": []any{"a@example.com"}, "subject": "s", "text": "t"}, auth.OpMailSend},
		{"list_emails", map[string]any{"projectId": "p1"}, auth.OpMailRead},
	}
	var covered []string
	for _, c := range cases {
		covered = append(covered, c.tool)
		t.Run(c.tool, func(t *testing.T) {
			mustOK(t, cs, c.tool, c.args)
			rr.mu.Lock()
			rt := rr.last
			rr.mu.Unlock()
			if rt == nil {
				t.Fatal("the call reached no route of the control plane")
			}
			if rt.Public {
				t.Fatalf("%s %s is public: the permission table does not decide it", rt.Method, rt.Path)
			}
			if _, ok := auth.RuleOf(rt.Op); !ok {
				t.Fatalf("%s %s names no operation of the permission table (%q)", rt.Method, rt.Path, rt.Op)
			}
			if rt.Op != c.op {
				t.Errorf("%s %s is %s, want %s", rt.Method, rt.Path, rt.Op, c.op)
			}
		})
	}
	slices.Sort(covered)
	names := s.ToolNames()
	slices.Sort(names)
	if !slices.Equal(covered, names) {
		t.Errorf("tools %v, covered %v: give each tool a row", names, covered)
	}
}
