package passhash

import (
	"strings"
	"testing"
)

var fast = Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}

func TestHashVerify(t *testing.T) {
	h, err := HashWith(fast, "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := HashWith(fast, "correct horse")
	if h == h2 {
		t.Fatal("same password hashed twice to the same string: salt missing")
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("not a PHC argon2id string: %s", h)
	}
	for _, tc := range []struct {
		name, pw string
		want     bool
	}{
		{"right", "correct horse", true},
		{"wrong", "correct horsE", false},
		{"empty", "", false},
		{"too long", strings.Repeat("a", MaxPasswordLen+1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := Verify(h, tc.pw)
			if err != nil || ok != tc.want {
				t.Fatalf("Verify = %v, %v; want %v", ok, err, tc.want)
			}
		})
	}
}

func TestVerifyMalformed(t *testing.T) {
	for _, s := range []string{"", "plain", "$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5", "$argon2id$v=18$m=64,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=0,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5", "$argon2id$v=19$m=64,t=1,p=1$!!$a2V5"} {
		if ok, err := Verify(s, "x"); ok || err == nil {
			t.Errorf("Verify(%q) = %v, %v; want false and an error", s, ok, err)
		}
	}
}

func FuzzVerify(f *testing.F) {
	h, _ := HashWith(fast, "pw")
	f.Add(h, "pw")
	f.Add("$argon2id$v=19$m=64,t=1,p=1$$", "")
	f.Fuzz(func(t *testing.T, enc, pw string) {
		if strings.Contains(enc, "m=") && !strings.Contains(enc, "m=64,") {
			return // keep the fuzzer from asking for huge memory
		}
		Verify(enc, pw)
	})
}
