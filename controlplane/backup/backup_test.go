package backup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store"
)

// openWAL opens (creating) an SQLite database in WAL mode as the areas do.
func openWAL(t testing.TB, p string) *sql.DB {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		t.Fatal(err)
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "10000")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite3", "file:"+p+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, v TEXT)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func write(t testing.TB, p string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
}

// dataDir makes a data directory as the platform leaves it: the metadata
// database, a customer database whose last commits are still in its WAL
// (its connection stays open), blobs, the seal key, and what a backup
// leaves out.
func dataDir(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dir := t.TempDir()
	meta, err := store.Open(context.Background(), filepath.Join(dir, MetadataDB))
	if err != nil {
		t.Fatal(err)
	}
	meta.Close()
	db := openWAL(t, filepath.Join(dir, "databases", "db_1.sqlite"))
	for i := range 100 {
		if _, err := db.Exec(`INSERT INTO rows(id, v) VALUES (?, ?)`, i, fmt.Sprint("row ", i)); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, "blobs", "ab", "abcdef"), []byte("deployed file"), 0o640)
	write(t, filepath.Join(dir, SealKeyPath), bytes.Repeat([]byte{7}, 32), 0o600)
	write(t, filepath.Join(dir, "blobs", ".tmp-123"), []byte("half a blob"), 0o640)
	write(t, filepath.Join(dir, "edge", "config.json"), []byte("{}"), 0o640)
	write(t, filepath.Join(dir, "media", "live", "nginx.conf"), []byte("conf"), 0o640)
	return dir, db
}

func backupOf(t *testing.T, src Source) ([]byte, Manifest) {
	t.Helper()
	var buf bytes.Buffer
	m, err := Create(context.Background(), src, &buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), m
}

