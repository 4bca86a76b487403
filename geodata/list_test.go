package geodata

import (
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"
)

func TestParseOverrides(t *testing.T) {
	p := netip.MustParsePrefix
	for _, tc := range []struct {
		name    string
		in      string
		want    []Override
		errLine int    // 0 when accepted
		errPart string // part of the error
	}{
		{name: "empty", in: ""},
		{name: "comments only", in: "# nothing\n\n   # more\n"},
		{name: "network", in: "10.0.0.0/8 DE", want: []Override{{p("10.0.0.0/8"), Country{'D', 'E'}}}},
		{name: "address", in: "192.0.2.1 fr\n", want: []Override{{p("192.0.2.1/32"), Country{'F', 'R'}}}},
		{name: "ipv6 address", in: "2001:db8::1 NL", want: []Override{{p("2001:db8::1/128"), Country{'N', 'L'}}}},
		{name: "zone dropped", in: "fe80::1%eth0 NL", want: []Override{{p("fe80::1/128"), Country{'N', 'L'}}}},
		{name: "mapped network", in: "::ffff:10.0.0.0/104 DE", want: []Override{{p("10.0.0.0/8"), Country{'D', 'E'}}}},
		{name: "mapped address", in: "::ffff:10.0.0.1 DE", want: []Override{{p("10.0.0.1/32"), Country{'D', 'E'}}}},
		{name: "tabs crlf bom and comment", in: "\xef\xbb\xbf\t10.0.0.0/8\tDE\t# office\r\n", want: []Override{{p("10.0.0.0/8"), Country{'D', 'E'}}}},
		{name: "XX and T1", in: "10.0.0.0/8 XX\n172.16.0.0/12 t1", want: []Override{{p("10.0.0.0/8"), Unknown}, {p("172.16.0.0/12"), Anonymous}}},
		{name: "nested", in: "10.0.0.0/8 DE\n10.1.0.0/16 FR", want: []Override{{p("10.0.0.0/8"), Country{'D', 'E'}}, {p("10.1.0.0/16"), Country{'F', 'R'}}}},
		{name: "same twice", in: "10.0.0.0/8 DE\n10.0.0.0/8 de", want: []Override{{p("10.0.0.0/8"), Country{'D', 'E'}}}},
		{name: "conflict", in: "10.0.0.0/8 DE\n\n10.0.0.0/8 FR", errLine: 3, errPart: "already assigned to DE"},
		{name: "UK", in: "# x\n10.0.0.0/8 UK", errLine: 2, errPart: "use GB"},
		{name: "unknown code", in: "10.0.0.0/8 EU", errLine: 1, errPart: "unknown country"},
		{name: "missing country", in: "10.0.0.0/8", errLine: 1, errPart: "got 1 fields"},
		{name: "three fields", in: "10.0.0.0/8 DE FR", errLine: 1, errPart: "got 3 fields"},
		{name: "host bits", in: "10.1.2.3/8 DE", errLine: 1, errPart: "did you mean 10.0.0.0/8"},
		{name: "bad bits", in: "10.0.0.0/33 DE", errLine: 1, errPart: "bad network"},
		{name: "bad address", in: "10.0.0 DE", errLine: 1, errPart: "bad address"},
		{name: "country first", in: "DE 10.0.0.0/8", errLine: 1, errPart: "bad address"},
		{name: "long line", in: "10.0.0.0/8 DE\n" + strings.Repeat("x", maxLine+1), errLine: 2, errPart: "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseOverrides(strings.NewReader(tc.in))
			if tc.errLine != 0 {
				var pe *ParseError
				if !errors.As(err, &pe) || pe.Line != tc.errLine || !strings.Contains(err.Error(), tc.errPart) {
					t.Fatalf("error %v; want line %d containing %q", err, tc.errLine, tc.errPart)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("override %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestParsePrefixList(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    string // the prefixes, space-separated
		errLine int
		errPart string
	}{
		{name: "empty", in: ""},
		{name: "mixed", in: "# list\n45.83.64.0/22\n104.244.72.115 # one\n\n2001:db8::/32\n2001:db8::1\n", want: "45.83.64.0/22 104.244.72.115/32 2001:db8::/32 2001:db8::1/128"},
		{name: "duplicates", in: "10.0.0.0/8\n10.0.0.0/8", want: "10.0.0.0/8 10.0.0.0/8"},
		{name: "mapped", in: "::ffff:192.0.2.0/120", want: "192.0.2.0/24"},
		{name: "two fields", in: "10.0.0.0/8\n10.0.0.0/8 DE", errLine: 2, errPart: "got 2 fields"},
		{name: "host bits", in: "2001:db8::1/32", errLine: 1, errPart: "did you mean 2001:db8::/32"},
		{name: "garbage", in: "\n\nexample.com", errLine: 3, errPart: "bad address"},
		{name: "zone in network", in: "fe80::%eth0/64", errLine: 1, errPart: "bad network"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePrefixList(strings.NewReader(tc.in))
			if tc.errLine != 0 {
				var pe *ParseError
				if !errors.As(err, &pe) || pe.Line != tc.errLine || !strings.Contains(err.Error(), tc.errPart) {
					t.Fatalf("error %v; want line %d containing %q", err, tc.errLine, tc.errPart)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, p := range got {
				s = append(s, p.String())
			}
			if g := strings.Join(s, " "); g != tc.want {
				t.Errorf("got %q, want %q", g, tc.want)
			}
		})
	}
}

// TestFixtureLists checks that the hand-written fixtures parse.
func TestFixtureLists(t *testing.T) {
	for name, parse := range map[string]func(f *os.File) (int, error){
		"overrides.txt": func(f *os.File) (int, error) {
			l, err := ParseOverrides(f)
			return len(l), err
		},
		"anonymizers.txt": func(f *os.File) (int, error) {
			l, err := ParsePrefixList(f)
			return len(l), err
		},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(fixture(name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			n, err := parse(f)
			if err != nil || n == 0 {
				t.Fatalf("%d entries, %v", n, err)
			}
		})
	}
}
