package main

import (
	"bytes"

	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBackupRestoreServes: a backup taken while the platform serves and
// a client writes to a customer database, restored into a fresh data
// directory (as on another machine) and served, answers with the same
// owner key and holds the workspace, a sealed variable, a bucket object
// and every row acknowledged before the backup began.
func TestBackupRestoreServes(t *testing.T) {
	o := testOptions(t, "--rtmp-addr", "")
	s := startServe(t, o)
	var p struct {
		Project struct{ ID string } `json:"project"`
	}
	if st := s.api(t, "POST", "/api/projects", map[string]any{"name": "kept"}, &p); st != 201 {
		t.Fatalf("create project: %d", st)
	}
	if st := s.api(t, "POST", "/api/projects/"+p.Project.ID+"/env", map[string]any{"key": "API_TOKEN", "value": "sealed-value-42"}, nil); st != 201 {
		t.Fatalf("set variable: %d", st)
	}
	var b struct {
		Bucket struct{ ID string } `json:"bucket"`
	}
	if st := s.api(t, "POST", "/api/projects/"+p.Project.ID+"/buckets", map[string]any{"name": "files"}, &b); st != 201 {
		t.Fatalf("create bucket: %d", st)
	}
	if st := s.raw(t, "PUT", "/api/buckets/"+b.Bucket.ID+"/objects/hello.txt", "hello, restored world", nil); st != 200 && st != 201 {
		t.Fatalf("put object: %d", st)
	}
	var d struct {
		Database struct{ ID, Status string } `json:"database"`
	}
	if st := s.api(t, "POST", "/api/projects/"+p.Project.ID+"/databases", map[string]any{"name": "orders"}, &d); st != 201 {
		t.Fatalf("create database: %d", st)
	}
	for i := 0; d.Database.Status != "ready"; i++ {
		if i == 200 {
			t.Fatalf("database %s is %s", d.Database.ID, d.Database.Status)
		}
		time.Sleep(20 * time.Millisecond)
		s.api(t, "GET", "/api/databases/"+d.Database.ID, nil, &d)
	}
	query := func(s *serving, sql string, params ...any) ([]map[string]any, int) {
		var a struct {
			Results []map[string]any `json:"results"`
		}
		st := s.api(t, "POST", "/api/databases/"+d.Database.ID, map[string]any{"sql": sql, "params": params}, &a)
		return a.Results, st
	}
	if _, st := query(s, `CREATE TABLE orders (n INTEGER PRIMARY KEY)`); st != 200 {
		t.Fatalf("create table: %d", st)
	}

	// A client writes one row at a time; acked is the last one answered.
	var acked atomic.Int64
	acked.Store(-1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := int64(0); ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, st := query(s, `INSERT INTO orders(n) VALUES (?)`, n); st != 200 {
				t.Errorf("insert %d: %d", n, st)
				return
			}
			acked.Store(n)
		}
	}()
	for acked.Load() < 20 {
		time.Sleep(5 * time.Millisecond)
	}
	before := acked.Load()
	archive := filepath.Join(t.TempDir(), "platform.tar.gz")
	var out, errOut bytes.Buffer
	if code := runBackup([]string{"--data", o.data, "--out", archive}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "backed up ") {
		t.Fatalf("backup: %d %q %q", code, out.String(), errOut.String())
	}
	for acked.Load() < before+5 { // writes went on during and after it
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	s.stop()

	restored := filepath.Join(t.TempDir(), "elsewhere", "data")
	out.Reset()
	if code := runRestore([]string{archive, "--data", restored}, nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), "platform serve --data "+restored) {
		t.Fatalf("restore: %d %q %q", code, out.String(), errOut.String())
	}
	r := startServe(t, testOptions(t, "--data", restored, "--rtmp-addr", ""))
	if !strings.Contains(r.out.String(), "existing data directory") {
		t.Fatalf("the restored copy started as a new installation: %q", r.out.String())
	}
	if st := r.api(t, "GET", "/api/workspace", nil, nil); st != 200 {
		t.Fatalf("the owner key on the restored copy: %d", st)
	}
	var env struct {
		Variables []struct{ Key, Value string } `json:"variables"`
	}
	if st := r.api(t, "GET", "/api/projects/"+p.Project.ID+"/env", nil, &env); st != 200 || len(env.Variables) != 1 || env.Variables[0].Value != "sealed-value-42" {
		t.Fatalf("variables on the restored copy: %d %+v", st, env)
	}
	var body bytes.Buffer
	if st := r.raw(t, "GET", "/api/buckets/"+b.Bucket.ID+"/objects/hello.txt", "", &body); st != 200 || body.String() != "hello, restored world" {
		t.Fatalf("object on the restored copy: %d %q", st, body.String())
	}
	rows, st := query(r, `SELECT count(*) AS c, max(n) AS m FROM orders`)
	if st != 200 || len(rows) != 1 {
		t.Fatalf("query on the restored copy: %d %v", st, rows)
	}
	c, m := rows[0]["c"].(float64), rows[0]["m"].(float64)
	if int64(m) < before || c != m+1 {
		t.Fatalf("the restored database has %v rows up to %v; %d were acknowledged before the backup began", c, m, before+1)
	}
	t.Logf("%d rows acknowledged before the backup began, %v restored", before+1, c)
	if _, st := query(r, `INSERT INTO orders(n) VALUES (?)`, int64(m)+1); st != 200 {
		t.Fatalf("writing to the restored copy: %d", st)
	}
}

