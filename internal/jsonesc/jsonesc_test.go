package jsonesc

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestAppend(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"line\nfeed\r\ttab", `"line\nfeed\r\ttab"`},
		{"\x00\x1f\x7f", `"\u0000\u001f\u007f"`},
		{"bad\xffutf8", `"bad\ufffdutf8"`},
		{"sep\u2028\u2029", `"sep\u2028\u2029"`},
		{"héllo ✓", `"héllo ✓"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := string(Append(nil, tc.in)); got != tc.want {
				t.Errorf("string: %s, want %s", got, tc.want)
			}
			if got := string(Append(nil, []byte(tc.in))); got != tc.want {
				t.Errorf("bytes: %s, want %s", got, tc.want)
			}
		})
	}
}

func TestAppendDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 256)
	s := "a request line with \"quotes\" and \xff bytes"
	if n := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], s) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\", "\xff\xfe", "\u2028", "\x00\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Append(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q -> %s: %v", s, out, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("%q round-trips to %q", s, back)
		}
		for _, c := range out {
			if c == '\n' || c == '\r' {
				t.Fatalf("%q -> %s holds a line break", s, out)
			}
		}
	})
}

func BenchmarkAppend(b *testing.B) {
	buf := make([]byte, 0, 256)
	s := "GET /a/path/with-some-length?and=query&x=\"y\" HTTP/1.1"
	b.ReportAllocs()
	for b.Loop() {
		buf = Append(buf[:0], s)
	}
}
