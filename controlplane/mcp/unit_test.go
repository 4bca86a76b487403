package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCheckPush(t *testing.T) {
	b64 := func(n int) pushFile {
		return pushFile{Path: "f.bin", Base64: true, Content: base64.StdEncoding.EncodeToString(make([]byte, n))}
	}
	text := func(n int) pushFile { return pushFile{Path: "f.txt", Content: strings.Repeat("x", n)} }
	cases := []struct {
		name  string
		files []pushFile
		code  string
	}{
		{"empty is the API's to refuse", nil, ""},
		{"300 files", make([]pushFile, MaxPushFiles), ""},
		{"301 files", make([]pushFile, MaxPushFiles+1), "too_many_files"},
		{"text at the limit", []pushFile{text(MaxPushFileBytes)}, ""},
		{"text over the limit", []pushFile{text(1), text(MaxPushFileBytes + 1)}, "file_too_large"},
		{"base64 at the limit", []pushFile{b64(MaxPushFileBytes)}, ""},
		{"base64 at the limit minus one (padding)", []pushFile{b64(MaxPushFileBytes - 1)}, ""},
		{"base64 over the limit", []pushFile{b64(MaxPushFileBytes + 1)}, "file_too_large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkPush(c.files)
			var r *Refusal
			switch {
			case c.code == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.code != "" && (!errors.As(err, &r) || r.Code != c.code):
				t.Fatalf("got %v, want %s", err, c.code)
			}
		})
	}
}

func FuzzCheckPush(f *testing.F) {
	f.Add("aGVsbG8=", true)
	f.Add("hello", false)
	f.Add("====", true)
	f.Fuzz(func(t *testing.T, content string, isB64 bool) {
		pf := pushFile{Path: "a", Content: content, Base64: isB64}
		err := checkPush([]pushFile{pf})
		if isB64 {
			if data, derr := base64.StdEncoding.DecodeString(content); derr == nil && (len(data) > MaxPushFileBytes) != (err != nil) {
				t.Fatalf("decoded %d bytes, refusal %v", len(data), err)
			}
		} else if (len(content) > MaxPushFileBytes) != (err != nil) {
			t.Fatalf("%d bytes, refusal %v", len(content), err)
		}
	})
}

func TestParseControlPlaneURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"http://127.0.0.1:7070", "http://127.0.0.1:7070"},
		{"https://api.example.com/", "https://api.example.com"},
		{" http://localhost:7070 ", "http://localhost:7070"},
		{"ftp://x", ""},
		{"127.0.0.1:7070", ""},
		{"http://", ""},
		{"http://u:p@host", ""},
		{"http://host/api", ""},
		{"http://host?x=1", ""},
		{"", ""},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			u, err := ParseControlPlaneURL(c.in)
			if c.want == "" {
				if !errors.Is(err, ErrBadURL) {
					t.Fatalf("got %v, %v; want ErrBadURL", u, err)
				}
				return
			}
			if err != nil || u.String() != c.want {
				t.Fatalf("got %v, %v; want %s", u, err, c.want)
			}
		})
	}
}

func FuzzParseControlPlaneURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:7070", "https://h/", "http://u@h", "%zz", "http://[::1]:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := ParseControlPlaneURL(raw)
		if err != nil {
			return
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.User != nil {
			t.Fatalf("accepted %q as %v", raw, u)
		}
	})
}

// seen is a fake API recording the requests it serves.
type seen struct {
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

func (s *seen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.body = append(s.body, string(b))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer k1" {
		w.WriteHeader(401)
		w.Write([]byte(`{"error":{"code":"unauthenticated","message":"bad key"}}`))
		return
	}
	w.Write([]byte(`{"ok":true}`))
}

// session runs the connector's stdio-style server with key over in-memory
// pipes and returns a connected client.
func session(t *testing.T, api http.Handler, key string) *sdk.ClientSession {
	t.Helper()
	s, err := New(Config{}, Deps{API: api})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, st, key) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

