package cli_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcplatform/platform/cli"
	"github.com/svcplatform/platform/client"
	"github.com/svcplatform/platform/controlplane/cptest"
)

// TestLogin: login checks the key against the API before storing it (mode
// 0600), asks for what the flags do not give, and stores nothing for a
// refused key or an API it cannot reach.
func TestLogin(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stored bool
		want   string // substring of stdout+stderr
	}{
		{"flags", "", []string{"--api", h.api, "--key", cptest.OwnerKey}, 0, true, "Logged in to workspace Test"},
		{"asked on standard input", h.api + "\n" + cptest.OwnerKey + "\n", nil, 0, true, "as owner"},
		{"address without scheme, with /api", "", []string{"--api", strings.TrimPrefix(h.api, "http://") + "/api/", "--key", cptest.OwnerKey}, 0, true, "Logged in"},
		{"refused key", "", []string{"--api", h.api, "--key", "wrong-key-0123456789"}, 1, false, "run platform login with a valid key"},
		{"nothing listening", "", []string{"--api", "http://127.0.0.1:1", "--key", cptest.OwnerKey}, 1, false, "cannot reach the API"},
		{"no key on input", h.api + "\n", nil, 1, false, "no answer on standard input"},
		{"not an address", "", []string{"--api", "ftp://x", "--key", "k"}, 1, false, "not an API address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.RemoveAll(h.config)
			r := h.run(t.TempDir(), tt.stdin, append([]string{"login"}, tt.args...)...)
			if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.want) {
				t.Fatalf("exit %d, want %d with %q: %+v", r.code, tt.code, tt.want, r)
			}
			info, err := os.Stat(filepath.Join(h.config, cli.CredentialsFile))
			if (err == nil) != tt.stored {
				t.Fatalf("stored = %v, want %v", err == nil, tt.stored)
			}
			if tt.stored && info.Mode().Perm() != 0o600 {
				t.Fatalf("credentials mode %v, want 0600", info.Mode().Perm())
			}
		})
	}
	var c cli.Credentials
	data, _ := os.ReadFile(filepath.Join(h.config, cli.CredentialsFile))
	if json.Unmarshal(data, &c); c.Key != "" {
		t.Fatalf("the refused logins left %+v", c)
	}
}

