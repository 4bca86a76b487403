// Package backup writes and restores archives of a platform installation:
// the whole data directory (`platform backup`, `platform restore`), taken
// while the platform serves, and restorable into an empty data directory
// on another machine. Every SQLite database in it (the control plane's
// metadata, customer databases, vector collections) is copied as one
// transactionally consistent snapshot with VACUUM INTO; other files
// (blobs, keys, the local CA) are copied as they are.
//
// The archive is a gzip-compressed tar stream: a header entry naming the
// format, the files, then a manifest with each file's size and SHA-256.
// Restore installs only files the manifest lists with matching digests.
package backup

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
)

// Format names the archive format in its header and manifest.
const Format = "platform-backup"

// Version is the archive format's version; Restore refuses a newer one.
const Version = 1

// Entry names inside the archive.
const (
	// HeaderEntry is the first entry: the Header as JSON.
	HeaderEntry = "BACKUP.json"
	// ManifestEntry is the last entry: the Manifest as JSON.
	ManifestEntry = "MANIFEST.json"
	// filesPrefix holds the data directory's files.
	filesPrefix = "data/"
)

// Kinds of archive.
const (
	// KindInstallation is a whole data directory.
	KindInstallation = "installation"
	// KindProject is one project (ExportProject).
	KindProject = "project"
)

// MetadataDB is the control plane's SQLite metadata database, relative to
// the data directory; it is snapshotted first.
const MetadataDB = "platform.db"

// SealKeyPath is where the key sealing secrets at rest lives, relative to
// the data directory (and in the archive).
const SealKeyPath = "keys/seal.key"

// Header is the archive's first entry.
type Header struct {
	Format    string    `json:"format"`
	Version   int       `json:"version"`
	Kind      string    `json:"kind"`
	CreatedAt time.Time `json:"createdAt"`
	// Platform is the version of the platform that wrote the archive.
	Platform string `json:"platform,omitempty"`
}

// File is one file of the archive as the manifest lists it.
type File struct {
	// Path is relative to the data directory, with "/" separators.
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// SQLite marks a database copied as a consistent snapshot.
	SQLite bool `json:"sqlite,omitempty"`
}

// Manifest is the archive's last entry: every file Restore installs.
type Manifest struct {
	Header
	Files []File `json:"files"`
	// Skipped are files left out because they changed size while being
	// copied (a file being written); they are not restored.
	Skipped []string `json:"skipped,omitempty"`
}

// Bytes is the total size of the manifest's files.
func (m Manifest) Bytes() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// Source is what Create archives.
type Source struct {
	// DataDir is the data directory (--data).
	DataDir string
	// SealKeyFile is the seal key when it lives outside DataDir
	// (--seal-key-file); it is archived as keys/seal.key.
	SealKeyFile string
	// MetadataElsewhere is set when the metadata lives in PostgreSQL
	// (--store postgres://...): the archive then holds no metadata
	// database and is restorable only next to a pg_dump of it.
	MetadataElsewhere bool
	// Platform is the running platform's version, recorded in the header.
	Platform string
	// Clock stamps the archive (clock.System when nil).
	Clock clock.Clock
	// Logger receives what was skipped (discarded when nil).
	Logger *slog.Logger
}

// Errors.
var (
	// ErrNoMetadata is returned by Create when DataDir has no metadata
	// database and Source.MetadataElsewhere is not set.
	ErrNoMetadata = errors.New("backup: no control-plane database in the data directory")
	// ErrNotEmpty is returned by Restore into a directory that has files.
	ErrNotEmpty = errors.New("backup: the target data directory is not empty")
	// ErrFormat is returned by Restore for what is not a backup archive
	// of a version it reads, or one whose files do not match its manifest.
	ErrFormat = errors.New("backup: not a platform backup archive")
)

// skipped reports whether rel (a data-directory path with "/"
// separators) stays out of an installation archive: SQLite's side files
// (their content is in the snapshot), files being written (.tmp-*,
// .probe-*), and state rebuilt at start (the in-process edge's cache,
// live ingest's nginx directory).
func skipped(rel string) bool {
	base := path.Base(rel)
	switch {
	case strings.HasSuffix(base, "-wal"), strings.HasSuffix(base, "-shm"), strings.HasSuffix(base, "-journal"):
		return true
	case strings.HasPrefix(base, ".tmp-"), strings.HasPrefix(base, ".probe-"), strings.HasPrefix(base, ".backup-"):
		return true
	case rel == "edge" || strings.HasPrefix(rel, "edge/"):
		return true
	case rel == "media/live" || strings.HasPrefix(rel, "media/live/"):
		return true
	}
	return false
}

