package mail

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseAddress(t *testing.T) {
	for _, c := range []struct {
		in, want string // want "" refuses
	}{
		{"ada@example.com", "<ada@example.com>"},
		{"  Ada Lovelace <Ada@Example.COM> ", `"Ada Lovelace" <Ada@example.com>`},
		{`"Lovelace, Ada" <ada@example.com>`, `"Lovelace, Ada" <ada@example.com>`},
		{"ada+tag@mail.example.co.uk", "<ada+tag@mail.example.co.uk>"},
		{"ada@bücher.example", "<ada@xn--bcher-kva.example>"},
		{"=?utf-8?q?J=C3=B6rg?= <jorg@example.com>", "=?utf-8?q?J=C3=B6rg?= <jorg@example.com>"},
		{"ada@example.com.", ""},
		{"", ""},
		{"ada", ""},
		{"ada@", ""},
		{"@example.com", ""},
		{"ada@localhost", ""},
		{"ada@[192.0.2.1]", ""},
		{"ada@192.0.2.1", ""},
		{"ada@-example.com", ""},
		{"ada@exa_mple.com", ""},
		{"ada@example..com", ""},
		{"ada@example.com, bob@example.com", ""},
		{"ada@example.com\r\nBcc: eve@example.com", ""},
		{"ada@example.com\n", ""},
		{"Ada\x00 <ada@example.com>", ""},
		{"Ada\u0085 <ada@example.com>", ""},
		{"jörg@example.com", ""},
		{strings.Repeat("a", 65) + "@example.com", ""},
		{"ada@" + strings.Repeat("a", 64) + ".com", ""},
		{"ada@" + strings.Repeat(strings.Repeat("a", 60)+".", 5) + "com", ""},
		{strings.Repeat("x", maxAddressInput+1), ""},
	} {
		t.Run(c.in, func(t *testing.T) {
			a, err := ParseAddress(c.in)
			switch {
			case c.want == "" && err == nil:
				t.Fatalf("accepted as %s", a)
			case c.want == "" && !errors.Is(err, ErrBadAddress):
				t.Fatalf("error %v is not ErrBadAddress", err)
			case c.want != "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && a.String() != c.want:
				t.Fatalf("= %s, want %s", a, c.want)
			}
		})
	}
}

func TestRecipientsJSON(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{`"ada@example.com"`, []string{"ada@example.com"}, true},
		{`["ada@example.com","bob@example.com"]`, []string{"ada@example.com", "bob@example.com"}, true},
		{`[]`, []string{}, true},
		{`7`, nil, false},
		{`{"a":1}`, nil, false},
		{`[1]`, nil, false},
	} {
		var r Recipients
		err := json.Unmarshal([]byte(c.in), &r)
		if (err == nil) != c.ok || c.ok && strings.Join(r, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: %v, %v", c.in, r, err)
		}
	}
}

// FuzzParseAddress: whatever the input, an accepted address has no
// control character (no header can be added through it), a lowercase ASCII
// domain with a dot, and reads back as itself.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"ada@example.com", "Ada <ada@example.com>", `"a b"@example.com`, "ada@bücher.example",
		"ada@example.com\r\nBcc: x@y.z", "=?utf-8?q?J=C3=B6rg?= <j@example.com>", "a@[1.2.3.4]", "(comment) a@b.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddress(s)
		if err != nil {
			return
		}
		out := a.String()
		if strings.ContainsFunc(out, isControl) || strings.ContainsFunc(a.Address, isControl) {
			t.Fatalf("%q gave %q with a control character", s, out)
		}
		at := strings.LastIndexByte(a.Address, '@')
		domain := a.Address[at+1:]
		if at <= 0 || domain != strings.ToLower(domain) || !strings.Contains(domain, ".") {
			t.Fatalf("%q gave address %q", s, a.Address)
		}
		for i := 0; i < len(a.Address); i++ {
			if a.Address[i] >= 0x80 {
				t.Fatalf("%q gave a non-ASCII address %q", s, a.Address)
			}
		}
		b, err := ParseAddress(out)
		if err != nil || b.Address != a.Address {
			t.Fatalf("%q -> %q does not read back: %v, %v", s, out, b, err)
		}
	})
}