// TestDeployFlow is the path of a user: login, link --create, deploy a
// folder with a binary file and ignored files, the site served through
// the edge; a second deploy sends only what changed; rollback; env set and
// pull; open.
func TestDeployFlow(t *testing.T) {
	h := newHarness(t)
	site := filepath.Join(t.TempDir(), "my-site")
	png := "\x89PNG\r\n\x1a\n\x00\x01\x02binary\xff"
	write(t, site, map[string]string{
		"index.html":           "<h1>v1</h1>",
		"logo.png":             png,
		"about/index.html":     "about",
		".gitignore":           "secret.txt\nbuild/\n*.log\n",
		"secret.txt":           "not for the web",
		"build/out.js":         "generated",
		"debug.log":            "log",
		".platformignore":      "drafts/\n",
		"drafts/wip.html":      "draft",
		".env":                 "TOKEN=abc",
		"keys/deploy.pem":      "-----BEGIN PRIVATE KEY-----",
		".well-known/security": "contact: me",
	})

	if r := h.run(site, "", "deploy"); r.code != 1 || !strings.Contains(r.stderr, "not logged in: run platform login") {
		t.Fatalf("deploy before login: %+v", r)
	}
	h.login()
	if r := h.run(site, "", "deploy"); r.code != 1 || !strings.Contains(r.stderr, "not linked to a project: run platform link") {
		t.Fatalf("deploy before link: %+v", r)
	}
	if r := h.run(site, "", "link"); r.code != 1 || !strings.Contains(r.stderr, "run platform link --create") {
		t.Fatalf("link of a missing project: %+v", r)
	}
	r := h.run(site, "", "link", "--create")
	if r.code != 0 || !strings.Contains(r.stdout, "Linked") {
		t.Fatalf("link --create: %+v", r)
	}
	var link cli.Link
	data, err := os.ReadFile(filepath.Join(site, cli.LinkDir, cli.LinkFile))
	if err != nil || json.Unmarshal(data, &link) != nil || link.ProjectID == "" || link.RepoID == "" {
		t.Fatalf("link file %s: %v", data, err)
	}

	// First deploy, plain: the address alone on stdout.
	r = h.runEnv(site, "", func(e *cli.Env) { e.StderrTTY = true }, "deploy")
	if r.code != 0 {
		t.Fatalf("deploy: %+v", r)
	}
	url := strings.TrimSpace(r.stdout)
	if url != "https://my-site.apps.test" {
		t.Fatalf("deploy printed %q", r.stdout)
	}
	for _, want := range []string{"uploading [", "100%", "left out 4 file(s) or folder(s)", "environment files are never stored or deployed (set the values with platform env set): .env", "keys/deploy.pem (private key", "live at"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("deploy's stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	served := []struct {
		path   string
		status int
		body   string
	}{
		{"/", 200, "<h1>v1</h1>"},
		{"/logo.png", 200, png},
		{"/about/", 200, "about"},
		{"/.well-known/security", 200, "contact: me"},
		{"/secret.txt", 404, ""},
		{"/build/out.js", 404, ""},
		{"/drafts/wip.html", 404, ""},
		{"/debug.log", 404, ""},
		{"/keys/deploy.pem", 404, ""},
	}
	for _, tt := range served {
		t.Run("served "+tt.path, func(t *testing.T) {
			status, body := h.get(url + tt.path)
			if status != tt.status || (tt.body != "" && string(body) != tt.body) {
				t.Fatalf("GET %s = %d %q, want %d %q", tt.path, status, body, tt.status, tt.body)
			}
		})
	}
	var tree client.Tree
	h.env.Owner.Must(http.StatusOK, "GET", "/api/repos/"+link.RepoID+"/files", nil).JSON(t, &tree)
	var paths []string
	for _, f := range tree.Files {
		paths = append(paths, f.Path)
	}
	if got := strings.Join(paths, ","); got != ".well-known/security,about/index.html,index.html,logo.png" {
		t.Fatalf("commit 1 holds %s", got)
	}

	// Second deploy with --json: one file changed is the one file sent.
	write(t, site, map[string]string{"index.html": "<h1>v2</h1>"})
	r = h.run(site, "", "deploy", "--json", "--message", "second")
	d := deployResult(t, r)
	if r.code != 0 || d.URL != url || d.Commit != 2 || d.State != "live" || d.DeploymentID == "" || d.Sent != 1 || d.Reused != 3 || d.Rollback {
		t.Fatalf("deploy --json: %+v (stderr %s)", d, r.stderr)
	}
	if _, body := h.get(url + "/"); string(body) != "<h1>v2</h1>" {
		t.Fatalf("after the second deploy / is %q", body)
	}

	// Rollback to what served before, then forward to a named commit.
	rollbacks := []struct {
		args   []string
		commit int
		body   string
	}{
		{nil, 1, "<h1>v1</h1>"},
		{[]string{"2"}, 2, "<h1>v2</h1>"},
	}
	for _, tt := range rollbacks {
		r := h.run(site, "", append([]string{"rollback", "--json"}, tt.args...)...)
		d := deployResult(t, r)
		if r.code != 0 || d.Commit != tt.commit || d.State != "live" {
			t.Fatalf("rollback %v: %+v %s", tt.args, d, r.stderr)
		}
		if _, body := h.get(url + "/"); string(body) != tt.body {
			t.Fatalf("after rollback %v / is %q", tt.args, body)
		}
	}
	if !h.run(site, "", "rollback", "--json").stdoutHas(t, `"rollback": true`) {
		t.Fatal("a rollback to an older commit is not marked rollback")
	}

	// Variables: set (argument, KEY=VALUE, standard input), list without
	// values, pull to a 0600 .env, remove.
	envs := []struct {
		args  []string
		stdin string
		code  int
		want  string
	}{
		{[]string{"set", "API_TOKEN", `a "quoted" value`}, "", 0, "Added API_TOKEN"},
		{[]string{"set", "MODE=production"}, "", 0, "Added MODE"},
		{[]string{"set", "FROM_STDIN"}, "multi\nline\n", 0, "Added FROM_STDIN"},
		{[]string{"set", "MODE", "staging"}, "", 0, "Replaced MODE"},
		{[]string{"set", "1BAD", "x"}, "", 1, "400"},
		{[]string{"ls"}, "", 0, "API_TOKEN"},
		{[]string{"rm", "NOPE"}, "", 1, "no variable NOPE"},
		{[]string{"pull"}, "", 0, "Wrote 3 variables"},
		{[]string{"pull"}, "", 1, "pass --force"},
		{[]string{"pull", "--force"}, "", 0, "Wrote 3 variables"},
		{[]string{"frobnicate"}, "", 2, "not an env command"},
	}
	work := filepath.Join(site, "about") // a subfolder finds the link above it
	for _, tt := range envs {
		r := h.run(work, tt.stdin, append([]string{"env"}, tt.args...)...)
		if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.want) {
			t.Fatalf("env %v: exit %d, want %d with %q: %+v", tt.args, r.code, tt.code, tt.want, r)
		}
		if tt.args[0] == "ls" && strings.Contains(r.stdout, "quoted") {
			t.Fatalf("env ls shows a value: %s", r.stdout)
		}
	}
	dotenv := filepath.Join(work, ".env")
	info, err := os.Stat(dotenv)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf(".env: %v %v", info, err)
	}
	data, _ = os.ReadFile(dotenv)
	for _, want := range []string{`API_TOKEN="a \"quoted\" value"`, `MODE="staging"`, `FROM_STDIN="multi\nline"`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf(".env lacks %s:\n%s", want, data)
		}
	}
	if r := h.run(work, "", "env", "rm", "MODE"); r.code != 0 {
		t.Fatalf("env rm: %+v", r)
	}
	if r := h.run(site, "", "open"); r.code != 0 || strings.TrimSpace(r.stdout) != url {
		t.Fatalf("open: %+v", r)
	}
	// --project instead of a link, from anywhere.
	if r := h.run(t.TempDir(), "", "open", "--print", "--project", "my-site"); r.code != 0 || strings.TrimSpace(r.stdout) != url {
		t.Fatalf("open --project: %+v", r)
	}
}

