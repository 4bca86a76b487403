package repos_test

import (
	"encoding/base64"
	"fmt"
	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/repos"
)

func newRepo(t *testing.T, env *cptest.Env, name string) string {
	t.Helper()
	var out repos.RepoAnswer
	env.Owner.Must(http.StatusCreated, "POST", "/api/repos", map[string]any{"name": name, "description": "d"}).JSON(t, &out)
	return out.Repo.ID
}

func file(path, content string) map[string]any {
	return map[string]any{"path": path, "content": content}
}

func push(files ...map[string]any) map[string]any {
	return map[string]any{"message": "commit", "files": files}
}

func TestRepoLifecycle(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			id := newRepo(t, env, "site")
			env.Owner.Must(http.StatusConflict, "POST", "/api/repos", map[string]any{"name": "site"})

			png := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 3}
			var c1 repos.CommitAnswer
			env.Owner.Must(http.StatusCreated, "POST", "/api/repos/"+id+"/commits", push(
				file("index.html", "<h1>hi</h1>"),
				file(`docs\a.md`, "# a"),
				file(".env", "SECRET=1"),
				map[string]any{"path": "logo.png", "content": base64.StdEncoding.EncodeToString(png), "base64": true},
				file("big.txt", strings.Repeat("x", repos.MaxReadBytes+1)),
			)).JSON(t, &c1)
			if c1.Commit.Number != 1 || c1.Commit.Files != 5 || c1.Commit.StoredBytes == 0 {
				t.Fatalf("commit 1: %+v", c1.Commit)
			}
			// Unchanged files cost nothing in the next commit.
			var c2 repos.CommitAnswer
			env.Owner.Must(http.StatusCreated, "POST", "/api/repos/"+id+"/commits", push(
				file("index.html", "<h1>hi</h1>"), file("docs/a.md", "# a"), file("new.txt", "new"),
			)).JSON(t, &c2)
			if c2.Commit.Number != 2 || c2.Commit.StoredBytes != 3 {
				t.Fatalf("commit 2 stored %d bytes, want 3 (only new.txt): %+v", c2.Commit.StoredBytes, c2.Commit)
			}

			var list repos.RepoList
			env.Owner.Must(http.StatusOK, "GET", "/api/repos", nil).JSON(t, &list)
			if len(list.Repos) != 1 || list.Repos[0].Commits != 2 {
				t.Fatalf("list: %+v", list)
			}
			var d repos.Detail
			r := env.Owner.Must(http.StatusOK, "GET", "/api/repos/"+id, nil)
			r.JSON(t, &d)
			if len(d.Commits) != 2 || d.Commits[0].Number != 2 {
				t.Fatalf("history: %+v", d.Commits)
			}
			// One name for a commit's number in every repo answer: commit, as the
			// files answer and the deploy request say.
			var raw struct {
				Commits []map[string]any `json:"commits"`
			}
			r.JSON(t, &raw)
			if _, ok := raw.Commits[0]["number"]; ok || raw.Commits[0]["commit"] != float64(2) {
				t.Fatalf("history entry %v names the number other than commit", raw.Commits[0])
			}

			var tree repos.Tree
			env.Owner.Must(http.StatusOK, "GET", "/api/repos/"+id+"/files?commit=1", nil).JSON(t, &tree)
			got := map[string]repos.File{}
			for _, f := range tree.Files {
				got[f.Path] = f
			}
			if len(got) != 5 || !got["index.html"].Readable || got["logo.png"].Readable || !got["logo.png"].Binary ||
				got[".env"].Readable || got["big.txt"].Readable || got["big.txt"].Size != repos.MaxReadBytes+1 || got["logo.png"].Size != int64(len(png)) {
				t.Fatalf("tree at 1: %+v", tree.Files)
			}
			env.Owner.Must(http.StatusOK, "GET", "/api/repos/"+id+"/files", nil).JSON(t, &tree)
			if tree.Commit != 2 || len(tree.Files) != 3 {
				t.Fatalf("latest tree: %+v", tree)
			}

			var fc repos.FileContent
			env.Owner.Must(http.StatusOK, "GET", "/api/repos/"+id+"/files?commit=1&path=docs/a.md", nil).JSON(t, &fc)
			if fc.Content != "# a" || fc.Commit != 1 {
				t.Fatalf("file: %+v", fc)
			}
			reads := []struct {
				name, query string
				status      int
				code        string
			}{
				{"env file", "commit=1&path=.env", 403, "env_file_unreadable"},
				{"env file spelled differently", "commit=1&path=./.env", 403, "env_file_unreadable"},
				{"binary", "commit=1&path=logo.png", 422, "binary_file"},
				{"text over 512 KB", "commit=1&path=big.txt", 422, "file_too_large_to_read"},
				{"missing file", "path=nope.txt", 404, "file_not_found"},
				{"missing commit", "commit=9", 404, "commit_not_found"},
				{"bad commit", "commit=abc", 400, "invalid_request"},
				{"zero commit", "commit=0", 400, "invalid_request"},
				{"bad path", "path=../x", 400, "invalid_path"},
			}
			for _, tt := range reads {
				t.Run(tt.name, func(t *testing.T) {
					r := env.Owner.Do("GET", "/api/repos/"+id+"/files?"+tt.query, nil)
					if r.Status != tt.status || r.ErrorCode() != tt.code {
						t.Fatalf("status %d code %q, want %d %q: %s", r.Status, r.ErrorCode(), tt.status, tt.code, r.Body)
					}
				})
			}

			env.Owner.Must(http.StatusOK, "DELETE", "/api/repos/"+id, nil)
			env.Owner.Must(http.StatusNotFound, "GET", "/api/repos/"+id, nil)
		})
	}
}

