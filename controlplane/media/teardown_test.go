package media

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
)

// failingRemover fails the removal of paths under any of its asset ids
// until allowed, as a directory that cannot be removed would.
type failingRemover struct {
	mu    sync.Mutex
	block map[string]bool
}

func (f *failingRemover) remove(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id := range f.block {
		if strings.Contains(path, id) {
			return &fs.PathError{Op: "unlinkat", Path: filepath.Join(path, sourceFile), Err: syscall.EACCES}
		}
	}
	return os.RemoveAll(path)
}

func (f *failingRemover) allow() {
	f.mu.Lock()
	f.block = nil
	f.mu.Unlock()
}

// TestTeardownRetry deletes a project whose media files cannot be removed
// at first: 502 teardown_incomplete naming the asset and no host path,
// the files and the asset still there; the retry removes them and only
// then answers 200.
func TestTeardownRetry(t *testing.T) {
	e := newEnv(t, plans.Pro, Config{NoWorkers: true})
	small := filepath.Join(t.TempDir(), "small.bin")
	os.WriteFile(small, bytes.Repeat([]byte("x"), 500), 0o644)
	stuck, up := e.createVideo("stuck")
	if r := e.upload(up, "file", small); r.Status != 201 {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	gone, up2 := e.createVideo("gone")
	if r := e.upload(up2, "file", small); r.Status != 201 {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	rm := &failingRemover{block: map[string]bool{stuck: true}}
	e.svc.removeAll = rm.remove
	path := "/api/projects/" + e.project

	for _, tc := range []struct {
		name    string
		prepare func()
		status  int
		// left: whether the stuck asset's files and row are still there.
		left bool
	}{
		{"files cannot be removed", func() {}, 502, true},
		{"retry while they still cannot", func() {}, 502, true},
		{"retry once they can", rm.allow, 200, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.prepare()
			r := e.do(ownerKey, "DELETE", path, nil)
			if r.Status != tc.status {
				t.Fatalf("delete: %d %s", r.Status, r.Body)
			}
			if bytes.Contains(r.Body, []byte(e.Dir)) {
				t.Fatalf("the answer names the data directory %s: %s", e.Dir, r.Body)
			}
			_, err := os.Stat(filepath.Join(e.svc.assetDir(stuck), sourceFile))
			if tc.left != (err == nil) {
				t.Fatalf("stuck asset's file: %v, want left=%v", err, tc.left)
			}
			if _, err := os.Stat(e.svc.assetDir(gone)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("removable asset's files: %v", err)
			}
			n, err := e.svc.Count(context.Background(), e.project)
			if err != nil || (n == 1) != tc.left {
				t.Fatalf("assets left %d (%v), want left=%v", n, err, tc.left)
			}
			if tc.status != 502 {
				if r := e.do(ownerKey, "GET", path, nil); r.Status != 404 {
					t.Fatalf("project after delete: %d %s", r.Status, r.Body)
				}
				return
			}
			if r.Code() != "teardown_incomplete" || !strings.Contains(string(r.Body), "media asset "+stuck) {
				t.Fatalf("delete answer: %s", r.Body)
			}
			var d projects.Detail
			e.must(200, ownerKey, "GET", path, nil).Decode(t, &d)
			if d.Project.Status != projects.StatusTeardownFailed || !strings.Contains(d.Project.TeardownError, "media asset "+stuck) ||
				strings.Contains(d.Project.TeardownError, e.Dir) {
				t.Fatalf("project %+v", d.Project)
			}
		})
	}
}
