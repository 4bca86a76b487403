package cache

import (
	"bytes"
	"slices"
	"testing"
)

func TestParseVary(t *testing.T) {
	tests := []struct {
		name     string
		lines    []string
		want     []string
		wantStar bool
	}{
		{name: "one name, canonical form", lines: []string{"accept-encoding"}, want: []string{"Accept-Encoding"}},
		{name: "list sorted and deduplicated", lines: []string{"User-Agent, accept-encoding", "ACCEPT-ENCODING"}, want: []string{"Accept-Encoding", "User-Agent"}},
		{name: "§4.1 star", lines: []string{"*"}, wantStar: true},
		{name: "§4.1 star among names", lines: []string{"Accept, *"}, want: []string{"Accept"}, wantStar: true},
		{name: "member that is not a field name treated as star", lines: []string{"Accept Encoding"}, wantStar: true},
		{name: "empty members ignored", lines: []string{" , Accept ,, "}, want: []string{"Accept"}},
		{name: "empty value", lines: []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newResp(t, 200, "", func() []string {
				var hs []string
				for _, l := range tt.lines {
					hs = append(hs, "Vary: "+l)
				}
				return hs
			}()...)
			got, star := responseVary(&h.Header)
			if !slices.Equal(got, tt.want) || star != tt.wantStar {
				t.Fatalf("Vary %q = %q, %v; want %q, %v", tt.lines, got, star, tt.want, tt.wantStar)
			}
		})
	}
}

func TestAppendVaryKey(t *testing.T) {
	names := []string{"Accept-Encoding", "Accept-Language"}
	tests := []struct {
		name      string
		a, b      []string // request header lines
		wantEqual bool
	}{
		{name: "§4.1 same values match", a: []string{"Accept-Encoding: gzip"}, b: []string{"Accept-Encoding: gzip"}, wantEqual: true},
		{name: "§4.1 different values differ", a: []string{"Accept-Encoding: gzip"}, b: []string{"Accept-Encoding: br"}},
		{name: "§4.1 both absent match", a: nil, b: []string{"Accept: */*"}, wantEqual: true},
		{name: "§4.1 absent never matches present", a: nil, b: []string{"Accept-Encoding: gzip"}},
		{name: "§4.1 absent never matches empty", a: nil, b: []string{"Accept-Encoding: "}},
		{name: "§4.1 whitespace around members normalized", a: []string{"Accept-Encoding: gzip,br"}, b: []string{"Accept-Encoding:  gzip ,\tbr "}, wantEqual: true},
		{name: "§4.1 field lines combined", a: []string{"Accept-Encoding: gzip, br"}, b: []string{"Accept-Encoding: gzip", "Accept-Encoding: br"}, wantEqual: true},
		{name: "§4.1 empty members dropped", a: []string{"Accept-Encoding: gzip, br"}, b: []string{"Accept-Encoding: gzip,,br,"}, wantEqual: true},
		{name: "§4.1 member order matters", a: []string{"Accept-Encoding: gzip, br"}, b: []string{"Accept-Encoding: br, gzip"}},
		{name: "§4.1 field names case-insensitive", a: []string{"accept-language: fr"}, b: []string{"ACCEPT-LANGUAGE: fr"}, wantEqual: true},
		{name: "values of one field do not leak into another", a: []string{"Accept-Encoding: gzip", "Accept-Language: fr"}, b: []string{"Accept-Encoding: gzip,fr"}},
		{name: "unrelated fields ignored", a: []string{"Accept-Encoding: gzip", "Cookie: a=1"}, b: []string{"Accept-Encoding: gzip", "User-Agent: x"}, wantEqual: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ka := AppendVaryKey(nil, names, &newReq(t, "GET /", tt.a...).Header)
			kb := AppendVaryKey(nil, names, &newReq(t, "GET /", tt.b...).Header)
			if got := bytes.Equal(ka, kb); got != tt.wantEqual {
				t.Fatalf("keys equal = %v, want %v\n%q\n%q", got, tt.wantEqual, ka, kb)
			}
		})
	}
}
