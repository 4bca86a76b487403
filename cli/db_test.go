package cli_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDB queries a project database, runs statements through the shell
// and exports it, as a user would.
func TestDB(t *testing.T) {
	h := newHarness(t)
	site := filepath.Join(t.TempDir(), "data-app")
	write(t, site, map[string]string{"index.html": "x"})
	h.login()
	if r := h.run(site, "", "link", "--create"); r.code != 0 {
		t.Fatalf("link: %+v", r)
	}
	if r := h.run(site, "", "db", "query", "SELECT 1"); r.code != 1 || !strings.Contains(r.stderr, "has no database yet") {
		t.Fatalf("db query without a database: %+v", r)
	}
	var projects struct {
		Projects []struct{ ID, Name string } `json:"projects"`
	}
	h.env.Owner.Must(http.StatusOK, "GET", "/api/projects", nil).JSON(t, &projects)
	project := ""
	for _, p := range projects.Projects {
		if p.Name == "data-app" {
			project = p.ID
		}
	}
	for _, name := range []string{"main", "second"} {
		h.env.Owner.Must(http.StatusCreated, "POST", "/api/projects/"+project+"/databases", map[string]any{"name": name})
	}
	if r := h.run(site, "", "db", "query", "SELECT 1"); r.code != 1 || !strings.Contains(r.stderr, "has 2 databases (") || !strings.Contains(r.stderr, "name one with --db") {
		t.Fatalf("db query with two databases: %+v", r)
	}
	for _, tc := range []struct {
		name string
		args []string
		out  []string
	}{
		{"create", []string{"db", "query", "--db", "main", "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, note TEXT)"}, nil},
		{"insert with params", []string{"db", "query", "--db", "main", "INSERT INTO users (name, note) VALUES (?, ?)", "Ada", "first"}, nil},
		{"select as a table", []string{"db", "query", "--db", "main", "SELECT id, name, note FROM users"}, []string{"id  name  note", "1   Ada   first"}},
		{"json", []string{"db", "query", "--db", "main", "--json", "SELECT name FROM users"}, []string{`"name": "Ada"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.run(site, "", tc.args...)
			if r.code != 0 {
				t.Fatalf("%v: %+v", tc.args, r)
			}
			for _, w := range tc.out {
				if !strings.Contains(r.stdout, w) {
					t.Fatalf("%v printed %q, want %q", tc.args, r.stdout, w)
				}
			}
		})
	}
	if r := h.run(site, "", "db", "query", "--db", "main", "SELEC nonsense"); r.code != 1 || !strings.Contains(r.stderr, "400") {
		t.Fatalf("bad SQL: %+v", r)
	}
	r := h.run(site, "INSERT INTO users (name) VALUES ('Bob');\nSELECT name\n  FROM users ORDER BY id;\n.tables\nSELECT broken;\n.quit\nSELECT 'never';\n", "db", "shell", "--db", "main")
	if r.code != 0 || !strings.Contains(r.stdout, "Ada") || !strings.Contains(r.stdout, "Bob") || !strings.Contains(r.stdout, "users") ||
		!strings.Contains(r.stderr, "error:") || strings.Contains(r.stdout, "never") {
		t.Fatalf("db shell: %+v", r)
	}
	if r := h.run(site, "", "db", "export", "--db", "main"); r.code != 0 || !strings.Contains(r.stderr, "exported main") {
		t.Fatalf("db export: %+v", r)
	}
	dump, err := os.ReadFile(filepath.Join(site, "main.sql"))
	if err != nil || !strings.Contains(string(dump), "CREATE TABLE") || !strings.Contains(string(dump), "Bob") {
		t.Fatalf("main.sql: %q %v", dump, err)
	}
	if r := h.run(site, "", "db", "export", "--db", "main", "-o", "-"); r.code != 0 || !strings.Contains(r.stdout, "CREATE TABLE") {
		t.Fatalf("db export -o -: %+v", r)
	}
}

// TestCompletion: each script names every user command and parses in its
// shell (when the shell is installed).
func TestCompletion(t *testing.T) {
	h := newHarness(t)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			r := h.run(t.TempDir(), "", "completion", shell)
			if r.code != 0 {
				t.Fatalf("%+v", r)
			}
			for _, name := range []string{"deploy", "logs", "db", "completion"} {
				if !strings.Contains(r.stdout, name) {
					t.Fatalf("the %s script lacks %s", shell, name)
				}
			}
			bin, err := exec.LookPath(shell)
			if err != nil {
				t.Logf("cli: %s not installed: the script's syntax is not checked", shell)
				return
			}
			f := filepath.Join(t.TempDir(), "completion")
			if err := os.WriteFile(f, []byte(r.stdout), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bin, "-n", f).CombinedOutput(); err != nil {
				t.Fatalf("%s -n: %v\n%s", shell, err, out)
			}
		})
	}
}
