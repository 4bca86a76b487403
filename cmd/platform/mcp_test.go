package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/mcp"
)

// syncBuffer is stderr shared by runMCP's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// stdioSession runs `platform mcp` on in-process pipes against url with key
// and connects the SDK's client to it; the returned func closes the
// client's end and returns the exit code.
func stdioSession(t *testing.T, url, key string) (*sdk.ClientSession, func() int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &syncBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- runMCP([]string{"--controlplane", url, "--key", key}, inR, outW, stderr)
		outW.Close()
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "desktop", Version: "1"}, nil).
		Connect(context.Background(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr %s)", err, stderr)
	}
	return cs, func() int {
		cs.Close()
		c := <-code
		if c != 0 {
			t.Logf("stderr: %s", stderr)
		}
		return c
	}
}

func TestMCPStdio(t *testing.T) {
	e := cptest.New(t)
	cs, stop := stdioSession(t, e.Server.URL, cptest.OwnerKey)
	ctx := context.Background()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "push_files") || len(names) != len(mcp.Tools()) {
		t.Fatalf("tools %v", names)
	}

	callOK := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("%s: %s", name, res.Content[0].(*sdk.TextContent).Text)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var m map[string]any
		json.Unmarshal(b, &m)
		return m
	}
	repo := callOK("create_repo", map[string]any{"name": "desk"})["repo"].(map[string]any)
	id := repo["id"].(string)
	callOK("push_files", map[string]any{"repoId": id, "message": "m", "files": []any{map[string]any{"path": "index.html", "content": "hi"}}})
	for _, c := range []struct {
		tool string
		args map[string]any
		path string
	}{
		{"list_repos", nil, "/api/repos"},
		{"get_repo_files", map[string]any{"repoId": id}, "/api/repos/" + id + "/files"},
		{"get_service_config", map[string]any{"service": "shield"}, "/api/services/shield"},
		{"security_overview", nil, "/api/security/overview"},
	} {
		t.Run(c.tool, func(t *testing.T) {
			var want map[string]any
			e.Owner.Must(200, "GET", c.path, nil).JSON(t, &want)
			if got := callOK(c.tool, c.args); !reflect.DeepEqual(got, want) {
				t.Errorf("tool %v\nREST %v", got, want)
			}
		})
	}

	// A read-only key over stdio is refused exactly as over REST.
	ro := e.NewKey("read_only", "")
	cs2, stop2 := stdioSession(t, e.Server.URL, ro.Key)
	res, err := cs2.CallTool(ctx, &sdk.CallToolParams{Name: "push_files", Arguments: map[string]any{"repoId": id, "message": "m",
		"files": []any{map[string]any{"path": "a", "content": "b"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.HasPrefix(res.Content[0].(*sdk.TextContent).Text, "read_only_key (HTTP 403)") {
		t.Errorf("read-only push: %+v", res.Content[0])
	}
	if c := stop2(); c != 0 {
		t.Errorf("exit %d", c)
	}
	if c := stop(); c != 0 {
		t.Errorf("exit %d", c)
	}
}

func TestMCPUsage(t *testing.T) {
	t.Setenv("PLATFORM_CONTROLPLANE", "")
	t.Setenv("PLATFORM_API_KEY", "")
	cases := []struct {
		name string
		args []string
		code int
		say  string
	}{
		{"help", []string{"-h"}, 0, "usage: platform mcp"},
		{"no control plane", []string{"--key", "k"}, 2, "--controlplane is required"},
		{"no key", []string{"--controlplane", "http://127.0.0.1:7070"}, 2, "--key (or PLATFORM_API_KEY) is required"},
		{"bad url", []string{"--controlplane", "127.0.0.1:7070", "--key", "k"}, 2, "http:// or https://"},
		{"extra argument", []string{"--controlplane", "http://h", "--key", "k", "x"}, 2, "unexpected argument"},
		{"unknown flag", []string{"--nope"}, 2, "flag provided but not defined"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if got := runMCP(c.args, strings.NewReader(""), io.Discard, &stderr); got != c.code || !strings.Contains(stderr.String(), c.say) {
				t.Errorf("exit %d, stderr %q; want %d and %q", got, stderr.String(), c.code, c.say)
			}
		})
	}
}
