package plans

import "testing"

func TestLookup(t *testing.T) {
	defaults := map[Name]int{Hobby: 1, Pro: 10}
	set := map[Name]int{Pro: 20, Team: 0}
	for _, tc := range []struct {
		name string
		set  map[Name]int
		p    Name
		want int
	}{
		{"the operator's value", set, Pro, 20},
		{"the operator's zero is a value", set, Team, 0},
		{"the default when the operator set none", set, Hobby, 1},
		{"no operator table", nil, Pro, 10},
		{"a plan no table knows gets Hobby's", set, Enterprise, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Lookup(tc.set, defaults, tc.p); got != tc.want {
				t.Fatalf("Lookup(%v) = %d, want %d", tc.p, got, tc.want)
			}
		})
	}
}
