package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/client"
	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/repos"
)

func TestNormalizeURL(t *testing.T) {
	tests := []struct{ in, want, bad string }{
		{in: "http://127.0.0.1:7070", want: "http://127.0.0.1:7070"},
		{in: "127.0.0.1:7070", want: "http://127.0.0.1:7070"},
		{in: "https://api.example.com/", want: "https://api.example.com"},
		{in: "https://api.example.com/api", want: "https://api.example.com"},
		{in: "https://example.com/platform/api/", want: "https://example.com/platform"},
		{in: " http://h:1 ", want: "http://h:1"},
		{in: "", bad: "empty"},
		{in: "ftp://h", bad: "not an API address"},
		{in: "http://user:pw@h", bad: "credentials"},
		{in: "http://h/?q=1", bad: "query"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := client.NormalizeURL(tt.in)
			if tt.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tt.bad) {
					t.Fatalf("NormalizeURL(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.bad)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("NormalizeURL(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestErrors: the API's error shape becomes an *Error with its status,
// code, message and other fields; any other answer keeps its status.
func TestErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		code   string
		msg    string
	}{
		{"api error", 413, `{"error":{"code":"push_too_large","message":"too big","limit":26214400}}`, "push_too_large", "too big"},
		{"proxy page", 502, "<html>bad gateway</html>", "http_502", "<html>bad gateway</html>"},
		{"empty body", 503, "", "http_503", "Service Unavailable"},
		{"json without error", 500, `{"x":1}`, "http_500", `{"x":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c, _ := client.New(srv.URL, "k")
			_, err := c.Workspace(context.Background())
			var e *client.Error
			if !errors.As(err, &e) || e.Status != tt.status || e.Code != tt.code || e.Message != tt.msg {
				t.Fatalf("err = %#v", err)
			}
			if !client.IsCode(err, tt.code) || client.StatusOf(err) != tt.status {
				t.Fatal("IsCode/StatusOf disagree with the error")
			}
			var limit int
			if tt.code == "push_too_large" && (!e.Field("limit", &limit) || limit != 26214400) {
				t.Fatalf("field limit = %d", limit)
			}
		})
	}
	c, _ := client.New("http://127.0.0.1:1", "k")
	var te *client.TransportError
	if _, err := c.Workspace(context.Background()); !errors.As(err, &te) {
		t.Fatalf("nothing listening: %v", err)
	}
}

func file(path, content string) client.File {
	h := sha256.Sum256([]byte(content))
	return client.File{Path: path, Size: int64(len(content)), SHA256: hex.EncodeToString(h[:]),
		Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(content)), nil }}
}

// TestPush: against a server that lacks the missing check the whole
// folder goes as one tar.gz; against one whose check is out of date the
// push is sent again with what the commit still lacks.
func TestPush(t *testing.T) {
	env := cptest.New(t)
	var repo repos.RepoAnswer
	env.Owner.Must(http.StatusCreated, "POST", "/api/repos", map[string]any{"name": "r"}).JSON(t, &repo)
	tests := []struct {
		name    string
		missing http.HandlerFunc // answers POST .../blobs/missing
		files   []client.File
		sent    int
	}{
		{"server without the check", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"code":"no_route","message":"no endpoint"}}`)
		}, []client.File{file("a.txt", "a"), file("b.txt", "b")}, 2},
		{"check out of date", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"missing":[]}`) // claims everything is held
		}, []client.File{file("a.txt", "a"), file("c.txt", "new c"), file("d.txt", "new c")}, 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.Handle("POST /api/repos/{id}/blobs/missing", tt.missing)
			mux.Handle("/", env.CP.Handler())
			srv := httptest.NewServer(mux)
			defer srv.Close()
			c, _ := client.New(srv.URL, cptest.OwnerKey)
			var progress []int64
			res, err := c.Push(context.Background(), repo.Repo.ID, tt.files, client.PushOptions{Message: "m",
				Progress: func(sent, total int64) { progress = append(progress, sent) }})
			if err != nil || res.Commit.Number != i+1 || res.Sent != tt.sent || res.Commit.Files != len(tt.files) {
				t.Fatalf("push: %+v %v", res, err)
			}
			if len(progress) == 0 || progress[len(progress)-1] != res.BodyBytes {
				t.Fatalf("progress %v, body %d bytes", progress, res.BodyBytes)
			}
		})
	}
}

// TestFollow reports each log line once, in order, and ends when the
// deployment leaves deploying.
func TestFollow(t *testing.T) {
	reads := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads++
		d := client.DeploymentDetail{Deployment: client.Deployment{ID: "dep_1", State: client.StateDeploying}}
		for i := range reads {
			d.Log = append(d.Log, client.LogLine{Line: string(rune('a' + i))})
		}
		if reads == 3 {
			d.Deployment.State = client.StateLive
		}
		json.NewEncoder(w).Encode(d)
	}))
	defer srv.Close()
	c, _ := client.New(srv.URL, "k")
	var lines []string
	d, err := c.Follow(context.Background(), "dep_1", client.FollowOptions{Every: time.Millisecond, Line: func(l client.LogLine) { lines = append(lines, l.Line) }})
	if err != nil || d.Deployment.State != client.StateLive || strings.Join(lines, "") != "abc" {
		t.Fatalf("Follow = %+v %v, lines %v", d.Deployment, err, lines)
	}
}

// TestTypesMatchServer holds every JSON field of the client's types to the
// server's own types: same name, same kind of JSON value.
func TestTypesMatchServer(t *testing.T) {
	pairs := []struct{ client, server any }{
		{client.WhoAmI{}, accounts.WhoAmI{}},
		{client.ProjectDetail{}, projects.Detail{}},
		{client.Variable{}, projects.Variable{}},
		{client.EnvAnswer{}, projects.EnvAnswer{}},
		{client.RepoDetail{}, repos.Detail{}},
		{client.Tree{}, repos.Tree{}},
		{client.DeploymentDetail{}, deploys.Detail{}},
		{client.Deployment{}, deploys.Deployment{}},
	}
	for _, p := range pairs {
		ct, st := reflect.TypeOf(p.client), reflect.TypeOf(p.server)
		t.Run(ct.Name(), func(t *testing.T) { matchType(t, ct.Name(), ct, st) })
	}
	if client.MaxFilesPerPush != repos.MaxFilesPerPush || client.MaxFileBytes != repos.MaxFileBytes || client.MaxPushBytes != repos.MaxPushBytes {
		t.Fatal("the client's push limits are not the server's")
	}
}

var timeType = reflect.TypeOf(time.Time{})

// jsonKind names the JSON value a Go type encodes to.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return "time"
	case t.Kind() == reflect.Interface:
		return "any"
	case t.Implements(reflect.TypeOf((*interface{ MarshalText() ([]byte, error) })(nil)).Elem()):
		return "string"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return "object"
}

func fields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func matchType(t *testing.T, at string, ct, st reflect.Type) {
	for ct.Kind() == reflect.Pointer {
		ct = ct.Elem()
	}
	for st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	ck, sk := jsonKind(ct), jsonKind(st)
	if sk == "any" || ck == "any" {
		return
	}
	if ck != sk {
		t.Errorf("%s: the client reads %s, the server writes %s", at, ck, sk)
		return
	}
	switch {
	case ck == "array" && ct.Kind() != reflect.Array:
		matchType(t, at+"[]", ct.Elem(), st.Elem())
	case ck == "object" && ct.Kind() == reflect.Struct && st.Kind() == reflect.Struct:
		sf := fields(st)
		for name, cf := range fields(ct) {
			s, ok := sf[name]
			if !ok {
				t.Errorf("%s.%s: the server has no such field", at, name)
				continue
			}
			matchType(t, at+"."+name, cf, s)
		}
	}
}