func count(t *testing.T, p string) int {
	t.Helper()
	db := openWAL(t, p)
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM rows`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCreateRestore: a restore into a fresh directory holds the databases
// with every commit (those still in a WAL too), the files byte for byte
// with the seal key private, and none of what a backup leaves out.
func TestCreateRestore(t *testing.T) {
	dir, _ := dataDir(t)
	at := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	archive, m := backupOf(t, Source{DataDir: dir, Platform: "v1.2.3", Clock: clock.NewFake(at)})
	var paths []string
	for _, f := range m.Files {
		paths = append(paths, f.Path)
	}
	want := []string{MetadataDB, "databases/db_1.sqlite", "blobs/ab/abcdef", SealKeyPath}
	if !slices.Equal(paths, want) || !m.Files[0].SQLite || !m.Files[1].SQLite || m.Files[2].SQLite || m.Platform != "v1.2.3" || !m.CreatedAt.Equal(at) {
		t.Fatalf("manifest %+v, want files %v (databases first)", m, want)
	}
	to := filepath.Join(t.TempDir(), "restored")
	got, err := Restore(context.Background(), bytes.NewReader(archive), to)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Files) != len(m.Files) || got.Kind != KindInstallation {
		t.Fatalf("restore's manifest %+v", got)
	}
	for _, p := range []string{"blobs/.tmp-123", "edge/config.json", "media/live/nginx.conf", "databases/db_1.sqlite-wal"} {
		if _, err := os.Stat(filepath.Join(to, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s restored (%v)", p, err)
		}
	}
	if n := count(t, filepath.Join(to, "databases", "db_1.sqlite")); n != 100 {
		t.Fatalf("restored database has %d rows, want 100", n)
	}
	if b, err := os.ReadFile(filepath.Join(to, "blobs", "ab", "abcdef")); err != nil || string(b) != "deployed file" {
		t.Fatalf("blob %q %v", b, err)
	}
	if st, err := os.Stat(filepath.Join(to, SealKeyPath)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("seal key %v %v, want mode 0600", st, err)
	}
	db, err := store.Open(context.Background(), filepath.Join(to, MetadataDB))
	if err != nil {
		t.Fatalf("the restored metadata does not open: %v", err)
	}
	db.Close()
	if entries, _ := os.ReadDir(dir); slices.ContainsFunc(entries, func(e os.DirEntry) bool {
		return e.Name() != "databases" && len(e.Name()) > 8 && e.Name()[:8] == ".backup-"
	}) {
		t.Fatalf("the staging directory stayed: %v", entries)
	}
}

// TestCreateSealKeyOutside: a seal key kept outside the data directory
// (--seal-key-file) is archived where a restored installation finds it.
func TestCreateSealKeyOutside(t *testing.T) {
	dir, _ := dataDir(t)
	os.Remove(filepath.Join(dir, SealKeyPath))
	key := filepath.Join(t.TempDir(), "seal.key")
	write(t, key, bytes.Repeat([]byte{9}, 32), 0o600)
	archive, _ := backupOf(t, Source{DataDir: dir, SealKeyFile: key})
	to := filepath.Join(t.TempDir(), "restored")
	if _, err := Restore(context.Background(), bytes.NewReader(archive), to); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(to, SealKeyPath)); err != nil || !bytes.Equal(b, bytes.Repeat([]byte{9}, 32)) {
		t.Fatalf("seal key %v %v", b, err)
	}
}

// TestCreateUnderWriteLoad: a backup taken while a writer commits holds
// every commit acknowledged before the backup began, and each database is
// one consistent snapshot (the rows' running total matches their count).
func TestCreateUnderWriteLoad(t *testing.T) {
	dir, db := dataDir(t)
	if _, err := db.Exec(`CREATE TABLE total (n INTEGER); INSERT INTO total VALUES (100)`); err != nil {
		t.Fatal(err)
	}
	var acked atomic.Int64
	acked.Store(99)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := int64(100); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tx, err := db.Begin()
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := tx.Exec(`INSERT INTO rows(id, v) VALUES (?, 'load')`, i); err != nil {
				t.Error(err)
				tx.Rollback()
				return
			}
			if _, err := tx.Exec(`UPDATE total SET n = n + 1`); err != nil {
				t.Error(err)
				tx.Rollback()
				return
			}
			if err := tx.Commit(); err != nil {
				t.Error(err)
				return
			}
			acked.Store(i)
		}
	}()
	for acked.Load() < 300 { // the writer is under way
		time.Sleep(time.Millisecond)
	}
	before := acked.Load()
	archive, _ := backupOf(t, Source{DataDir: dir})
	close(stop)
	wg.Wait()
	to := filepath.Join(t.TempDir(), "restored")
	if _, err := Restore(context.Background(), bytes.NewReader(archive), to); err != nil {
		t.Fatal(err)
	}
	rdb := openWAL(t, filepath.Join(to, "databases", "db_1.sqlite"))
	var n, maxID, total int
	if err := rdb.QueryRow(`SELECT count(*), max(id), (SELECT n FROM total) FROM rows`).Scan(&n, &maxID, &total); err != nil {
		t.Fatal(err)
	}
	if int64(maxID) < before || n != maxID+1 || total != n {
		t.Fatalf("restored %d rows up to id %d with total %d; %d were acknowledged before the backup began", n, maxID, total, before+1)
	}
}

// TestCreateRefuses: a directory without the metadata database.
func TestCreateRefuses(t *testing.T) {
	_, err := Create(context.Background(), Source{DataDir: t.TempDir()}, &bytes.Buffer{})
	if !errors.Is(err, ErrNoMetadata) {
		t.Fatalf("err = %v, want ErrNoMetadata", err)
	}
	// With the metadata in PostgreSQL the rest is archived.
	dir := t.TempDir()
	write(t, filepath.Join(dir, "blobs", "x"), []byte("x"), 0o640)
	if m, err := Create(context.Background(), Source{DataDir: dir, MetadataElsewhere: true}, &bytes.Buffer{}); err != nil || len(m.Files) != 1 {
		t.Fatalf("%+v %v", m, err)
	}
}

type entry struct {
	name string
	body []byte
	typ  byte
}

// archiveOf writes entries as a gzip-compressed tar stream.
func archiveOf(t testing.TB, entries []entry) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Mode: 0o600, Size: int64(len(e.body)), Typeflag: typ}
		if typ != tar.TypeReg {
			h.Size, h.Linkname = 0, "/etc/passwd"
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write(e.body)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestRestoreRefuses: what is not a complete backup of this format, or
// would write outside the target, is refused and leaves the target as it
// was; so is a target that has files.
func TestRestoreRefuses(t *testing.T) {
	dir, _ := dataDir(t)
	good, m := backupOf(t, Source{DataDir: dir})
	hdr := mustJSON(m.Header)
	file := []byte("x")
	man := mustJSON(Manifest{Header: m.Header, Files: []File{{Path: "blobs/x", Size: 1, SHA256: "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"}}})
	damaged := bytes.Clone(good)
	damaged[len(damaged)/2] ^= 0xff
	newer := m.Header
	newer.Version = Version + 1
	project := m.Header
	project.Kind = KindProject
	for _, tc := range []struct {
		name    string
		archive []byte
	}{
		{"not gzip", []byte("hello")},
		{"damaged", damaged},
		{"truncated", good[:len(good)*2/3]},
		{"no header", archiveOf(t, []entry{{name: "data/blobs/x", body: file}})},
		{"another format", archiveOf(t, []entry{{name: HeaderEntry, body: mustJSON(Header{Format: "zip", Version: 1, Kind: KindInstallation})}})},
		{"newer version", archiveOf(t, []entry{{name: HeaderEntry, body: mustJSON(newer)}})},
		{"a project archive", archiveOf(t, []entry{{name: HeaderEntry, body: mustJSON(project)}})},
		{"no manifest", archiveOf(t, []entry{{name: HeaderEntry, body: hdr}, {name: "data/blobs/x", body: file}})},
		{"file not as listed", archiveOf(t, []entry{{name: HeaderEntry, body: hdr}, {name: "data/blobs/x", body: []byte("y")}, {name: ManifestEntry, body: man}})},
		{"listed file missing", archiveOf(t, []entry{{name: HeaderEntry, body: hdr}, {name: ManifestEntry, body: man}})},
		{"escapes the directory", archiveOf(t, []entry{{name: HeaderEntry, body: hdr}, {name: "data/../../x", body: file}, {name: ManifestEntry, body: man}})},
		{"absolute path", archiveOf(t, []entry{{name: HeaderEntry, body: hdr}, {name: "/tmp/x", body: file}, {name: ManifestEntry, body: man}})},
		{"symlink", archiveOf(t, []entry{{name: HeaderEntry, body: hdr}, {name: "data/blobs/x", typ: tar.TypeSymlink}, {name: ManifestEntry, body: man}})},
		{"twice", archiveOf(t, []entry{{name: HeaderEntry, body: hdr}, {name: "data/blobs/x", body: file}, {name: "data/blobs/x", body: file}, {name: ManifestEntry, body: man}})},
		{"after the manifest", archiveOf(t, []entry{{name: HeaderEntry, body: hdr}, {name: "data/blobs/x", body: file}, {name: ManifestEntry, body: man}, {name: "data/blobs/y", body: file}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			to := filepath.Join(parent, "restored")
			if _, err := Restore(context.Background(), bytes.NewReader(tc.archive), to); !errors.Is(err, ErrFormat) {
				t.Fatalf("err = %v, want ErrFormat", err)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Fatalf("a refused restore left %v", entries)
			}
		})
	}
	t.Run("minimal archive restores", func(t *testing.T) {
		a := archiveOf(t, []entry{{name: HeaderEntry, body: hdr}, {name: "data/blobs/x", body: file}, {name: ManifestEntry, body: man}})
		if _, err := Restore(context.Background(), bytes.NewReader(a), filepath.Join(t.TempDir(), "r")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("target not empty", func(t *testing.T) {
		to := t.TempDir()
		write(t, filepath.Join(to, "platform.db"), []byte("mine"), 0o600)
		if _, err := Restore(context.Background(), bytes.NewReader(good), to); !errors.Is(err, ErrNotEmpty) {
			t.Fatalf("err = %v, want ErrNotEmpty", err)
		}
		if b, _ := os.ReadFile(filepath.Join(to, "platform.db")); string(b) != "mine" {
			t.Fatal("the target changed")
		}
	})
}
