package gitignore

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cases are git's documented examples and the corners around them: the
// ignore files (by directory) and, for each path, whether git ignores it.
// TestAgainstGit checks the table itself against git check-ignore.
var cases = []struct {
	name  string
	files map[string]string // directory -> ignore file content
	paths map[string]bool   // path (trailing / for a directory) -> ignored
}{
	{"name at any depth", map[string]string{"": "*.log\nbuild\n"}, map[string]bool{
		"a.log": true, "src/deep/b.log": true, "a.txt": false, "build/": true, "src/build": true, "builder": false}},
	{"directory only", map[string]string{"": "frotz/\n"}, map[string]bool{
		"frotz/": true, "a/frotz/": true, "b/frotz": false}},
	{"anchored with a slash", map[string]string{"": "/root.txt\ndoc/frotz\n"}, map[string]bool{
		"root.txt": true, "sub/root.txt": false, "doc/frotz": true, "a/doc/frotz": false}},
	{"negation", map[string]string{"": "*.html\n!keep.html\n"}, map[string]bool{
		"a.html": true, "keep.html": false, "dir/keep.html": false}},
	{"last match wins", map[string]string{"": "!a.txt\n*.txt\n"}, map[string]bool{"a.txt": true}},
	{"leading double star", map[string]string{"": "**/foo\n**/x/bar\n"}, map[string]bool{
		"foo": true, "a/b/foo": true, "x/bar": true, "a/x/bar": true, "bar": false}},
	{"trailing double star", map[string]string{"": "abc/**\n"}, map[string]bool{
		"abc/": false, "abc/x": true, "abc/d/y": true, "x/abc/y": false}},
	{"middle double star", map[string]string{"": "a/**/b\n"}, map[string]bool{
		"a/b": true, "a/x/b": true, "a/x/y/b": true, "c/a/b": false}},
	{"star does not cross a slash", map[string]string{"": "foo/*\n"}, map[string]bool{
		"foo/test.json": true, "foo/bar/": true, "foo/bar/hello.c": true, "x/foo/y": false}},
	{"no re-including inside an ignored directory", map[string]string{"": "dist/\n!dist/keep.txt\n"}, map[string]bool{
		"dist/keep.txt": true, "dist/": true}},
	{"classes and ?", map[string]string{"": "file[0-9].txt\n[!a]b\n?.md\n"}, map[string]bool{
		"file1.txt": true, "filex.txt": false, "cb": true, "ab": false, "x.md": true, "xy.md": false}},
	{"comments, blanks, escapes, trailing spaces", map[string]string{"": "# comment\n\n\\#hash\n\\!bang\nspaced   \n"}, map[string]bool{
		"#hash": true, "!bang": true, "spaced": true, "# comment": false}},
	{"nested file applies below its directory", map[string]string{"": "*.tmp\n", "sub": "!keep.tmp\n/only-here\n"}, map[string]bool{
		"x.tmp": true, "sub/keep.tmp": false, "keep.tmp": true, "sub/only-here": true, "only-here": false, "sub/deeper/only-here": false}},
	{"CRLF lines", map[string]string{"": "a.txt\r\nb.txt\r\n"}, map[string]bool{"a.txt": true, "b.txt": true}},
}

func matcher(t *testing.T, files map[string]string) *Matcher {
	t.Helper()
	var m Matcher
	// Parents before children, as a walk finds them.
	dirs := make([]string, 0, len(files))
	for d := range files {
		dirs = append(dirs, d)
	}
	for i := range dirs {
		for j := i + 1; j < len(dirs); j++ {
			if len(dirs[j]) < len(dirs[i]) {
				dirs[i], dirs[j] = dirs[j], dirs[i]
			}
		}
	}
	for _, d := range dirs {
		if err := m.Add(d, strings.NewReader(files[d])); err != nil {
			t.Fatal(err)
		}
	}
	return &m
}

func TestIgnored(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := matcher(t, tc.files)
			for p, want := range tc.paths {
				isDir := strings.HasSuffix(p, "/")
				if got := m.Ignored(strings.TrimSuffix(p, "/"), isDir); got != want {
					t.Errorf("Ignored(%q) = %v, want %v", p, got, want)
				}
			}
		})
	}
}

// TestAgainstGit holds the table to git itself (git check-ignore in a
// real repository), so the expectations are git's and not ours.
func TestAgainstGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed: the table is checked against git where it is")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			run := func(args ...string) (string, error) {
				cmd := exec.Command(git, args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			if out, err := run("init", "-q"); err != nil {
				t.Fatalf("git init: %v %s", err, out)
			}
			for d, content := range tc.files {
				os.MkdirAll(filepath.Join(dir, d), 0o755)
				os.WriteFile(filepath.Join(dir, d, ".gitignore"), []byte(content), 0o644)
			}
			for p := range tc.paths {
				full := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(p, "/")))
				if strings.HasSuffix(p, "/") {
					os.MkdirAll(full, 0o755)
					continue
				}
				os.MkdirAll(filepath.Dir(full), 0o755)
				os.WriteFile(full, nil, 0o644)
			}
			for p, want := range tc.paths {
				out, err := run("check-ignore", "-q", "--no-index", strings.TrimSuffix(p, "/"))
				got := err == nil
				if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
					t.Fatalf("git check-ignore %s: %v %s", p, err, out)
				}
				if got != want {
					t.Errorf("git says %q ignored=%v; the table says %v", p, got, want)
				}
			}
		})
	}
}

// FuzzIgnored: no pattern or path panics or hangs the matcher.
func FuzzIgnored(f *testing.F) {
	f.Add("*.log\n!keep.log\n/build/\na/**/b\n", "a/x/b", false)
	f.Add("[!a", "x", true)
	f.Fuzz(func(t *testing.T, patterns, p string, isDir bool) {
		if len(patterns) > 4096 || len(p) > 1024 {
			return
		}
		var m Matcher
		m.Add("", strings.NewReader(patterns))
		m.Ignored(p, isDir)
	})
}
