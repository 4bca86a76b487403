package certwire

import (
	"errors"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{"blog.apps.test", true},
		{"blog.apps.test+rsa", true},
		{"blog.apps.test+token", true},
		{"acme_account+key", true},
		{"acme_account.key", true},
		{"Ab-c_9XyZ+http-01", true}, // a base64url token keeps its case
		{strings.Repeat("a", MaxKeyLen), true},
		{"", false},
		{strings.Repeat("a", MaxKeyLen+1), false},
		{".hidden", false},
		{"..", false},
		{"a/b", false},
		{"a b", false},
		{"a%2Fb", false},
		{"é", false},
		{"a\x00", false},
	} {
		t.Run(tc.key, func(t *testing.T) {
			got, err := ParseKey(tc.key)
			if tc.ok != (err == nil) {
				t.Fatalf("ParseKey(%q) = %q, %v", tc.key, got, err)
			}
			if err != nil && !errors.Is(err, ErrKey) {
				t.Fatalf("err %v does not wrap ErrKey", err)
			}
			if err == nil && got != tc.key {
				t.Fatalf("key changed: %q", got)
			}
		})
	}
}

func TestParseHost(t *testing.T) {
	for _, tc := range []struct {
		host, want string
	}{
		{"blog.apps.test", "blog.apps.test"},
		{"BLOG.Apps.Test.", "blog.apps.test"},
		{"localhost", "localhost"},
		{"a-b.localhost", "a-b.localhost"},
		{strings.Repeat("a", 63) + ".test", strings.Repeat("a", 63) + ".test"},
		{"", ""},
		{".", ""},
		{strings.Repeat("a", 64) + ".test", ""},
		{strings.Repeat("abcdefgh.", 29) + "test", ""}, // 265 characters
		{"a..b", ""},
		{"-a.test", ""},
		{"a-.test", ""},
		{"a_b.test", ""},
		{"127.0.0.1", ""},
		{"[::1]", ""},
		{"blog.apps.test:443", ""},
		{"*.apps.test", "*.apps.test"},
		{"*.Apps.Test.", "*.apps.test"},
		{"*.*.apps.test", ""},
		{"a.*.apps.test", ""},
		{"*", ""},
		{"*.", ""},
		{"*.127.0.0.1", ""},
		{"bücher.test", ""},
	} {
		t.Run(tc.host, func(t *testing.T) {
			got, err := ParseHost(tc.host)
			if tc.want == "" {
				if !errors.Is(err, ErrHost) {
					t.Fatalf("ParseHost(%q) = %q, %v; want ErrHost", tc.host, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseHost(%q) = %q, %v; want %q", tc.host, got, err, tc.want)
			}
		})
	}
}

// FuzzParseKey: an accepted key is unchanged, bounded, and of the allowed
// characters (so it is one path segment that no proxy rewrites).
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"blog.apps.test+rsa", "acme_account+key", "tok-EN_x+http-01", "", ".x", "a/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		got, err := ParseKey(key)
		if err != nil {
			if !errors.Is(err, ErrKey) {
				t.Fatalf("err %v does not wrap ErrKey", err)
			}
			return
		}
		if got != key || len(got) == 0 || len(got) > MaxKeyLen || got[0] == '.' ||
			strings.ContainsAny(got, "/%?# \\\x00") {
			t.Fatalf("accepted %q", key)
		}
	})
}

// FuzzParseHost: an accepted host is normalised (parsing it again gives
// itself), lower case and bounded.
func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"blog.apps.test", "BLOG.apps.test.", "localhost", "127.0.0.1", "a..b", "x:1", "*.apps.test", "*.*.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		got, err := ParseHost(host)
		if err != nil {
			if !errors.Is(err, ErrHost) {
				t.Fatalf("err %v does not wrap ErrHost", err)
			}
			return
		}
		again, err := ParseHost(got)
		if err != nil || again != got || got != strings.ToLower(got) || len(got) > MaxHostLen || strings.HasSuffix(got, ".") ||
			strings.Count(got, "*") > 1 || strings.Contains(got, "*") && !strings.HasPrefix(got, WildcardPrefix) {
			t.Fatalf("ParseHost(%q) = %q; again %q %v", host, got, again, err)
		}
	})
}
