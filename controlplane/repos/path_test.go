package repos

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanPath(t *testing.T) {
	tests := []struct {
		in, want string
		bad      string // substring of the error; empty when accepted
	}{
		{in: "index.html", want: "index.html"},
		{in: "a/b/c.txt", want: "a/b/c.txt"},
		{in: "./a//b", want: "a/b"},
		{in: `docs\guide\a.md`, want: "docs/guide/a.md"},
		{in: "a/./b", want: "a/b"},
		{in: ".env", want: ".env"},
		{in: "héllo/wörld.txt", want: "héllo/wörld.txt"},
		{in: "", bad: "is empty"},
		{in: "/etc/passwd", bad: "absolute"},
		{in: `\windows\x`, bad: "absolute"},
		{in: "C:/x", bad: "drive letter"},
		{in: "c:x", bad: "drive letter"},
		{in: "../x", bad: `".."`},
		{in: "a/../../x", bad: `".."`},
		{in: `a\..\x`, bad: `".."`},
		{in: "a\x00b", bad: "NUL"},
		{in: "a\nb", bad: "control character"},
		{in: "a/", bad: "ends with a separator"},
		{in: ".", bad: "names no file"},
		{in: "./", bad: "ends with a separator"},
		{in: "\xff.txt", bad: "UTF-8"},
		{in: strings.Repeat("a", 256), bad: "longer than 255"},
		{in: strings.Repeat("a/", 600) + "b", bad: "longer than 1024"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := CleanPath(tt.in)
			if tt.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tt.bad) || !errors.Is(err, ErrBadPath) {
					t.Fatalf("CleanPath(%q) = %q, %v; want error with %q", tt.in, got, err, tt.bad)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("CleanPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestIsEnvFile(t *testing.T) {
	for p, want := range map[string]bool{
		".env": true, "app/.env.local": true, ".ENV.production": true, ".envrc": true,
		"env": false, "a.env": false, "x/environment.txt": false, "index.html": false,
	} {
		if got := IsEnvFile(p); got != want {
			t.Errorf("IsEnvFile(%q) = %v, want %v", p, got, want)
		}
	}
}

// FuzzCleanPath checks that an accepted path is canonical, relative, free
// of "..", NUL and backslashes, and that cleaning is idempotent.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"index.html", "./a//b", `a\b`, "../x", "/abs", "C:/x", "a\x00", ".env", "a/./b/", "\xc0\xae/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c, err := CleanPath(p)
		if err != nil {
			if !errors.Is(err, ErrBadPath) {
				t.Fatalf("error %v does not match ErrBadPath", err)
			}
			return
		}
		if c == "" || strings.HasPrefix(c, "/") || strings.HasSuffix(c, "/") || strings.Contains(c, "//") ||
			strings.ContainsAny(c, "\\\x00") || !utf8.ValidString(c) || len(c) > MaxPathLen {
			t.Fatalf("CleanPath(%q) = %q: not canonical", p, c)
		}
		for _, seg := range strings.Split(c, "/") {
			if seg == ".." || seg == "." || len(seg) > MaxSegmentLen {
				t.Fatalf("CleanPath(%q) = %q: bad segment %q", p, c, seg)
			}
		}
		if again, err := CleanPath(c); err != nil || again != c {
			t.Fatalf("CleanPath not idempotent on %q: %q, %v", c, again, err)
		}
	})
}
