package sandbox

import (
	"path"
	"path/filepath"
)

// bind is a host directory or file mounted into the sandbox: src on the
// host, dest inside.
type bind struct{ src, dest string }

// hiddenMounts returns where, inside the sandbox, each hidden host path
// shows through a bind (a data directory under a bound system directory,
// or under the deployment directory): those are covered by an empty,
// read-only tmpfs. A hidden path under no bind is not in the sandbox at
// all and gets no mount: mounting over it would create its path, an empty
// mount point naming the host's directory. A bind whose source lies inside
// a hidden path (a media asset's directory inside the data directory) is
// the caller's choice to show that one directory, and stays. Paths are
// compared after resolving symlinks; a hidden path that does not exist is
// skipped.
func hiddenMounts(hide []string, binds []bind) []string {
	var out []string
	for _, h := range hide {
		hidden, ok := realPath(h)
		if !ok {
			continue
		}
		for _, b := range binds {
			src, ok := realPath(b.src)
			if !ok {
				continue
			}
			if _, inside := within(hidden, src); inside {
				continue
			}
			if rel, inside := within(src, hidden); inside {
				out = append(out, path.Join(b.dest, filepath.ToSlash(rel)))
			}
		}
	}
	return out
}

// realPath is p made absolute with its symlinks resolved; false when p
// does not exist.
func realPath(p string) (string, bool) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", false
	}
	r, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", false
	}
	return r, true
}

// within reports whether p is dir or lies under it, and p relative to dir.
func within(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || !(rel == "." || filepath.IsLocal(rel)) {
		return "", false
	}
	return rel, true
}
