package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProjectExportImport: one project exported from a serving
// installation (variables, a database, a vector collection, the repo it
// deploys from) and imported into another serving installation keeps its
// ids and answers there with the same data; a second import is refused
// before anything is written.
func TestProjectExportImport(t *testing.T) {
	src := startServe(t, testOptions(t, "--rtmp-addr", ""))
	var p struct {
		Project struct{ ID, Slug string } `json:"project"`
	}
	if st := src.api(t, "POST", "/api/projects", map[string]any{"name": "shop"}, &p); st != 201 {
		t.Fatalf("create project: %d", st)
	}
	pid := p.Project.ID
	if st := src.api(t, "POST", "/api/projects/"+pid+"/env", map[string]any{"key": "STRIPE_KEY", "value": "sk_test_123"}, nil); st != 201 {
		t.Fatalf("set variable: %d", st)
	}
	var d struct {
		Database struct{ ID, Status string } `json:"database"`
	}
	if st := src.api(t, "POST", "/api/projects/"+pid+"/databases", map[string]any{"name": "orders"}, &d); st != 201 {
		t.Fatalf("create database: %d", st)
	}
	for i := 0; d.Database.Status != "ready"; i++ {
		if i == 200 {
			t.Fatalf("database %s is %s", d.Database.ID, d.Database.Status)
		}
		time.Sleep(20 * time.Millisecond)
		src.api(t, "GET", "/api/databases/"+d.Database.ID, nil, &d)
	}
	if st := src.api(t, "POST", "/api/databases/"+d.Database.ID, map[string]any{"batch": []map[string]any{
		{"sql": "CREATE TABLE orders (n INTEGER, item TEXT)"},
		{"sql": "INSERT INTO orders VALUES (1, 'tea'), (2, 'cake')"},
	}}, nil); st != 200 {
		t.Fatalf("fill database: %d", st)
	}
	var c struct {
		Collection struct{ ID string } `json:"collection"`
	}
	if st := src.api(t, "POST", "/api/projects/"+pid+"/vectors", map[string]any{"name": "docs", "dimensions": 384, "metric": "cosine"}, &c); st != 201 {
		t.Fatalf("create collection: %d", st)
	}
	if st := src.api(t, "POST", "/api/vectors/"+c.Collection.ID+"/upsert", map[string]any{"vectors": []map[string]any{
		{"id": "a", "values": unit(384, 0)}, {"id": "b", "values": unit(384, 1)},
	}}, nil); st != 202 {
		t.Fatalf("upsert: %d", st)
	}
	var r struct {
		Repo struct{ ID string } `json:"repo"`
	}
	if st := src.api(t, "POST", "/api/repos", map[string]any{"name": "shop-src"}, &r); st != 201 {
		t.Fatalf("create repo: %d", st)
	}
	if st := src.api(t, "POST", "/api/repos/"+r.Repo.ID+"/commits", map[string]any{"message": "first", "files": []map[string]any{
		{"path": "index.html", "content": "<h1>shop</h1>"}, {"path": "platform.json", "content": `{"kind":"static"}`},
	}}, nil); st != 201 {
		t.Fatalf("push: %d", st)
	}
	if st := src.api(t, "PATCH", "/api/projects/"+pid, map[string]any{"repoUrl": "http://" + src.o.apiAddr + "/api/repos/" + r.Repo.ID}, nil); st != 200 {
		t.Fatalf("link repo: %d", st)
	}

	archive := filepath.Join(t.TempDir(), "shop.tar.gz")
	var out, errOut bytes.Buffer
	if code := runProject([]string{"export", pid, archive, "--data", src.o.data}, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "1 variable(s), 1 database(s), 1 vector collection(s), 1 repo(s)") {
		t.Fatalf("export: %d %q %q", code, out.String(), errOut.String())
	}

	dst := startServe(t, testOptions(t, "--rtmp-addr", ""))
	out.Reset()
	if code := runProject([]string{"import", "--in", archive, "--data", dst.o.data}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "imported project "+pid) {
		t.Fatalf("import: %d %q %q", code, out.String(), errOut.String())
	}
	var env struct {
		Variables []struct{ Key, Value string } `json:"variables"`
	}
	if st := dst.api(t, "GET", "/api/projects/"+pid+"/env", nil, &env); st != 200 || len(env.Variables) != 1 || env.Variables[0].Value != "sk_test_123" {
		t.Fatalf("variables after import: %d %+v", st, env)
	}
	var rows struct {
		Results []map[string]any `json:"results"`
	}
	if st := dst.api(t, "POST", "/api/databases/"+d.Database.ID, map[string]any{"sql": "SELECT item FROM orders ORDER BY n"}, &rows); st != 200 ||
		len(rows.Results) != 2 || rows.Results[1]["item"] != "cake" {
		t.Fatalf("database after import: %d %+v", st, rows)
	}
	var q struct {
		Matches []struct{ ID string } `json:"matches"`
	}
	if st := dst.api(t, "POST", "/api/vectors/"+c.Collection.ID+"/query", map[string]any{"vector": unit(384, 1), "topK": 1}, &q); st != 200 ||
		len(q.Matches) != 1 || q.Matches[0].ID != "b" {
		t.Fatalf("vectors after import: %d %+v", st, q)
	}
	var file struct {
		Content string `json:"content"`
	}
	if st := dst.api(t, "GET", "/api/repos/"+r.Repo.ID+"/files?commit=1&path=index.html", nil, &file); st != 200 || file.Content != "<h1>shop</h1>" {
		t.Fatalf("repo after import: %d %+v", st, file)
	}

	whole := filepath.Join(t.TempDir(), "whole.tar.gz")
	if code := runBackup([]string{"--data", src.o.data, whole}, &out, &errOut); code != 0 {
		t.Fatalf("backup: %d %q", code, errOut.String())
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"import twice", []string{"import", archive, "--data", dst.o.data}, 1, "already has it: project " + pid},
		{"unknown project", []string{"export", "prj_nope", filepath.Join(t.TempDir(), "x.tgz"), "--data", src.o.data}, 1, "no such project prj_nope"},
		{"no project named", []string{"export", "--data", src.o.data}, 2, "name the project"},
		{"unknown verb", []string{"copy"}, 2, "unknown command"},
		{"unknown workspace", []string{"import", archive, "--data", dst.o.data, "--workspace", "ws_nope"}, 1, "no workspace ws_nope"},
		{"missing archive", []string{"import", "--data", dst.o.data, filepath.Join(t.TempDir(), "missing.tgz")}, 1, "no such file"},
		{"an installation archive", []string{"import", "--data", dst.o.data, whole}, 1, `it is a "installation" archive, want a "project" one`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := runProject(tc.args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.msg) {
				t.Fatalf("%d %q %q, want %d and %q", code, out.String(), errOut.String(), tc.code, tc.msg)
			}
		})
	}
}

// unit is the n-dimensional unit vector along axis i.
func unit(n, i int) []float64 {
	v := make([]float64, n)
	v[i] = 1
	return v
}