// TestInstructions: the initialize instructions name the area of every tool
// offered (a new tool needs its area here and in the text), and a client
// receives them.
func TestInstructions(t *testing.T) {
	areas := map[string][]string{
		"Repos":                {"list_repos", "create_repo", "push_files", "get_repo_files", "deploy_repo"},
		"Shield":               {"get_service_config", "update_service_config"},
		"CDN":                  {"get_service_config", "update_service_config"},
		"security overview":    {"security_overview"},
		"to-do list":           {"needs_attention"},
		"Balance running low":  {"needs_attention"},
		"Agents":               {"list_agent_tools", "create_agent", "get_agent", "update_agent", "set_agent_status", "delete_agent", "run_agent"},
		"suggestions":          {"suggest_agents", "create_suggested_agents"},
		"pause or resume":      {"set_agent_status"},
		"full snapshot":        {"push_files"},
		"deploy a commit":      {"deploy_repo"},
		"read and change":      {"get_service_config", "update_service_config"},
		"Memory stores":        {"list_memory_stores", "list_memory_keys", "get_memory", "put_memory", "delete_memory"},
		"Storage buckets":      {"list_buckets", "list_objects", "get_object_url", "put_object"},
		"Sign-in pools":        {"list_auth_pools", "list_auth_users", "set_auth_user_disabled"},
		"E-mail":               {"send_email", "list_emails"},
		"allowed exactly when": {},
	}
	covered := map[string]bool{}
	for word, tools := range areas {
		if !strings.Contains(Instructions, word) {
			t.Errorf("instructions do not say %q", word)
		}
		for _, tl := range tools {
			covered[tl] = true
		}
	}
	for _, tl := range Tools() {
		if !covered[tl.Def.Name] {
			t.Errorf("tool %s has no area in the instructions", tl.Def.Name)
		}
	}
	cs := session(t, &seen{}, "k1")
	if got := cs.InitializeResult().Instructions; got != Instructions {
		t.Errorf("initialize instructions %q", got)
	}
}

// TestCallShape: every REST request of a tool carries the caller's key and
// the connector mark, and nothing else the assistant could choose.
func TestCallShape(t *testing.T) {
	api := &seen{}
	cs := session(t, api, "k1")
	cases := []struct {
		tool         string
		args         map[string]any
		method, path string
		body         string
	}{
		{"list_repos", nil, "GET", "/api/repos", ""},
		{"create_repo", map[string]any{"name": "a b"}, "POST", "/api/repos", `{"name":"a b"}`},
		{"get_repo_files", map[string]any{"repoId": "r1", "commit": 2, "path": "a b.txt"}, "GET", "/api/repos/r1/files?commit=2&path=a+b.txt", ""},
		{"deploy_repo", map[string]any{"repoId": "r1", "projectId": "p1"}, "POST", "/api/repos/r1/deploy", `{"projectId":"p1"}`},
		{"push_files", map[string]any{"repoId": "r1", "message": "m", "files": []any{map[string]any{"path": "a", "content": "b"}}},
			"POST", "/api/repos/r1/commits", `{"message":"m","files":[{"path":"a","content":"b"}]}`},
		{"get_service_config", map[string]any{"service": "shield"}, "GET", "/api/services/shield", ""},
		{"update_service_config", map[string]any{"service": "shield", "settings": map[string]any{"denyIps": []any{}}}, "PUT", "/api/services/shield", `{"denyIps":[]}`},
		{"get_service_config", map[string]any{"service": "cdn"}, "GET", "/api/services/cdn", ""},
		{"update_service_config", map[string]any{"service": "cdn", "settings": map[string]any{"cacheTtlSeconds": 0}}, "PUT", "/api/services/cdn", `{"cacheTtlSeconds":0}`},
		{"security_overview", nil, "GET", "/api/security/overview", ""},
		{"needs_attention", nil, "GET", "/api/attention", ""},
		{"list_memory_stores", map[string]any{"projectId": "p1"}, "GET", "/api/projects/p1/memory", ""},
		{"list_memory_keys", map[string]any{"storeId": "m1", "prefix": "a b", "limit": 5, "cursor": "c"}, "GET", "/api/memory/m1/keys?cursor=c&limit=5&prefix=a+b", ""},
		{"get_memory", map[string]any{"storeId": "m1", "keys": []any{"a"}}, "POST", "/api/memory/m1/bulk/get", `{"keys":["a"]}`},
		{"put_memory", map[string]any{"storeId": "m1", "key": "a", "value": "v", "ttlSeconds": 60}, "PUT", "/api/memory/m1/bulk", `{"entries":[{"key":"a","value":"v","ttlSeconds":60}]}`},
		{"delete_memory", map[string]any{"storeId": "m1", "keys": []any{"a", "b"}}, "POST", "/api/memory/m1/bulk/delete", `{"keys":["a","b"]}`},
		{"list_buckets", map[string]any{"projectId": "p1"}, "GET", "/api/projects/p1/buckets", ""},
		{"list_objects", map[string]any{"bucketId": "b1", "prefix": "d/", "delimiter": "/"}, "GET", "/api/buckets/b1/objects?delimiter=%2F&prefix=d%2F", ""},
		{"get_object_url", map[string]any{"bucketId": "b1", "key": "d/x", "expiresIn": 30}, "POST", "/api/buckets/b1/signed-urls", `{"key":"d/x","expiresIn":30}`},
		{"put_object", map[string]any{"bucketId": "b1", "key": "d/a b", "content": "aGk=", "base64": true}, "PUT", "/api/buckets/b1/objects/d%2Fa%20b", "hi"},
		{"list_auth_pools", map[string]any{"projectId": "p1"}, "GET", "/api/projects/p1/auth-pools", ""},
		{"list_auth_users", map[string]any{"poolId": "s1", "email": "ada"}, "GET", "/api/auth-pools/s1/users?email=ada", ""},
		{"set_auth_user_disabled", map[string]any{"poolId": "s1", "userId": "u1", "disabled": false}, "PATCH", "/api/auth-pools/s1/users/u1", `{"disabled":false}`},
		{"send_email", map[string]any{"projectId": "p1", "to": []any{"a@example.com"}, "subject": "s", "text": "t"}, "POST", "/api/projects/p1/emails", `{"to":["a@example.com"],"subject":"s","text":"t"}`},
		{"list_emails", map[string]any{"projectId": "p1", "state": "failed"}, "GET", "/api/projects/p1/emails?state=failed", ""},
	}
	for i, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
			if err != nil || res.IsError {
				t.Fatalf("%v %+v", err, res)
			}
			api.mu.Lock()
			defer api.mu.Unlock()
			if len(api.reqs) != i+1 {
				t.Fatalf("%d requests, want %d", len(api.reqs), i+1)
			}
			r, body := api.reqs[i], api.body[i]
			if r.Method != c.method || r.URL.RequestURI() != c.path {
				t.Errorf("%s %s, want %s %s", r.Method, r.URL.RequestURI(), c.method, c.path)
			}
			if body != c.body {
				t.Errorf("body %s, want %s", body, c.body)
			}
			if r.Header.Get(HeaderVia) != ViaConnector || r.Header.Get("Authorization") != "Bearer k1" || r.Header.Get("Cookie") != "" {
				t.Errorf("headers %v", r.Header)
			}
			var out map[string]any
			b, _ := json.Marshal(res.StructuredContent)
			if json.Unmarshal(b, &out); out["ok"] != true {
				t.Errorf("structured %s", b)
			}
		})
	}
}

