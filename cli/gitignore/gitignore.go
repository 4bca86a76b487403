// Package gitignore matches paths against .gitignore-style patterns, as
// git does: blank lines and # comments are skipped, ! re-includes, a
// trailing / matches directories only, a pattern with a / before its end
// is anchored to the directory of its file while one without matches a
// name at any depth, * and ? and [...] never match /, and ** matches any
// number of directories (leading **/, trailing /**, middle /**/). The last
// matching pattern decides; patterns of a deeper directory's file come
// after those of its parents. As with git, a file inside an ignored
// directory cannot be re-included: callers stop walking at an ignored
// directory.
package gitignore

import (
	"bufio"
	"io"
	"path"
	"strings"
)

// Rule is one pattern of an ignore file.
type Rule struct {
	// base is the directory of the file the pattern came from, relative to
	// the walk's root ("" for the root), without a trailing /.
	base     string
	segs     []string // the pattern split at /, ** as its own segment
	negate   bool
	dirOnly  bool
	anchored bool
}

// Matcher holds rules in the order they apply.
type Matcher struct {
	rules []Rule
}

// Add reads the patterns of an ignore file found in directory base
// (relative to the root, "/"-separated, "" for the root) and appends them.
func (m *Matcher) Add(base string, r io.Reader) error {
	base = strings.Trim(base, "/")
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if rule, ok := Parse(sc.Text()); ok {
			rule.base = base
			m.rules = append(m.rules, rule)
		}
	}
	return sc.Err()
}

// Parse reads one line of an ignore file; ok is false for a blank line, a
// comment or a pattern that names nothing.
func Parse(line string) (Rule, bool) {
	var r Rule
	line = strings.TrimSuffix(line, "\r")
	line = trimTrailingSpaces(line)
	if line == "" || line[0] == '#' {
		return r, false
	}
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return r, false
	}
	r.anchored = strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	for _, s := range strings.Split(line, "/") {
		switch {
		case s == "":
			continue // a repeated separator
		case s == "**":
			if n := len(r.segs); n > 0 && r.segs[n-1] == "**" {
				continue // one ** does what several do
			}
		case strings.Contains(s, "[!"):
			s = strings.ReplaceAll(s, "[!", "[^") // git's negated class, path.Match's spelling
		}
		r.segs = append(r.segs, s)
	}
	if len(r.segs) == 0 {
		return r, false
	}
	if len(r.segs) > 1 && r.segs[0] == "**" {
		// "**/name" matches name at any depth, like an unanchored name.
		r.anchored = len(r.segs) > 2 || r.segs[1] == "**"
		if !r.anchored {
			r.segs = r.segs[1:]
		}
	}
	return r, true
}

// trimTrailingSpaces drops trailing spaces that are not escaped with \.
func trimTrailingSpaces(s string) string {
	for strings.HasSuffix(s, " ") {
		if strings.HasSuffix(s, `\ `) {
			return s[:len(s)-2] + " "
		}
		s = s[:len(s)-1]
	}
	return s
}

// Ignored reports whether the path (relative to the root, "/"-separated)
// is ignored, itself or through an ignored parent directory, as git check-ignore
// says; isDir says whether it names a directory.
func (m *Matcher) Ignored(p string, isDir bool) bool {
	p = strings.Trim(p, "/")
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && m.ignoredHere(p[:i], true) {
			return true
		}
	}
	return m.ignoredHere(p, isDir)
}

// IgnoredHere is Ignored without looking at the parent directories: for a
// walk that never enters an ignored directory.
func (m *Matcher) IgnoredHere(p string, isDir bool) bool {
	return m.ignoredHere(strings.Trim(p, "/"), isDir)
}

func (m *Matcher) ignoredHere(p string, isDir bool) bool {
	ignored := false
	for i := range m.rules {
		r := &m.rules[i]
		if r.negate == !ignored {
			continue // cannot change the answer
		}
		if r.match(p, isDir) {
			ignored = !r.negate
		}
	}
	return ignored
}

func (r *Rule) match(p string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	rel := p
	if r.base != "" {
		var ok bool
		if rel, ok = strings.CutPrefix(p, r.base+"/"); !ok {
			return false
		}
	}
	if !r.anchored {
		ok, _ := path.Match(r.segs[0], path.Base(rel))
		return ok
	}
	return matchSegs(r.segs, strings.Split(rel, "/"))
}

// matchSegs matches pattern segments against path segments, ** standing
// for any number of whole segments (at least one when it ends the
// pattern: "dir/**" matches what is inside dir, not dir itself).
func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			if len(pat) == 1 {
				return len(segs) > 0
			}
			for i := 0; i <= len(segs); i++ {
				if matchSegs(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
