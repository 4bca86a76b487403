package seal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSealOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys", "seal.key")
	s, err := LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v", fi.Mode(), err)
	}
	sealed := s.Seal([]byte("hunter2"), []byte("row1"))
	if bytes.Contains(sealed, []byte("hunter2")) {
		t.Fatal("plaintext visible in sealed value")
	}
	again, err := LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		sealed []byte
		aad    string
		ok     bool
	}{
		{"same key and aad", sealed, "row1", true},
		{"other row", sealed, "row2", false},
		{"altered", append(append([]byte{}, sealed[:len(sealed)-1]...), sealed[len(sealed)-1]^1), "row1", false},
		{"truncated", sealed[:5], "row1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := again.Open(tc.sealed, []byte(tc.aad))
			if tc.ok && (err != nil || string(got) != "hunter2") {
				t.Fatalf("Open = %q, %v", got, err)
			}
			if !tc.ok && !errors.Is(err, ErrOpen) {
				t.Fatalf("Open err = %v, want ErrOpen", err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "missing.key")); err == nil {
		t.Fatal("a missing shared key was accepted")
	}
	short := filepath.Join(dir, "short.key")
	os.WriteFile(short, []byte("too short"), 0o600)
	if _, err := Load(short); err == nil {
		t.Fatal("a short key was accepted")
	}
	shared := filepath.Join(dir, "shared.key")
	a, err := LoadOrCreate(shared)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(shared)
	if err != nil {
		t.Fatal(err)
	}
	out, err := b.Open(a.Seal([]byte("secret"), []byte("row")), []byte("row"))
	if err != nil || string(out) != "secret" {
		t.Fatalf("a replica with the shared key opens %q, %v", out, err)
	}
}