func TestPushRefusals(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			id := newRepo(t, env, "r")
			many := make([]map[string]any, repos.MaxFilesPerPush+1)
			for i := range many {
				many[i] = file(fmt.Sprintf("f%d.txt", i), "x")
			}
			nine := strings.Repeat("a", 9<<20)
			tests := []struct {
				name   string
				body   any
				status int
				code   string
			}{
				{"no message", map[string]any{"files": []any{file("a", "b")}}, 400, "invalid_request"},
				{"no files", map[string]any{"message": "m", "files": []any{}}, 400, "no_files"},
				{"501 files", map[string]any{"message": "m", "files": many}, 400, "too_many_files"},
				{"file over 10 MB", push(file("big", strings.Repeat("a", repos.MaxFileBytes+1))), 413, "file_too_large"},
				{"base64 file over 10 MB", push(map[string]any{"path": "b", "base64": true,
					"content": base64.StdEncoding.EncodeToString(make([]byte, repos.MaxFileBytes+1))}), 413, "file_too_large"},
				{"push over 25 MB", push(file("a", nine), file("b", nine), file("c", nine)), 413, "push_too_large"},
				{"empty path", push(file("", "x")), 400, "invalid_path"},
				{"absolute path", push(file("/etc/x", "x")), 400, "invalid_path"},
				{"dot-dot", push(file("a/../../x", "x")), 400, "invalid_path"},
				{"NUL", push(file("a\x00b", "x")), 400, "invalid_path"},
				{"drive letter", push(file(`C:\x`, "x")), 400, "invalid_path"},
				{"same file twice", push(file("a/b", "x"), file(`a\b`, "y")), 400, "duplicate_path"},
				{"file and directory", push(file("a", "x"), file("a/b", "y")), 400, "path_conflict"},
				{"bad base64", push(map[string]any{"path": "x", "content": "!!", "base64": true}), 400, "invalid_base64"},
				{"unknown field", map[string]any{"message": "m", "files": []any{file("a", "b")}, "branch": "main"}, 400, "unknown_field"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					r := env.Owner.Do("POST", "/api/repos/"+id+"/commits", tt.body)
					if r.Status != tt.status || r.ErrorCode() != tt.code {
						t.Fatalf("status %d code %q, want %d %q: %.300s", r.Status, r.ErrorCode(), tt.status, tt.code, r.Body)
					}
				})
			}
			var d repos.Detail
			env.Owner.Must(http.StatusOK, "GET", "/api/repos/"+id, nil).JSON(t, &d)
			if d.Repo.Commits != 0 || len(d.Commits) != 0 {
				t.Fatalf("a refused push stored a commit: %+v", d)
			}
			if n := blobCount(t, env); n != 0 {
				t.Fatalf("refused pushes stored %d blobs", n)
			}
		})
	}
}

func blobCount(t *testing.T, env *cptest.Env) int {
	t.Helper()
	n, err := countFiles(filepath.Join(env.CP.Config().DataDir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRepoAccess(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			prj := env.CreateProject("p")
			id := newRepo(t, env, "r")
			viewer := env.Member("v@example.com", "viewer")
			projectKey := env.NewKey("full", prj)
			readOnly := env.NewKey("read_only", "")
			tests := []struct {
				name   string
				c      *cptest.Client
				method string
				path   string
				body   any
				status int
			}{
				{"viewer reads", viewer, "GET", "/api/repos/" + id, nil, 200},
				{"viewer cannot push", viewer, "POST", "/api/repos/" + id + "/commits", push(file("a", "b")), 403},
				{"project key refused", projectKey, "GET", "/api/repos", nil, 403},
				{"project key cannot create", projectKey, "POST", "/api/repos", map[string]any{"name": "x"}, 403},
				{"read-only key cannot delete", readOnly, "DELETE", "/api/repos/" + id, nil, 403},
				{"no key", env.Client(""), "GET", "/api/repos", nil, 401},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					tt.c.Must(tt.status, tt.method, tt.path, tt.body)
				})
			}
		})
	}
}

// TestMain stops the PostgreSQL server the engine subtests started.
func TestMain(m *testing.M) { pgtest.Main(m) }

// onEngine starts the control plane on engine e's metadata store (a SQLite
// path or a fresh PostgreSQL database).
func onEngine(t *testing.T, e pgtest.Engine) cptest.Options {
	return cptest.Options{Configure: func(c *controlplane.Config) { c.Store = e.DSN(t) }}
}
