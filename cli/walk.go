package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/svcplatform/platform/cli/gitignore"
	"github.com/svcplatform/platform/client"
	"github.com/svcplatform/platform/rules"
)

// IgnoreFiles are read in every folder of a deploy, in this order: a
// .platformignore pattern (!dist/ for instance) can take back what a
// .gitignore pattern leaves out.
var IgnoreFiles = []string{".gitignore", ".platformignore"}

// scan is what a deploy found in a folder.
type scan struct {
	files []client.File
	total int64
	// ignored counts files and folders the ignore files left out.
	ignored int
	// private are the files a static site never serves (the file guard):
	// not sent, with the reason.
	private []string
	// env are environment files: never sent.
	env []string
	// skipped are symbolic links that lead out of the folder or to a
	// folder, and special files.
	skipped []string
	// static tells whether the folder deploys as a static site.
	static bool
	root   string
}

// siteManifest is what the walk reads of platform.json.
type siteManifest struct {
	Kind string `json:"kind"`
	Root string `json:"root"`
}

// isEnvFile mirrors the server's rule: a name starting ".env" in any case,
// in any folder, is an environment file, whose content is never stored.
func isEnvFile(rel string) bool {
	base := path.Base(rel)
	return len(base) >= 4 && strings.EqualFold(base[:4], ".env")
}

// scanFolder lists the files of root to push: what .gitignore and
// .platformignore leave out is not sent (nor is .git or .platform), nor
// are environment files, nor, for a static site, the private files the
// platform would leave out of it anyway.
func scanFolder(root string) (*scan, error) {
	info, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("cannot read the folder to deploy: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a folder: give the folder to deploy", root)
	}
	s := &scan{static: true}
	if data, err := os.ReadFile(filepath.Join(root, "platform.json")); err == nil {
		var m siteManifest
		if json.Unmarshal(data, &m) == nil {
			s.static = m.Kind == "" || m.Kind == "static"
			s.root = strings.Trim(path.Clean("/"+filepath.ToSlash(m.Root)), "/")
		}
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	var m gitignore.Matcher
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("cannot read %s: %w", p, err)
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." {
				if d.Name() == ".git" || rel == LinkDir {
					return fs.SkipDir
				}
				if m.IgnoredHere(rel, true) {
					s.ignored++
					return fs.SkipDir
				}
			}
			return loadIgnores(&m, p, rel)
		}
		if d.Name() == ".git" { // a worktree's pointer to its repository
			return nil
		}
		if m.IgnoredHere(rel, false) {
			s.ignored++
			return nil
		}
		if isEnvFile(rel) {
			s.env = append(s.env, rel)
			return nil
		}
		if s.static {
			if private, why := rules.PrivateFile(s.served(rel)); private {
				s.private = append(s.private, rel+" ("+why+")")
				return nil
			}
		}
		open := p
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				s.skipped = append(s.skipped, rel+" (a link to nothing)")
				return nil
			}
			ti, err := os.Stat(target)
			if err != nil || !ti.Mode().IsRegular() {
				s.skipped = append(s.skipped, rel+" (a link to a folder or special file)")
				return nil
			}
			if r, err := filepath.Rel(realRoot, target); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
				s.skipped = append(s.skipped, rel+" (a link out of the folder)")
				return nil
			}
			open = target
		case !t.IsRegular():
			s.skipped = append(s.skipped, rel+" (not a regular file)")
			return nil
		}
		f, err := hashFile(open, rel)
		if err != nil {
			return err
		}
		s.files = append(s.files, f)
		s.total += f.Size
		return nil
	})
	return s, err
}

// served is a path as the static site's file guard sees it: relative to
// the site root when the file is under it.
func (s *scan) served(rel string) string {
	if s.root != "" {
		if r, ok := strings.CutPrefix(rel, s.root+"/"); ok {
			return r
		}
	}
	return rel
}

// loadIgnores adds the ignore files of folder dir (rel from the root).
func loadIgnores(m *gitignore.Matcher, dir, rel string) error {
	if rel == "." {
		rel = ""
	}
	for _, name := range IgnoreFiles {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		err = m.Add(rel, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("read %s: %w", filepath.Join(dir, name), err)
		}
	}
	return nil
}

