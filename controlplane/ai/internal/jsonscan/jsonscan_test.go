package jsonscan

import (
	"encoding/json"
	"testing"
)

// checkText: whatever Text accepts, encoding/json reads as the same string
// (or null), and the scanner stops right after the token.
func checkText(t *testing.T, in []byte) {
	t.Helper()
	s := &Scanner{B: in}
	v, isStr, ok := s.Text()
	if !ok {
		return
	}
	var want *string
	if err := json.Unmarshal(in[:s.I], &want); err != nil {
		t.Fatalf("Text accepted %q, encoding/json refuses it: %v", in[:s.I], err)
	}
	if isStr != (want != nil) || (isStr && string(v) != *want) {
		t.Fatalf("Text %q (%v), encoding/json %v: %q", v, isStr, want, in)
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`"plain"`, true}, {`null`, true}, {`"a\"b\\c\/d\b\f\n\r\t"`, true}, {`"\u00e9\ud83d\ude00"`, true}, {`"é✓"`, true},
		{`"\ud83d"`, false}, {`"\ude00"`, false}, {`"\x"`, false}, {"\"\xff\"", false}, {"\"a\nb\"", false}, {`"open`, false}, {`nul`, false},
	} {
		s := &Scanner{B: []byte(tc.in)}
		if _, _, ok := s.Text(); ok != tc.ok {
			t.Errorf("Text(%s) ok %v, want %v", tc.in, ok, tc.ok)
		}
		checkText(t, []byte(tc.in))
	}
}

func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		in      string
		intOK   bool
		n       int64
		floatOK bool
		f       float64
	}{
		{"12", true, 12, true, 12}, {"-0", true, 0, true, 0}, {"1.5", false, 0, true, 1.5}, {"1e3", false, 0, true, 1000},
		{"01", false, 0, false, 0}, {"99999999999999999999", false, 0, true, 1e20}, {"1e400", false, 0, false, 0}, {"-", false, 0, false, 0},
	} {
		s := &Scanner{B: []byte(tc.in)}
		n, ok := s.Int64()
		if ok && !s.End() {
			ok = false
		}
		if ok != tc.intOK || n != tc.n {
			t.Errorf("Int64(%s) = %d, %v", tc.in, n, ok)
		}
		s = &Scanner{B: []byte(tc.in)}
		f, ok := s.Float64()
		if ok && !s.End() {
			ok = false
		}
		if ok != tc.floatOK || f != tc.f {
			t.Errorf("Float64(%s) = %g, %v", tc.in, f, ok)
		}
	}
}

func TestObject(t *testing.T) {
	keys := []string{"a", "b"}
	for in, want := range map[string]bool{`{}`: true, `{"a":1,"b":2}`: true, `{"a":1,"a":2}`: false, `{"c":1}`: false, `{"A":1}`: false, `{"a":1,}`: false} {
		s := &Scanner{B: []byte(in)}
		ok := s.Object(keys, func(string) bool { _, ok := s.Num(); return ok })
		if ok != want {
			t.Errorf("Object(%s) = %v, want %v", in, ok, want)
		}
	}
}

// FuzzText: Text never reads a string differently from encoding/json.
func FuzzText(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\"b\\c\n"`, `"\ud83d\ude00"`, `null`, `"\u0000"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkText(t, in) })
}