func (r result) stdoutHas(t *testing.T, s string) bool {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	return strings.Contains(r.stdout, s)
}

// TestDeployRefusals: a folder past a push limit is refused before
// anything is sent, saying which limit and by how much; the server says
// the same to a client that does not check; a deploy that fails exits
// non-zero with the reason, in --json too.
func TestDeployRefusals(t *testing.T) {
	h := newHarness(t)
	h.login()
	site := filepath.Join(t.TempDir(), "big")
	os.MkdirAll(site, 0o755)
	if r := h.run(site, "", "link", "--create"); r.code != 0 {
		t.Fatalf("link: %+v", r)
	}
	var link cli.Link
	data, _ := os.ReadFile(filepath.Join(site, cli.LinkDir, cli.LinkFile))
	json.Unmarshal(data, &link)

	many := map[string]string{}
	for i := range client.MaxFilesPerPush + 1 {
		many[fmt.Sprintf("pages/p%d.html", i)] = "x"
	}
	nine := strings.Repeat("n", 9<<20)
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"501 files", many, []string{"the folder has 501 files to push; a push holds at most 500 (1 over)", "pages (501)"}},
		{"a file over 10 MB", map[string]string{"video.mp4": strings.Repeat("v", client.MaxFileBytes+1)},
			[]string{"video.mp4 is 10.0 MB; a file is at most 10 MB (1 bytes over)"}},
		{"over 25 MB in all", map[string]string{"a.bin": nine, "b.bin": nine, "c.bin": nine},
			[]string{"27.0 MB of files to push; a push carries at most 25 MB (2.0 MB over)", "a.bin (9.0 MB)", ".platformignore"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "f")
			write(t, dir, tt.files)
			os.CopyFS(filepath.Join(dir, cli.LinkDir), os.DirFS(filepath.Join(site, cli.LinkDir)))
			r := h.run(dir, "", "deploy")
			if r.code != 1 || !strings.Contains(r.stderr, "nothing was sent") {
				t.Fatalf("deploy: %+v", r)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
		})
	}

	// The server's own refusals, for a client that sends anyway.
	c, err := client.New(h.api, cptest.OwnerKey)
	if err != nil {
		t.Fatal(err)
	}
	file := func(path, content string) client.File {
		f := client.File{Path: path, Size: int64(len(content)), Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(content)), nil }}
		h := sha256.Sum256([]byte(content))
		f.SHA256 = hex.EncodeToString(h[:])
		return f
	}
	var tooMany []client.File
	for i := range client.MaxFilesPerPush + 3 {
		tooMany = append(tooMany, file(fmt.Sprintf("f%d", i), fmt.Sprint(i)))
	}
	server := []struct {
		name  string
		files []client.File
		code  string
		want  string
	}{
		{"503 files", tooMany, "too_many_files", "this one has 503, 3 over"},
		{"over 25 MB", []client.File{file("a", nine), file("b", nine), file("c", nine)}, "push_too_large", "this one carries 28311552 (27.0 MB), 2097152 bytes over"},
		{"a path escaping", []client.File{file("../x", "x")}, "invalid_path", `".."`},
	}
	for _, tt := range server {
		t.Run("server: "+tt.name, func(t *testing.T) {
			_, err := c.Push(context.Background(), link.RepoID, tt.files, client.PushOptions{Message: "m"})
			var e *client.Error
			if !errors.As(err, &e) || e.Code != tt.code || !strings.Contains(e.Message, tt.want) {
				t.Fatalf("push: %v, want %s with %q", err, tt.code, tt.want)
			}
		})
	}
	var d client.RepoDetail
	h.env.Owner.Must(http.StatusOK, "GET", "/api/repos/"+link.RepoID, nil).JSON(t, &d)
	if d.Repo.Commits != 0 {
		t.Fatalf("refused pushes stored %d commits", d.Repo.Commits)
	}

	// A deploy that fails: a static root with nothing public in it.
	write(t, site, map[string]string{"platform.json": `{"kind": "static", "root": "public"}`, "src/main.txt": "x"})
	r := h.run(site, "", "deploy", "--json")
	res := deployResult(t, r)
	if r.code != 1 || res.State != "failed" || res.Error == "" || res.URL != "" || !strings.Contains(r.stderr, "the deploy failed") {
		t.Fatalf("failed deploy: exit %d %+v %s", r.code, res, r.stderr)
	}
}

