package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// projectArchive writes a project archive holding p and files (path →
// content) as Create's writer does.
func projectArchive(t *testing.T, p ProjectInfo, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	a, err := newWriter(&buf, Header{Format: Format, Version: Version, Kind: KindProject, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b, _ := json.Marshal(p)
	files[ProjectEntry] = string(b)
	for rel, content := range files {
		f := filepath.Join(dir, "f")
		os.WriteFile(f, []byte(content), 0o600)
		if err := a.addFile(f, rel, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestImportProjectRefusesBadArchive: a project description naming ids
// that are not plain identifiers (which would become paths) or files the
// archive lacks is refused before the target is touched.
func TestImportProjectRefusesBadArchive(t *testing.T) {
	good := ProjectInfo{ID: "prj_1", Name: "shop", Slug: "shop", Databases: []DatabaseInfo{{ID: "db_1", Name: "orders", Engine: "sqlite"}}}
	for _, tc := range []struct {
		name  string
		p     func(ProjectInfo) ProjectInfo
		files map[string]string
	}{
		{"database id escapes", func(p ProjectInfo) ProjectInfo { p.Databases[0].ID = "../../evil"; return p }, map[string]string{"databases/db_1.db": "x"}},
		{"project id not plain", func(p ProjectInfo) ProjectInfo { p.ID = "prj/1"; return p }, map[string]string{"databases/db_1.db": "x"}},
		{"database file missing", func(p ProjectInfo) ProjectInfo { return p }, map[string]string{}},
		{"vector file missing", func(p ProjectInfo) ProjectInfo {
			p.Vectors = []CollectionInfo{{ID: "vec_1", Name: "docs", Dimensions: 384, Metric: "cosine"}}
			return p
		}, map[string]string{"databases/db_1.db": "x"}},
		{"repo content missing", func(p ProjectInfo) ProjectInfo {
			p.Repos = []RepoInfo{{ID: "repo_1", Name: "src", Commits: []CommitInfo{{Number: 1, Files: []RepoFile{{Path: "a", SHA256: "ab12"}}}}}}
			return p
		}, map[string]string{"databases/db_1.db": "x"}},
		{"no slug", func(p ProjectInfo) ProjectInfo { p.Slug = ""; return p }, map[string]string{"databases/db_1.db": "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := good
			p.Databases = append([]DatabaseInfo(nil), good.Databases...)
			archive := projectArchive(t, tc.p(p), tc.files)
			dir := t.TempDir()
			_, err := ImportProject(context.Background(), bytes.NewReader(archive), Installation{DataDir: dir}, "ws_1")
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("err = %v, want ErrFormat", err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("a refused import left %v", entries)
			}
		})
	}
}
