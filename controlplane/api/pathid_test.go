package api

import "testing"

func TestPathID(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"db_123", "db_123", true},
		{"  mem_a  ", "mem_a", true},
		{"key:with:colons", "key:with:colons", true},
		{"", "", false},
		{"   ", "", false},
		{"a/b", "", false},
		{"../x", "", false},
		{"..", "", false},
		{".", "", false},
		{"a..b", "a..b", true},
		{"a?b", "", false},
		{"a#b", "", false},
		{"a%2Fb", "", false},
		{`a\b`, "", false},
		{"a b", "", false},
		{"a\x00b", "", false},
		{"a\x7fb", "", false},
		{string(make([]byte, 101)), "", false},
	} {
		got, ok := PathID(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("PathID(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