// TestHelp: every user command's --help has an example and exits 0; a
// wrong command line exits 2 with the usage line.
func TestHelp(t *testing.T) {
	for _, name := range cli.Names() {
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := cli.Run(context.Background(), &cli.Env{Stdout: &out, Stderr: &errb}, []string{name, "--help"})
			if code != 0 || !strings.Contains(errb.String(), "example:\n  platform "+name) {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if !strings.Contains(cli.Usage(), "  "+name+" ") {
				t.Fatalf("platform help does not list %s:\n%s", name, cli.Usage())
			}
		})
	}
	usage := []struct {
		args []string
		want string
	}{
		{[]string{"deploy", "a", "b"}, "too many arguments: b"},
		{[]string{"deploy", "--nope"}, "flag provided but not defined"},
		{[]string{"rollback", "abc"}, "COMMIT is a commit number"},
		{[]string{"env"}, "say what to do"},
		{[]string{"logs", "--limit", "0"}, "--limit is from 1 to 1000"},
		{[]string{"logs", "extra"}, "too many arguments: extra"},
		{[]string{"db"}, "say what to do: query, shell or export"},
		{[]string{"db", "drop"}, "not a db command"},
		{[]string{"db", "query"}, "db query needs the SQL"},
		{[]string{"db", "shell", "x"}, "too many arguments: x"},
		{[]string{"completion"}, "name the shell"},
		{[]string{"completion", "tcsh"}, "not a shell this completes"},
		{[]string{"nope"}, "not a user command"},
	}
	for _, tt := range usage {
		var errb bytes.Buffer
		if code := cli.Run(context.Background(), &cli.Env{Stdout: &errb, Stderr: &errb}, tt.args); code != 2 || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: exit %d: %s", tt.args, code, errb.String())
		}
	}
}
