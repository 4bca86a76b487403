package geodata

import (
	"errors"
	"strings"
	"testing"
)

func TestParseCountry(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Country
		errPart string // "" when accepted
	}{
		{in: "DE", want: Country{'D', 'E'}},
		{in: "de", want: Country{'D', 'E'}},
		{in: "gB", want: Country{'G', 'B'}},
		{in: "XX", want: Unknown},
		{in: "T1", want: Anonymous},
		{in: "t1", want: Anonymous},
		{in: "XK", want: Country{'X', 'K'}},
		{in: "ZW", want: Country{'Z', 'W'}},
		{in: "UK", errPart: "use GB"},
		{in: "uk", errPart: "use GB"},
		{in: "EU", errPart: "unknown country"},
		{in: "AN", errPart: "unknown country"},
		{in: "ZZ", errPart: "unknown country"},
		{in: "T2", errPart: "unknown country"},
		{in: "", errPart: "unknown country"},
		{in: "D", errPart: "unknown country"},
		{in: "DEU", errPart: "unknown country"},
		{in: "D\x00", errPart: "unknown country"},
		{in: "\xc3\x9f", errPart: "unknown country"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseCountry(tc.in)
			if tc.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errPart) || !errors.Is(err, ErrUnknownCountry) {
					t.Fatalf("ParseCountry(%q) = %v, %v; want an ErrUnknownCountry containing %q", tc.in, got, err, tc.errPart)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseCountry(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if !got.Valid() {
				t.Errorf("%v.Valid() = false", got)
			}
		})
	}
}

func TestISO3166Table(t *testing.T) {
	n := 0
	for a := range 26 {
		for b := range 26 {
			if (Country{byte('A' + a), byte('A' + b)}).Valid() {
				n++
			}
		}
	}
	// 249 assigned codes, XK, and XX.
	if n != 251 {
		t.Errorf("%d two-letter codes are valid, want 251", n)
	}
	for _, c := range []Country{{'d', 'e'}, {}, {'U', 'K'}, {'A', '['}, {'@', 'A'}} {
		if c.Valid() {
			t.Errorf("%q.Valid() = true", c[:])
		}
	}
}