// TestBackupCommandUsage: the commands' refusals and exit codes.
func TestBackupCommandUsage(t *testing.T) {
	data := t.TempDir()
	notEmpty := t.TempDir()
	os.WriteFile(filepath.Join(notEmpty, "x"), nil, 0o600)
	garbage := filepath.Join(t.TempDir(), "garbage.tar.gz")
	os.WriteFile(garbage, []byte("not an archive"), 0o600)
	for _, tc := range []struct {
		name string
		run  func(stdout, stderr io.Writer) int
		code int
		msg  string
	}{
		{"backup: no file", func(o, e io.Writer) int { return runBackup([]string{"--data", data}, o, e) }, 2, "name the archive"},
		{"backup: two files", func(o, e io.Writer) int { return runBackup([]string{"a", "b"}, o, e) }, 2, "one archive"},
		{"backup: unknown flag", func(o, e io.Writer) int { return runBackup([]string{"--force", "a"}, o, e) }, 2, "flag provided but not defined"},
		{"backup: no database", func(o, e io.Writer) int {
			return runBackup([]string{"--data", data, filepath.Join(t.TempDir(), "b.tgz")}, o, e)
		}, 1, "no control-plane database"},
		{"backup: inside the data directory", func(o, e io.Writer) int {
			return runBackup([]string{"--data", data, "--out", filepath.Join(data, "b.tgz")}, o, e)
		}, 1, "inside the data directory"},
		{"backup: help", func(o, e io.Writer) int { return runBackup([]string{"-h"}, o, e) }, 0, "usage: platform backup"},
		{"restore: no file", func(o, e io.Writer) int { return runRestore([]string{"--data", data}, nil, o, e) }, 2, "name the archive"},
		{"restore: missing file", func(o, e io.Writer) int { return runRestore([]string{"--in", "/nonexistent.tgz"}, nil, o, e) }, 1, "no such file"},
		{"restore: not an archive", func(o, e io.Writer) int {
			return runRestore([]string{garbage, "--data", filepath.Join(t.TempDir(), "new")}, nil, o, e)
		}, 1, "not a platform backup archive"},
		{"restore: target not empty", func(o, e io.Writer) int { return runRestore([]string{garbage, "--data", notEmpty}, nil, o, e) }, 1, "not empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := tc.run(&out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.msg) {
				t.Fatalf("%d %q %q, want %d and %q", code, out.String(), errOut.String(), tc.code, tc.msg)
			}
		})
	}
}

// raw calls the served API with a plain body; the answer goes to into
// (when not nil).
func (s *serving) raw(t *testing.T, method, path, body string, into io.Writer) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.o.apiAddr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.o.bootstrapKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if into == nil {
		into = io.Discard
	}
	io.Copy(into, resp.Body)
	return resp.StatusCode
}
