package blobs_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/blobs"
)

func TestPutDedupRead(t *testing.T) {
	s, err := blobs.Open(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	sum, written, err := s.Put([]byte("hello"))
	if err != nil || !written || sum != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Fatalf("Put = %s %v %v", sum, written, err)
	}
	if _, written, _ := s.Put([]byte("hello")); written {
		t.Fatal("the same bytes were written twice")
	}
	got, err := s.Read(sum)
	if err != nil || string(got) != "hello" || !s.Has(sum) {
		t.Fatalf("Read = %q %v", got, err)
	}
	head, err := s.Head(sum, 2)
	if err != nil || string(head) != "he" {
		t.Fatalf("Head = %q %v", head, err)
	}
	p, _ := s.Path(sum)
	if !strings.HasSuffix(p, filepath.Join("2c", sum)) {
		t.Fatalf("path %s", p)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	missing := strings.Repeat("0", 64)
	if _, err := s.Read(missing); !errors.Is(err, blobs.ErrNotFound) {
		t.Fatalf("Read missing: %v", err)
	}
	if _, err := s.Open("../../etc/passwd"); !errors.Is(err, blobs.ErrBadSum) {
		t.Fatalf("Open bad name: %v", err)
	}
}

func TestValidSum(t *testing.T) {
	for s, want := range map[string]bool{
		strings.Repeat("a", 64): true, strings.Repeat("A", 64): false, strings.Repeat("a", 63): false,
		strings.Repeat("g", 64): false, "": false, "../" + strings.Repeat("a", 61): false,
	} {
		if blobs.ValidSum(s) != want {
			t.Errorf("ValidSum(%q) = %v", s, !want)
		}
	}
}
