package filter

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseRefusals(t *testing.T) {
	long := `{"a":{"$in":[` + strings.Repeat(`"xxxxxxxxxx",`, 200) + `"x"]}}`
	tests := []struct{ name, in, want string }{
		{"not json", `{`, "not valid JSON"},
		{"not an object", `[1]`, "must be a JSON object"},
		{"empty", `{}`, "is empty"},
		{"too big", long, "under 2048"},
		{"empty key", `{"":1}`, "cannot be empty"},
		{"dollar key", `{"$or":[{"a":1}]}`, "cannot start with $"},
		{"quote key", `{"a\"b":1}`, "double quote"},
		{"empty segment", `{"a..b":1}`, "empty segment"},
		{"too many levels", `{"a.b.c.d.e.f.g.h.i":1}`, "nested too deep"},
		{"nested object", `{"a":{"b":{"c":1}}}`, "nested too deep"},
		{"nested object as operand", `{"a":{"$eq":{"c":1}}}`, "nested too deep"},
		{"unknown operator", `{"a":{"$regex":"x"}}`, "unknown operator $regex"},
		{"empty operator object", `{"a":{}}`, "empty operator object"},
		{"in not array", `{"a":{"$in":"x"}}`, "non-empty array"},
		{"in empty", `{"a":{"$in":[]}}`, "non-empty array"},
		{"in nested array", `{"a":{"$in":[[1]]}}`, "not an array"},
		{"range on bool", `{"a":{"$lt":true}}`, "string or a number"},
		{"range on null", `{"a":{"$gt":null}}`, "string, number, boolean or null"},
		{"eq and range", `{"a":{"$eq":1,"$lt":2}}`, "combine only"},
		{"two lower bounds", `{"a":{"$gt":1,"$gte":2}}`, "combine only"},
		{"mixed range types", `{"a":{"$gt":1,"$lt":"z"}}`, "same type"},
		{"array value", `{"a":[1,2]}`, "not an array"},
		{"huge number", `{"a":1e999}`, "not a finite number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if err == nil {
				t.Fatalf("accepted %s", tc.in)
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestMatchSemantics(t *testing.T) {
	s, n, b, null, other := Str, func(x float64) Value { return Value{Kind: Number, N: x} }, func(x bool) Value { return Value{Kind: Bool, B: x} }, Value{}, Value{Kind: Other}
	tests := []struct {
		name   string
		filter string
		v      Value
		want   bool
	}{
		{"implicit eq", `{"a":"x"}`, s("x"), true},
		{"implicit eq other", `{"a":"x"}`, s("y"), false},
		{"eq number", `{"a":{"$eq":3}}`, n(3), true},
		{"eq type differs", `{"a":{"$eq":3}}`, s("3"), false},
		{"eq bool", `{"a":true}`, b(true), true},
		{"eq null matches missing", `{"a":null}`, null, true},
		{"eq null not a value", `{"a":null}`, s(""), false},
		{"ne matches missing", `{"a":{"$ne":"x"}}`, null, true},
		{"ne matches other type", `{"a":{"$ne":"x"}}`, other, true},
		{"ne same", `{"a":{"$ne":"x"}}`, s("x"), false},
		{"ne null", `{"a":{"$ne":null}}`, s("x"), true},
		{"in", `{"a":{"$in":["x",2,null]}}`, n(2), true},
		{"in null", `{"a":{"$in":["x",null]}}`, null, true},
		{"in miss", `{"a":{"$in":["x"]}}`, s("y"), false},
		{"nin", `{"a":{"$nin":["x"]}}`, s("y"), true},
		{"nin hit", `{"a":{"$nin":["x"]}}`, s("x"), false},
		{"nin missing", `{"a":{"$nin":["x"]}}`, null, true},
		{"lt", `{"a":{"$lt":5}}`, n(4.5), true},
		{"lt equal", `{"a":{"$lt":5}}`, n(5), false},
		{"lte equal", `{"a":{"$lte":5}}`, n(5), true},
		{"gt", `{"a":{"$gt":5}}`, n(6), true},
		{"gte", `{"a":{"$gte":5}}`, n(5), true},
		{"range both", `{"a":{"$gte":1,"$lt":2}}`, n(1.5), true},
		{"range both out", `{"a":{"$gte":1,"$lt":2}}`, n(2), false},
		{"range string", `{"a":{"$gt":"b"}}`, s("c"), true},
		{"range string lexicographic", `{"a":{"$lt":"b"}}`, s("abc"), true},
		{"range type differs", `{"a":{"$gt":1}}`, s("5"), false},
		{"range missing", `{"a":{"$gt":1}}`, null, false},
		{"long strings compare on 64 bytes", `{"a":"` + strings.Repeat("x", 64) + `tail"}`, s(strings.Repeat("x", 64) + "other"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.filter))
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Clauses[0].Match(tc.v); got != tc.want {
				t.Fatalf("Match(%+v) = %v, want %v", tc.v, got, tc.want)
			}
		})
	}
}

func TestStrCutsOnUTF8Boundary(t *testing.T) {
	v := Str(strings.Repeat("a", 63) + "é")
	if len(v.S) != 63 {
		t.Fatalf("len %d", len(v.S))
	}
}

func TestDottedLookup(t *testing.T) {
	var m map[string]any
	json.Unmarshal([]byte(`{"a":{"b":{"c":1}},"x":2}`), &m)
	f, err := Parse([]byte(`{"a.b.c":1,"x":{"$gt":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Clauses) != 2 || f.Clauses[0].Field != "a.b.c" {
		t.Fatalf("%+v", f.Clauses)
	}
	if v, ok := Lookup(m, f.Clauses[0].Path); !ok || v.(float64) != 1 {
		t.Fatalf("lookup %v %v", v, ok)
	}
	if _, ok := Lookup(m, []string{"x", "y"}); ok {
		t.Fatal("looked into a number")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a.b":{"$in":["x",null]}}`, `{"a":{"$gte":1,"$lt":2}}`, `{"a":{"$ne":null}}`, `{"$x":1}`, `{"a":{"b":1}}`, `[]`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		flt, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		if len(flt.Clauses) == 0 {
			t.Fatal("accepted an empty filter")
		}
		for _, c := range flt.Clauses {
			if len(c.Conds) == 0 || len(c.Path) == 0 || len(c.Path) > MaxDepth {
				t.Fatalf("bad clause %+v", c)
			}
			for _, v := range []Value{{}, Str("x"), {Kind: Number, N: 1}, {Kind: Bool, B: true}, {Kind: Other}} {
				c.Match(v)
			}
		}
	})
}
