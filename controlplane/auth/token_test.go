package auth

import (
	"strings"
	"testing"
	"time"
)

func TestNewKeyShape(t *testing.T) {
	key, prefix, hash := NewKey()
	if !ValidKeyFormat(key) || !strings.HasPrefix(key, prefix) || len(prefix) != 16 {
		t.Fatalf("key %q prefix %q", key, prefix)
	}
	if !SecretMatches(key, hash) || SecretMatches(key+"x", hash) || SecretMatches(prefix, hash) {
		t.Fatal("hash comparison wrong")
	}
	for _, bad := range []string{"", key[:len(key)-1], strings.ToUpper(key), "xyz_" + key[4:], strings.Replace(key, "_", "-", 2)} {
		if ValidKeyFormat(bad) {
			t.Errorf("ValidKeyFormat(%q) = true", bad)
		}
	}
}

// RFC 6238 appendix B vectors (SHA-1, secret "12345678901234567890"),
// truncated to 6 digits.
func TestTOTPVectors(t *testing.T) {
	secret := b32.EncodeToString([]byte("12345678901234567890"))
	for _, tc := range []struct {
		unix int64
		want string
	}{
		{59, "287082"}, {1111111109, "081804"}, {1111111111, "050471"}, {1234567890, "005924"}, {2000000000, "279037"}, {20000000000, "353130"},
	} {
		got, err := TOTPCode(secret, tc.unix/30)
		if err != nil || got != tc.want {
			t.Errorf("T=%d: %s, %v; want %s", tc.unix, got, err, tc.want)
		}
	}
}

func TestCheckTOTP(t *testing.T) {
	secret := NewTOTPSecret()
	now := time.Unix(1_800_000_000, 0)
	code, _ := TOTPCode(secret, TOTPStep(now))
	prev, _ := TOTPCode(secret, TOTPStep(now)-1)
	old, _ := TOTPCode(secret, TOTPStep(now)-3)
	for _, tc := range []struct {
		name string
		code string
		last int64
		ok   bool
	}{
		{"current", code, 0, true},
		{"previous step (drift)", prev, 0, true},
		{"too old", old, 0, false},
		{"replay", code, TOTPStep(now), false},
		{"wrong", "000000", 0, code == "000000"},
		{"short", "12345", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := CheckTOTP(secret, tc.code, now, tc.last); ok != tc.ok {
				t.Fatalf("CheckTOTP = %v, want %v", ok, tc.ok)
			}
		})
	}
}
