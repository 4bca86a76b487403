package blobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// This file holds the file store's half of Backend beyond the methods its
// first consumers call (blobs.go): streaming puts, Stat, Get, Delete, List.

// PutReader stores the bytes of r, hashing them on the way to a temporary
// file, and renames the file into place under its sum; memory stays flat
// whatever the size. A blob already held is not rewritten.
func (s *Store) PutReader(ctx context.Context, r io.Reader) (Info, bool, error) {
	f, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return Info{}, false, fmt.Errorf("blobs: put: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), ctxReader{ctx, r})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Info{}, false, fmt.Errorf("blobs: put: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	p, _ := s.Path(sum)
	if st, err := os.Stat(p); err == nil {
		touch(p)
		if st2, err := os.Stat(p); err == nil {
			st = st2
		}
		return Info{Sum: sum, Size: st.Size(), ModTime: st.ModTime()}, false, nil
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Info{}, false, fmt.Errorf("blobs: put %s: %w", sum, err)
	}
	if err := os.Chmod(tmp, 0o640); err != nil {
		return Info{}, false, fmt.Errorf("blobs: put %s: %w", sum, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return Info{}, false, fmt.Errorf("blobs: put %s: %w", sum, err)
	}
	syncDir(dir)
	st, err := os.Stat(p)
	if err != nil {
		return Info{}, false, fmt.Errorf("blobs: put %s: %w", sum, err)
	}
	return Info{Sum: sum, Size: n, ModTime: st.ModTime()}, true, nil
}

// Stat returns the size and mtime of the blob named sum.
func (s *Store) Stat(_ context.Context, sum string) (Info, error) {
	p, err := s.Path(sum)
	if err != nil {
		return Info{}, err
	}
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, sum)
	}
	if err != nil {
		return Info{}, fmt.Errorf("blobs: stat %s: %w", sum, err)
	}
	return Info{Sum: sum, Size: st.Size(), ModTime: st.ModTime()}, nil
}

// Get opens the blob named sum as an Object (the file itself).
func (s *Store) Get(_ context.Context, sum string) (Object, error) {
	f, err := s.Open(sum)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("blobs: open %s: %w", sum, err)
	}
	return fileObject{f, Info{Sum: sum, Size: st.Size(), ModTime: st.ModTime()}}, nil
}

// Delete removes the blob named sum; a missing blob is not an error.
func (s *Store) Delete(_ context.Context, sum string) error {
	p, err := s.Path(sum)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blobs: delete %s: %w", sum, err)
	}
	return nil
}

// List calls fn for every blob under the directory, skipping temporary
// files and anything not laid out as DIR/<2 hex>/<sum>.
func (s *Store) List(ctx context.Context, fn func(Info) error) error {
	shards, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("blobs: list: %w", err)
	}
	for _, sh := range shards {
		if !sh.IsDir() || len(sh.Name()) != 2 {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(s.dir, sh.Name()))
		if err != nil {
			return fmt.Errorf("blobs: list: %w", err)
		}
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("blobs: list: %w", err)
			}
			name := e.Name()
			if !e.Type().IsRegular() || !ValidSum(name) || name[:2] != sh.Name() {
				continue
			}
			st, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted meanwhile
			}
			if err != nil {
				return fmt.Errorf("blobs: list: %w", err)
			}
			if err := fn(Info{Sum: name, Size: st.Size(), ModTime: st.ModTime()}); err != nil {
				return err
			}
		}
	}
	return nil
}

// String returns the store's directory.
func (s *Store) String() string { return "file:" + s.dir }

// fileObject is an open blob file with its Info.
type fileObject struct {
	*os.File
	info Info
}

func (o fileObject) Info() Info { return o.info }

// syncDir fsyncs a directory so a rename in it survives a crash; errors
// are ignored as some file systems cannot sync directories.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// ctxReader stops a long copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
