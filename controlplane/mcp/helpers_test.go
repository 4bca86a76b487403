package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/mcp"
)

// env is a control plane with the connector at /api/mcp: the assembly's
// own when its route table has it, else one mounted here the same way.
type env struct {
	*cptest.Env
	MCP *mcp.Server
	URL string // the server with /api/mcp mounted
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := cptest.New(t)
	s, err := mcp.New(mcp.Config{}, mcp.Deps{API: e.CP.Handler(), Authn: e.CP.Accounts})
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range e.CP.Routes() {
		if rt.Path == mcp.Path {
			// The assembly mounts the connector: test that one.
			return &env{Env: e, MCP: s, URL: e.Server.URL}
		}
	}
	// Mounted through its route rows, as the route table mounts them.
	mux := http.NewServeMux()
	api.Mount(mux, s.Routes(), api.MountOptions{Authn: e.CP.Accounts})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &env{Env: e, MCP: s, URL: srv.URL}
}

// bearer adds a key to every request of the SDK's HTTP client.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return b.next.RoundTrip(r)
}

// connect opens an SDK client session over Streamable HTTP with key.
func (e *env) connect(t *testing.T, key string) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test-assistant", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{
		Endpoint:   e.URL + mcp.Path,
		HTTPClient: &http.Client{Transport: bearer{key: key, next: http.DefaultTransport}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and returns its result, failing on a protocol error.
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// structured is the result's structured content as generic JSON.
func structured(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return m
}

// mustOK fails unless the call succeeded, and returns its structured result.
func mustOK(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res := call(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, text(res))
	}
	return structured(t, res)
}

// text is the result's first text content.
func text(res *sdk.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

// errorCode is error.code of a tool error's structured content.
func errorCode(t *testing.T, res *sdk.CallToolResult) (string, float64) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want a tool error, got %s", text(res))
	}
	m := structured(t, res)
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(string)
	status, _ := m["status"].(float64)
	return code, status
}

// restJSON decodes a REST answer as generic JSON.
func restJSON(t *testing.T, r *cptest.Response) map[string]any {
	t.Helper()
	var m map[string]any
	r.JSON(t, &m)
	return m
}
