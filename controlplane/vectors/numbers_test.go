package vectors

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

func TestNumbers(t *testing.T) {
	tests := []struct {
		in   string
		want []float32
		bad  int
		err  bool
	}{
		{`[]`, []float32{}, -1, false},
		{` [ 1 , -2.5e1,0 ] `, []float32{1, -25, 0}, -1, false},
		{`[1e39, 2]`, nil, 0, false},
		{`[1, 1e-999]`, nil, -1, false}, // underflow to zero is a finite number
		{`[1,"2"]`, nil, -1, true},
		{`[1,[2]]`, nil, -1, true},
		{`[true]`, nil, -1, true},
		{`{"a":1}`, nil, -1, true},
		{`[1,`, nil, -1, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var n Numbers
			err := json.Unmarshal([]byte(tc.in), &n)
			if (err != nil) != tc.err {
				t.Fatalf("err %v", err)
			}
			if err != nil {
				return
			}
			if n.bad != tc.bad {
				t.Fatalf("bad %d, want %d", n.bad, tc.bad)
			}
			if tc.want != nil && (len(n.vals) != len(tc.want) || len(tc.want) > 0 && n.vals[1] != tc.want[1]) {
				t.Fatalf("vals %v, want %v", n.vals, tc.want)
			}
		})
	}
	out, _ := json.Marshal(NewNumbers([]float32{1.5, -2}))
	if string(out) != `[1.5,-2]` {
		t.Fatal(string(out))
	}
}

// FuzzNumbers: on valid JSON, Numbers agrees with encoding/json's own
// numbers; on anything else it refuses without a panic.
func FuzzNumbers(f *testing.F) {
	for _, s := range []string{`[1,2,3]`, `[ -1.5e3 , 0 ]`, `[]`, `[1e39]`, `["x"]`, `[[1]]`, `[1,`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var n Numbers
		err := n.UnmarshalJSON(data)
		if !json.Valid(data) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var elems []any
		refErr := dec.Decode(&elems)
		var ref []json.Number
		for _, e := range elems {
			if x, ok := e.(json.Number); ok {
				ref = append(ref, x)
			} else {
				refErr = errNotNumbers
			}
		}
		if refErr != nil || elems == nil {
			if err == nil && refErr != nil {
				t.Fatalf("accepted %q, which is not an array of numbers", data)
			}
			return
		}
		if err != nil {
			t.Fatalf("refused %q: %v", data, err)
		}
		if len(ref) != len(n.vals) {
			t.Fatalf("%d values, want %d", len(n.vals), len(ref))
		}
		for i, x := range ref {
			f, perr := strconv.ParseFloat(string(x), 32)
			finite := perr == nil && !math.IsInf(f, 0)
			if finite && n.vals[i] != float32(f) {
				t.Fatalf("value %d: %v, want %v", i, n.vals[i], f)
			}
			if !finite && (n.bad < 0 || n.bad > i) {
				t.Fatalf("value %d (%s) not flagged", i, x)
			}
		}
	})
}
