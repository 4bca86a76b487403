package repos

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Path limits.
const (
	// MaxPathLen bounds a file path in bytes.
	MaxPathLen = 1024
	// MaxSegmentLen bounds one path segment (a file or directory name).
	MaxSegmentLen = 255
)

// ErrBadPath is matched (errors.Is) by every path refusal of CleanPath.
var ErrBadPath = errors.New("repos: bad path")

// PathError says why a pushed path was refused.
type PathError struct {
	// Path is the path as given (cut to 200 bytes).
	Path string
	// Reason is what is wrong, in lower case.
	Reason string
}

func (e *PathError) Error() string { return "path " + quote(e.Path) + ": " + e.Reason }

// Is reports whether target is ErrBadPath.
func (e *PathError) Is(target error) bool { return target == ErrBadPath }

func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return strconv.Quote(s)
}

// CleanPath validates a pushed file path and returns its canonical form.
//
// Backslashes are read as separators and become '/' (a push from Windows
// means the same tree); "." segments and repeated separators are dropped
// ("./a//b" is "a/b"). Refused: an empty path, an absolute path (leading
// '/' or a drive letter such as "C:"), a ".." segment, a trailing separator
// (names a directory), NUL or another control character, invalid UTF-8, a
// path over MaxPathLen bytes or a segment over MaxSegmentLen bytes. The
// error is a *PathError matching ErrBadPath.
func CleanPath(p string) (string, error) {
	bad := func(reason string) (string, error) { return "", &PathError{Path: p, Reason: reason} }
	switch {
	case p == "":
		return bad("is empty")
	case len(p) > MaxPathLen:
		return bad("is longer than 1024 bytes")
	case !utf8.ValidString(p):
		return bad("is not valid UTF-8")
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f {
			if c == 0 {
				return bad("holds a NUL byte")
			}
			return bad("holds a control character")
		}
	}
	s := strings.ReplaceAll(p, `\`, "/")
	if s[0] == '/' {
		return bad("is absolute: give it relative to the repo root")
	}
	if len(s) >= 2 && s[1] == ':' && ('a' <= s[0]|0x20 && s[0]|0x20 <= 'z') {
		return bad("is absolute (a drive letter): give it relative to the repo root")
	}
	if strings.HasSuffix(s, "/") {
		return bad("ends with a separator: name a file, not a directory")
	}
	segs := make([]string, 0, strings.Count(s, "/")+1)
	for _, seg := range strings.Split(s, "/") {
		switch seg {
		case "", ".":
			continue
		case "..":
			return bad(`holds a ".." segment`)
		}
		if len(seg) > MaxSegmentLen {
			return bad("has a name longer than 255 bytes")
		}
		segs = append(segs, seg)
	}
	if len(segs) == 0 {
		return bad("names no file")
	}
	return strings.Join(segs, "/"), nil
}

// IsEnvFile reports whether the cleaned path names an environment file
// (.env, .env.local, .env.production, ... in any directory, any case):
// its content is never kept, read back or deployed.
func IsEnvFile(clean string) bool {
	base := clean[strings.LastIndexByte(clean, '/')+1:]
	return len(base) >= 4 && strings.EqualFold(base[:4], ".env")
}