// TestPathIDRefused: an id argument that is not an id (a path, a dot
// segment, a query) is refused before any REST request is made.
func TestPathIDRefused(t *testing.T) {
	api := &seen{}
	cs := session(t, api, "k1")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_repo_files", map[string]any{"repoId": "r/1"}},
		{"get_repo_files", map[string]any{"repoId": ".."}},
		{"list_memory_keys", map[string]any{"storeId": "m?x=1"}},
		{"list_objects", map[string]any{"bucketId": "b#1"}},
		{"list_memory_stores", map[string]any{"projectId": "p%2F1"}},
		{"list_auth_users", map[string]any{"poolId": " "}},
	} {
		t.Run(c.tool, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "is required: an id") {
				t.Fatalf("%s(%v) not refused: %+v", c.tool, c.args, res)
			}
		})
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.reqs) != 0 {
		t.Fatalf("%d REST requests made for refused ids", len(api.reqs))
	}
}

func TestStdioKeyRefused(t *testing.T) {
	cs := session(t, &seen{}, "wrong")
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "list_repos"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.HasPrefix(res.Content[0].(*sdk.TextContent).Text, "unauthenticated (HTTP 401)") {
		t.Fatalf("got %+v", res)
	}
}

func TestRemote(t *testing.T) {
	api := &seen{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	u, err := ParseControlPlaneURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	cs := session(t, Remote(u, srv.Client()), "k1")
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_repo_files", Arguments: map[string]any{"repoId": "r1", "path": "x"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	api.mu.Lock()
	r := api.reqs[0]
	api.mu.Unlock()
	if r.URL.RequestURI() != "/api/repos/r1/files?path=x" || r.Header.Get(HeaderVia) != ViaConnector {
		t.Errorf("remote request %s %v", r.URL, r.Header)
	}

	// A control plane that does not answer is a tool error, not a hang.
	srv.Close()
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "list_repos"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.HasPrefix(res.Content[0].(*sdk.TextContent).Text, "controlplane_unreachable (HTTP 502)") {
		t.Fatalf("got %+v", res.Content[0])
	}
}

func TestBadAnswer(t *testing.T) {
	cs := session(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) }), "k1")
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "list_repos"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Fatalf("a non-JSON answer passed as a result: %+v", res)
	}
}
