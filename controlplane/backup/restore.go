package backup

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// MaxMetaBytes bounds the header and manifest entries.
const MaxMetaBytes = 64 << 20

// Restore reads an archive from r into dir, which must be empty or not
// exist. Files are written to a staging directory beside dir and moved
// into place only once every one matches the manifest (size and
// SHA-256): a damaged or truncated archive leaves dir as it was. Entries
// the manifest does not list (files that changed while being copied) are
// dropped. It returns the manifest.
func Restore(ctx context.Context, r io.Reader, dir string) (Manifest, error) {
	if err := checkEmpty(dir); err != nil {
		return Manifest{}, err
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o750); err != nil {
		return Manifest{}, fmt.Errorf("backup: %w", err)
	}
	stage, err := os.MkdirTemp(parent, ".restore-"+filepath.Base(dir)+"-")
	if err != nil {
		return Manifest{}, fmt.Errorf("backup: staging directory: %w", err)
	}
	defer os.RemoveAll(stage)
	m, err := extract(ctx, r, stage, KindInstallation)
	if err != nil {
		return Manifest{}, err
	}
	if err := install(stage, dir); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// checkEmpty refuses a dir that exists with entries in it.
func checkEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("%w: %s has %d entries; restore into a new directory", ErrNotEmpty, dir, len(entries))
	}
	return nil
}

// install moves stage's files into dir (created, or empty).
func install(stage, dir string) error {
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(stage, dir); err != nil {
		return fmt.Errorf("backup: move the restored files into %s: %w", dir, err)
	}
	return os.Chmod(dir, 0o750)
}

// extract reads an archive of kind into stage (an empty directory) and
// checks it against its manifest; files the manifest does not list are
// removed.
func extract(ctx context.Context, r io.Reader, stage, kind string) (Manifest, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return Manifest{}, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	var h Header
	var m *Manifest
	written := map[string]File{}
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return Manifest{}, err
		}
		th, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Manifest{}, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		if m != nil {
			return Manifest{}, fmt.Errorf("%w: an entry after the manifest", ErrFormat)
		}
		switch {
		case i == 0:
			if th.Name != HeaderEntry {
				return Manifest{}, fmt.Errorf("%w: it starts with %q", ErrFormat, th.Name)
			}
			if err := readJSON(tr, &h); err != nil {
				return Manifest{}, err
			}
			if h.Format != Format || h.Version < 1 || h.Version > Version {
				return Manifest{}, fmt.Errorf("%w: format %q version %d (this platform reads %s version %d)", ErrFormat, h.Format, h.Version, Format, Version)
			}
			if h.Kind != kind {
				return Manifest{}, fmt.Errorf("%w: it is a %q archive, want a %q one", ErrFormat, h.Kind, kind)
			}
		case th.Name == ManifestEntry:
			m = &Manifest{}
			if err := readJSON(tr, m); err != nil {
				return Manifest{}, err
			}
		default:
			rel, err := EntryPath(th.Name)
			if err != nil {
				return Manifest{}, err
			}
			if th.Typeflag != tar.TypeReg {
				return Manifest{}, fmt.Errorf("%w: %q is not a regular file", ErrFormat, th.Name)
			}
			if _, dup := written[rel]; dup {
				return Manifest{}, fmt.Errorf("%w: %q twice", ErrFormat, rel)
			}
			f, err := writeFile(tr, stage, rel, th.Size)
			if err != nil {
				return Manifest{}, err
			}
			written[rel] = f
		}
	}
	if m == nil {
		return Manifest{}, fmt.Errorf("%w: no manifest (a truncated archive?)", ErrFormat)
	}
	if m.Format != h.Format || m.Version != h.Version || m.Kind != h.Kind {
		return Manifest{}, fmt.Errorf("%w: the manifest does not match the header", ErrFormat)
	}
	listed := map[string]bool{}
	for _, f := range m.Files {
		got, ok := written[f.Path]
		if !ok || got.Size != f.Size || got.SHA256 != f.SHA256 {
			return Manifest{}, fmt.Errorf("%w: %s is missing or damaged", ErrFormat, f.Path)
		}
		listed[f.Path] = true
	}
	for rel := range written {
		if !listed[rel] {
			if err := os.Remove(filepath.Join(stage, filepath.FromSlash(rel))); err != nil {
				return Manifest{}, fmt.Errorf("backup: %w", err)
			}
		}
	}
	return *m, nil
}

func readJSON(r io.Reader, v any) error {
	b, err := io.ReadAll(io.LimitReader(r, MaxMetaBytes+1))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if len(b) > MaxMetaBytes {
		return fmt.Errorf("%w: a header or manifest over %d bytes", ErrFormat, MaxMetaBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return nil
}

// EntryPath turns an archive entry's name into the data-directory path
// it restores to: it must be under data/, relative, clean, without ".."
// or empty elements, and not a path Create leaves out. Everything else is
// refused, so no entry writes outside the target directory.
func EntryPath(name string) (string, error) {
	rel, ok := strings.CutPrefix(name, filesPrefix)
	if !ok || rel == "" || strings.ContainsRune(rel, '\\') || strings.ContainsRune(rel, 0) ||
		path.Clean(rel) != rel || path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%w: entry %q is not a data-directory path", ErrFormat, name)
	}
	for _, el := range strings.Split(rel, "/") {
		if el == "" || el == "." || el == ".." {
			return "", fmt.Errorf("%w: entry %q is not a data-directory path", ErrFormat, name)
		}
	}
	if skipped(rel) {
		return "", fmt.Errorf("%w: entry %q is not a file a backup holds", ErrFormat, name)
	}
	return rel, nil
}

// writeFile writes size bytes of r to stage/rel, returning its digest.
func writeFile(r io.Reader, stage, rel string, size int64) (File, error) {
	p := filepath.Join(stage, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return File{}, fmt.Errorf("backup: %w", err)
	}
	mode := os.FileMode(0o640)
	if strings.HasPrefix(rel, "keys/") || strings.HasSuffix(rel, ".key") {
		mode = 0o600
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return File{}, fmt.Errorf("backup: %w", err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), archiveReader{r})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return File{}, fmt.Errorf("backup: write %s: %w", rel, err)
	}
	if n != size {
		return File{}, fmt.Errorf("%w: %s is truncated", ErrFormat, rel)
	}
	return File{Path: rel, Size: n, SHA256: hexSum(h)}, nil
}

// archiveReader marks its reader's errors (a truncated or corrupt stream)
// as ErrFormat, apart from the target's write errors.
type archiveReader struct{ r io.Reader }

func (a archiveReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return n, err
}
