// Package blobs is the content-addressed store of deployed files, repo
// snapshots, media and exports: every blob is named by the lower-case hex
// SHA-256 of its bytes and kept once, so a file that did not change costs
// nothing in the next repo commit or deployment. Backend is the interface;
// *Store keeps blobs in a directory (the embedded default, DATA/blobs) and
// *S3 in an S3-compatible bucket (AWS S3, MinIO, Ceph, Garage) for
// installations with several control-plane replicas. OpenBackend picks one
// from a location string (a path or s3://BUCKET/PREFIX).
//
// File layout: DIR/<first two hex digits>/<64 hex digits>. A blob is written
// to a temporary file, fsynced, renamed into place and the directory
// fsynced, so a crash leaves either the whole blob or nothing under its
// name. Blobs are immutable once written. The S3 keys follow the same
// layout under a prefix.
package blobs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// ErrNotFound is returned for a blob the store does not hold.
var ErrNotFound = errors.New("blobs: not found")

// ErrBadSum is returned for a name that is not 64 lower-case hex digits.
var ErrBadSum = errors.New("blobs: not a sha256 name")

// Store is a directory of content-addressed blobs. It is safe for
// concurrent use by goroutines and processes.
type Store struct {
	dir string
}

// Open returns the store rooted at dir, creating the directory.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("blobs: open %s: %w", dir, err)
	}
	return &Store{dir: dir}, nil
}

// Dir returns the directory the store is rooted at.
func (s *Store) Dir() string { return s.dir }

// Sum returns the name of data: its SHA-256 in lower-case hex.
func Sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// ValidSum reports whether s is a well-formed blob name.
func ValidSum(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Path returns where the blob named sum is (or would be) stored.
func (s *Store) Path(sum string) (string, error) {
	if !ValidSum(sum) {
		return "", ErrBadSum
	}
	return filepath.Join(s.dir, sum[:2], sum), nil
}

// Put stores data and returns its name and whether it was newly written
// (false when the store already held it: deduplicated).
func (s *Store) Put(data []byte) (sum string, written bool, err error) {
	sum = Sum(data)
	p, _ := s.Path(sum)
	if _, err := os.Stat(p); err == nil {
		touch(p)
		return sum, false, nil
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", false, fmt.Errorf("blobs: put %s: %w", sum, err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", false, fmt.Errorf("blobs: put %s: %w", sum, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return "", false, fmt.Errorf("blobs: put %s: %w", sum, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", false, fmt.Errorf("blobs: put %s: %w", sum, err)
	}
	if err := f.Close(); err != nil {
		return "", false, fmt.Errorf("blobs: put %s: %w", sum, err)
	}
	if err := os.Chmod(tmp, 0o640); err != nil {
		return "", false, fmt.Errorf("blobs: put %s: %w", sum, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", false, fmt.Errorf("blobs: put %s: %w", sum, err)
	}
	syncDir(dir)
	return sum, true, nil
}

// touch renews a deduplicated blob's time: a write that found it held
// names it again, so cleanup (gc.go) must see it as young. Best effort: a
// blob whose time cannot change is still there for the writer.
func touch(p string) {
	now := time.Now()
	os.Chtimes(p, now, now)
}

// Has reports whether the store holds the blob named sum.
func (s *Store) Has(sum string) bool {
	p, err := s.Path(sum)
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}

// Open opens the blob named sum for reading.
func (s *Store) Open(sum string) (*os.File, error) {
	p, err := s.Path(sum)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, sum)
	}
	if err != nil {
		return nil, fmt.Errorf("blobs: open %s: %w", sum, err)
	}
	return f, nil
}

// Read returns the bytes of the blob named sum.
func (s *Store) Read(sum string) ([]byte, error) {
	f, err := s.Open(sum)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("blobs: read %s: %w", sum, err)
	}
	return data, nil
}

// Head returns up to n leading bytes of the blob named sum (for content
// sniffing).
func (s *Store) Head(sum string, n int) ([]byte, error) {
	f, err := s.Open(sum)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := io.CopyN(&b, f, int64(n)); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("blobs: read %s: %w", sum, err)
	}
	return b.Bytes(), nil
}
