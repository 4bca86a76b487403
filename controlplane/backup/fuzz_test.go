package backup

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzEntryPath: an accepted entry name is a clean relative path inside
// the data directory.
func FuzzEntryPath(f *testing.F) {
	for _, s := range []string{"data/platform.db", "data/blobs/ab/cd", "data/../x", "/etc/passwd", "data/", "data/./x", "data/a//b", `data/a\..\b`, "data/edge/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		rel, err := EntryPath(name)
		if err != nil {
			return
		}
		root := "/r"
		p := filepath.Join(root, filepath.FromSlash(rel))
		if !strings.HasPrefix(p, root+"/") || strings.Contains(rel, "..") && strings.Contains("/"+rel+"/", "/../") {
			t.Fatalf("%q → %q escapes", name, rel)
		}
	})
}

// FuzzRestore: any input is restored or refused, and never writes outside
// the target's parent directory.
func FuzzRestore(f *testing.F) {
	f.Add([]byte("hello"))
	f.Add(archiveOf(f, []entry{{name: HeaderEntry, body: mustJSON(Header{Format: Format, Version: 1, Kind: KindInstallation})}, {name: "data/blobs/x", body: []byte("x")}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		parent := t.TempDir()
		to := filepath.Join(parent, "restored")
		_, err := Restore(context.Background(), bytes.NewReader(b), to)
		entries, _ := os.ReadDir(parent)
		if err != nil && len(entries) != 0 || err == nil && (len(entries) != 1 || entries[0].Name() != "restored") {
			t.Fatalf("err %v left %v", err, entries)
		}
	})
}