// hashFile sizes and hashes a file; one over the file limit is only sized.
func hashFile(p, rel string) (client.File, error) {
	f := client.File{Path: rel, Open: func() (io.ReadCloser, error) { return os.Open(p) }}
	fh, err := os.Open(p)
	if err != nil {
		return f, err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return f, err
	}
	f.Size = info.Size()
	if f.Size > client.MaxFileBytes {
		return f, nil
	}
	h := sha256.New()
	n, err := io.Copy(h, fh)
	if err != nil {
		return f, fmt.Errorf("read %s: %w", p, err)
	}
	f.Size, f.SHA256 = n, hex.EncodeToString(h.Sum(nil))
	return f, nil
}

// checkLimits refuses a folder the server would refuse, saying which limit
// it passes, by how much, and what to leave out.
func (s *scan) checkLimits() error {
	var problems []string
	if n := len(s.files); n > client.MaxFilesPerPush {
		problems = append(problems, fmt.Sprintf("the folder has %d files to push; a push holds at most %d (%d over). The folders with the most: %s",
			n, client.MaxFilesPerPush, n-client.MaxFilesPerPush, strings.Join(s.busiest(3), ", ")))
	}
	for _, f := range s.files {
		if f.Size > client.MaxFileBytes {
			problems = append(problems, fmt.Sprintf("%s is %s; a file is at most 10 MB (%s over)", f.Path, mbytes(f.Size), mbytes(f.Size-client.MaxFileBytes)))
		}
	}
	if s.total > client.MaxPushBytes {
		problems = append(problems, fmt.Sprintf("the folder has %s of files to push; a push carries at most 25 MB (%s over). The largest: %s",
			mbytes(s.total), mbytes(s.total-client.MaxPushBytes), strings.Join(s.largest(3), ", ")))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("this folder is too large for one push, nothing was sent:\n  %s\nLeave out what the site does not need with a .platformignore (same patterns as .gitignore)",
		strings.Join(problems, "\n  "))
}

func (s *scan) busiest(n int) []string {
	count := map[string]int{}
	for _, f := range s.files {
		top, _, _ := strings.Cut(f.Path, "/")
		if top == f.Path {
			top = "."
		}
		count[top]++
	}
	dirs := make([]string, 0, len(count))
	for d := range count {
		dirs = append(dirs, d)
	}
	slices.SortFunc(dirs, func(a, b string) int { return count[b] - count[a] })
	out := []string{}
	for _, d := range dirs[:min(n, len(dirs))] {
		out = append(out, fmt.Sprintf("%s (%d)", d, count[d]))
	}
	return out
}

func (s *scan) largest(n int) []string {
	fs := slices.Clone(s.files)
	slices.SortFunc(fs, func(a, b client.File) int { return int(b.Size - a.Size) })
	out := []string{}
	for _, f := range fs[:min(n, len(fs))] {
		out = append(out, fmt.Sprintf("%s (%s)", f.Path, mbytes(f.Size)))
	}
	return out
}

// mbytes renders a size for people.
func mbytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// notes says what the walk left out, for Stderr.
func (s *scan) notes() []string {
	var out []string
	if s.ignored > 0 {
		out = append(out, fmt.Sprintf("left out %d file(s) or folder(s) named in .gitignore or .platformignore", s.ignored))
	}
	if len(s.env) > 0 {
		out = append(out, fmt.Sprintf("not sent, environment files are never stored or deployed (set the values with platform env set): %s", list(s.env)))
	}
	if len(s.private) > 0 {
		out = append(out, fmt.Sprintf("not sent, a static site never serves private files: %s", list(s.private)))
	}
	if len(s.skipped) > 0 {
		out = append(out, fmt.Sprintf("skipped: %s", list(s.skipped)))
	}
	return out
}

// list joins up to five names and counts the rest.
func list(names []string) string {
	if len(names) <= 5 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
}
