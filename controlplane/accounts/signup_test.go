package accounts_test

import (
	"testing"

	"github.com/svcplatform/platform/controlplane/accounts"
)

func TestParseSignUpPolicy(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", "closed", true},
		{"closed", "closed", true},
		{"open", "open", true},
		{" open ", "open", true},
		{"domains:Example.com, example.org", "domains:example.com,example.org", true},
		{"domains:", "", false},
		{"domains:a@example.com", "", false},
		{"domains:localhost", "", false},
		{"invite", "", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			p, err := accounts.ParseSignUpPolicy(tc.in)
			if (err == nil) != tc.ok || (tc.ok && p.String() != tc.want) {
				t.Fatalf("%q -> %v %v, want %q ok=%v", tc.in, p, err, tc.want, tc.ok)
			}
		})
	}
}

// The policy's text form reads back as itself.
func FuzzParseSignUpPolicy(f *testing.F) {
	for _, s := range []string{"closed", "open", "domains:example.com,example.org", "domains:", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := accounts.ParseSignUpPolicy(s)
		if err != nil {
			return
		}
		q, err := accounts.ParseSignUpPolicy(p.String())
		if err != nil || q.String() != p.String() {
			t.Fatalf("%q -> %q -> %q, %v", s, p, q, err)
		}
	})
}
