package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScanFolder: what a deploy sends of a folder, and what it says it
// left out.
func TestScanFolder(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		links map[string]string // link -> target, relative to the folder
		want  string            // the files sent, comma-separated
		notes []string          // substrings of the notes
	}{
		{"static: private and environment files stay home", map[string]string{
			"index.html": "x", ".htaccess": "x", "id_rsa": "x", ".env.local": "x", "site.key": "x", ".well-known/a": "x", "sub/.hidden/b": "x",
		}, nil, ".well-known/a,index.html", []string{"never stored or deployed (set the values with platform env set): .env.local", ".htaccess (dotfile)", "id_rsa (SSH key", "site.key (private key"}},
		{"app: dotfiles go, environment files never", map[string]string{
			"platform.json": `{"kind": "app", "run": ["node", "server.js"]}`, "server.js": "x", ".npmrc": "x", ".env": "x",
		}, nil, ".npmrc,platform.json,server.js", []string{": .env"}},
		{"static root: the guard judges paths under it", map[string]string{
			"platform.json": `{"kind": "static", "root": "public"}`, "public/.well-known/x": "x", "public/index.html": "x", "public/.git-credentials": "x",
		}, nil, "platform.json,public/.well-known/x,public/index.html", []string{"public/.git-credentials"}},
		{".platformignore takes back what .gitignore leaves out", map[string]string{
			".gitignore": "dist/\n*.map\n", ".platformignore": "!dist/\n", "dist/app.js": "x", "dist/app.js.map": "x", "src/a.ts": "x",
		}, nil, "dist/app.js,src/a.ts", []string{"left out 1 file(s)"}},
		{"nested ignore files, .git and .platform never", map[string]string{
			"a/.gitignore": "*.tmp\n", "a/x.tmp": "x", "x.tmp": "x", ".git/config": "x", ".platform/project.json": "{}", "a/keep.txt": "x",
		}, nil, "a/keep.txt,x.tmp", []string{"left out 1 file(s)"}},
		{"links: inside sent as the file, others skipped", map[string]string{"real.txt": "x", "dir/y.txt": "y"},
			map[string]string{"copy.txt": "real.txt", "out.txt": "../outside.txt", "dirlink": "dir", "dangling": "nope"},
			"copy.txt,dir/y.txt,real.txt", []string{"out.txt (a link out of the folder)", "dirlink (a link to a folder", "dangling (a link to nothing)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			os.WriteFile(filepath.Join(parent, "outside.txt"), []byte("secret"), 0o644)
			dir := filepath.Join(parent, "site")
			for name, content := range tt.files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.WriteFile(p, []byte(content), 0o644)
			}
			for link, target := range tt.links {
				if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
					t.Fatal(err)
				}
			}
			s, err := scanFolder(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range s.files {
				got = append(got, f.Path)
				if len(f.SHA256) != 64 || f.Size == 0 {
					t.Errorf("%s: size %d sum %q", f.Path, f.Size, f.SHA256)
				}
			}
			if strings.Join(got, ",") != tt.want {
				t.Fatalf("sent %s, want %s", strings.Join(got, ","), tt.want)
			}
			notes := strings.Join(s.notes(), "\n")
			for _, n := range tt.notes {
				if !strings.Contains(notes, n) {
					t.Errorf("notes lack %q:\n%s", n, notes)
				}
			}
		})
	}
}