// Create writes an archive of src to w. It may run while the platform
// serves: the metadata database is snapshotted first, then every other
// SQLite database, then the other files, so every blob the metadata
// snapshot names is already stored when it is copied. What was
// acknowledged before Create began is in the archive.
func Create(ctx context.Context, src Source, w io.Writer) (Manifest, error) {
	src.defaults()
	dir := src.DataDir
	if _, err := os.Stat(filepath.Join(dir, MetadataDB)); err != nil && !src.MetadataElsewhere {
		if errors.Is(err, fs.ErrNotExist) {
			return Manifest{}, fmt.Errorf("%w %s (run it on the control plane's machine with its --data; a PostgreSQL store is backed up with pg_dump)", ErrNoMetadata, dir)
		}
		return Manifest{}, fmt.Errorf("backup: %w", err)
	}
	rels, err := listFiles(dir)
	if err != nil {
		return Manifest{}, err
	}
	sealOutside := src.SealKeyFile != "" && !sameFile(src.SealKeyFile, filepath.Join(dir, filepath.FromSlash(SealKeyPath)))
	if sealOutside {
		rels = slices.DeleteFunc(rels, func(r string) bool { return r == SealKeyPath })
	}
	// The metadata first, then the other databases, then the rest.
	var dbs, others []string
	for _, rel := range rels {
		ok, err := isSQLite(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return Manifest{}, err
		}
		switch {
		case ok && rel == MetadataDB:
			dbs = append([]string{rel}, dbs...)
		case ok:
			dbs = append(dbs, rel)
		default:
			others = append(others, rel)
		}
	}
	a, err := newWriter(w, Header{Format: Format, Version: Version, Kind: KindInstallation, CreatedAt: src.Clock.Now().UTC(), Platform: src.Platform})
	if err != nil {
		return Manifest{}, err
	}
	stage, err := os.MkdirTemp(dir, ".backup-")
	if err != nil {
		return Manifest{}, fmt.Errorf("backup: staging directory in %s: %w", dir, err)
	}
	defer os.RemoveAll(stage)
	for _, rel := range dbs {
		if err := ctx.Err(); err != nil {
			return Manifest{}, err
		}
		if err := a.addSQLite(ctx, filepath.Join(dir, filepath.FromSlash(rel)), rel, stage); err != nil {
			return Manifest{}, err
		}
	}
	for _, rel := range others {
		if err := ctx.Err(); err != nil {
			return Manifest{}, err
		}
		if err := a.addFile(filepath.Join(dir, filepath.FromSlash(rel)), rel, src.Logger); err != nil {
			return Manifest{}, err
		}
	}
	if sealOutside {
		if err := a.addFile(src.SealKeyFile, SealKeyPath, src.Logger); err != nil {
			return Manifest{}, err
		}
	}
	return a.close()
}

func (s *Source) defaults() {
	if s.Clock == nil {
		s.Clock = clock.System{}
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// listFiles lists the regular files under dir that an installation
// archive holds, sorted, as "/"-separated relative paths.
func listFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != dir {
				return nil // removed while walking
			}
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skipped(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("backup: list %s: %w", dir, err)
	}
	slices.Sort(out)
	return out, nil
}

// writer writes an archive: the header, files, the manifest.
type writer struct {
	gz *gzip.Writer
	tw *tar.Writer
	m  Manifest
}

func newWriter(w io.Writer, h Header) (*writer, error) {
	gz := gzip.NewWriter(w)
	a := &writer{gz: gz, tw: tar.NewWriter(gz), m: Manifest{Header: h}}
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := a.entry(HeaderEntry, b, h.CreatedAt); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *writer) entry(name string, b []byte, at time.Time) error {
	if err := a.tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(b)), ModTime: at, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return fmt.Errorf("backup: write %s: %w", name, err)
	}
	if _, err := a.tw.Write(b); err != nil {
		return fmt.Errorf("backup: write %s: %w", name, err)
	}
	return nil
}

// addFile copies the file at p as rel. A file whose size changes while it
// is copied is padded to its header's size and left out of the manifest.
func (a *writer) addFile(p, rel string, log *slog.Logger) error {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed since it was listed
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := a.tw.WriteHeader(&tar.Header{Name: filesPrefix + rel, Mode: int64(st.Mode().Perm()), Size: st.Size(),
		ModTime: st.ModTime(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return fmt.Errorf("backup: write %s: %w", rel, err)
	}
	h := sha256.New()
	n, err := io.CopyN(io.MultiWriter(a.tw, h), f, st.Size())
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("backup: copy %s: %w", rel, err)
	}
	changed := n < st.Size()
	if changed {
		if _, err := io.CopyN(a.tw, zeros{}, st.Size()-n); err != nil {
			return fmt.Errorf("backup: write %s: %w", rel, err)
		}
	} else if st2, err := f.Stat(); err == nil && st2.Size() != st.Size() {
		changed = true
	}
	if changed {
		log.Warn("backup: a file changed while it was copied; left out", "file", rel)
		a.m.Skipped = append(a.m.Skipped, rel)
		return nil
	}
	a.m.Files = append(a.m.Files, File{Path: rel, Size: st.Size(), SHA256: hexSum(h)})
	return nil
}

// addSQLite snapshots the database at p into stage and copies the
// snapshot as rel.
func (a *writer) addSQLite(ctx context.Context, p, rel, stage string) error {
	snap := filepath.Join(stage, "snapshot.db")
	if err := snapshotSQLite(ctx, p, snap); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted since it was listed
		}
		return err
	}
	defer os.Remove(snap)
	before := len(a.m.Files)
	if err := a.addFile(snap, rel, slog.New(slog.DiscardHandler)); err != nil {
		return err
	}
	if len(a.m.Files) == before {
		return fmt.Errorf("backup: snapshot of %s changed while it was copied", rel)
	}
	a.m.Files[len(a.m.Files)-1].SQLite = true
	return nil
}

func (a *writer) close() (Manifest, error) {
	b, err := json.MarshalIndent(a.m, "", "  ")
	if err != nil {
		return Manifest{}, err
	}
	if err := a.entry(ManifestEntry, b, a.m.CreatedAt); err != nil {
		return Manifest{}, err
	}
	if err := a.tw.Close(); err != nil {
		return Manifest{}, fmt.Errorf("backup: %w", err)
	}
	if err := a.gz.Close(); err != nil {
		return Manifest{}, fmt.Errorf("backup: %w", err)
	}
	return a.m, nil
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }
