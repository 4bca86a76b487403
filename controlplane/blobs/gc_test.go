package blobs_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/store"
)

// sqlRefs is a reference source on a real SQLite table, as the areas'
// BlobRefs are: SELECT DISTINCT sha256 streamed to fn.
type sqlRefs struct{ db *store.DB }

func newSQLRefs(t *testing.T, sums ...string) sqlRefs {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "refs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(ctx, `CREATE TABLE gc_refs (sha256 TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, s := range sums {
		if _, err := db.ExecContext(ctx, `INSERT INTO gc_refs(sha256) VALUES (?)`, s); err != nil {
			t.Fatal(err)
		}
	}
	return sqlRefs{db}
}

func (r sqlRefs) BlobRefs(ctx context.Context, fn func(string) error) error {
	rows, err := r.db.QueryContext(ctx, `SELECT DISTINCT sha256 FROM gc_refs ORDER BY sha256`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		if err := fn(s); err != nil {
			return err
		}
	}
	return rows.Err()
}

var errSourceDown = errors.New("source down")

// failing names one sum, then fails, as a database dropping mid-query.
var failing = blobs.RefSourceFunc(func(_ context.Context, fn func(string) error) error {
	if err := fn(sumOf([]byte("never"))); err != nil {
		return err
	}
	return errSourceDown
})

// held lists the sums b holds, sorted.
func held(t *testing.T, b blobs.Backend) []string {
	t.Helper()
	var out []string
	if err := b.List(context.Background(), func(in blobs.Info) error { out = append(out, in.Sum); return nil }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func sorted(s ...string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCollect runs the cleanup on the file store with blobs of mixed ages
// (their mtimes set back) and references held in SQLite.
func TestCollect(t *testing.T) {
	now := time.Now()
	type blob struct {
		data string
		age  time.Duration
		ref  bool
	}
	cases := []struct {
		name    string
		blobs   []blob
		grace   time.Duration
		failing bool
		// survivors are the data of the blobs left afterwards.
		survivors []string
		want      blobs.GCStats
		wantErr   error
	}{
		{name: "referenced old kept, unreferenced old deleted",
			blobs:     []blob{{"keep", 72 * time.Hour, true}, {"drop", 72 * time.Hour, false}, {"drop too", 25 * time.Hour, false}},
			survivors: []string{"keep"},
			want:      blobs.GCStats{Listed: 3, Referenced: 1, Deleted: 2, BytesFreed: int64(len("drop") + len("drop too")), Refs: 1}},
		{name: "unreferenced young kept (an upload in flight)",
			blobs:     []blob{{"in flight", time.Minute, false}, {"almost a day", 23 * time.Hour, false}, {"old", 48 * time.Hour, false}},
			survivors: []string{"in flight", "almost a day"},
			want:      blobs.GCStats{Listed: 3, KeptYoung: 2, Deleted: 1, BytesFreed: 3}},
		{name: "referenced young counts as referenced",
			blobs:     []blob{{"new commit", time.Minute, true}},
			survivors: []string{"new commit"},
			want:      blobs.GCStats{Listed: 1, Referenced: 1, Refs: 1}},
		{name: "custom grace",
			blobs:     []blob{{"two hours", 2 * time.Hour, false}, {"ten minutes", 10 * time.Minute, false}},
			grace:     time.Hour,
			survivors: []string{"ten minutes"},
			want:      blobs.GCStats{Listed: 2, KeptYoung: 1, Deleted: 1, BytesFreed: int64(len("two hours"))}},
		{name: "a failing source deletes nothing",
			blobs:     []blob{{"orphan", 72 * time.Hour, false}, {"kept", 72 * time.Hour, true}},
			failing:   true,
			survivors: []string{"orphan", "kept"},
			wantErr:   errSourceDown},
		{name: "empty store", want: blobs.GCStats{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st, err := blobs.Open(filepath.Join(t.TempDir(), "blobs"))
			if err != nil {
				t.Fatal(err)
			}
			var refs, survivors []string
			for _, b := range tc.blobs {
				sum, _, err := st.Put([]byte(b.data))
				if err != nil {
					t.Fatal(err)
				}
				p, err := st.Path(sum)
				if err != nil {
					t.Fatal(err)
				}
				at := now.Add(-b.age)
				if err := os.Chtimes(p, at, at); err != nil {
					t.Fatal(err)
				}
				if b.ref {
					refs = append(refs, sum, sum) // named twice: counted once
				}
			}
			for _, s := range tc.survivors {
				survivors = append(survivors, sumOf([]byte(s)))
			}
			sources := []blobs.RefSource{newSQLRefs(t, refs...)}
			if tc.failing {
				sources = append(sources, failing)
			}
			got, err := blobs.Collect(ctx, st, sources, now, tc.grace)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !errors.Is(err, blobs.ErrRefSource) {
					t.Fatalf("Collect error = %v, want %v and ErrRefSource", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("stats = %+v, want %+v", got, tc.want)
			}
			if h := held(t, st); !equal(h, sorted(survivors...)) {
				t.Errorf("held %v, want %v", h, sorted(survivors...))
			}
		})
	}
}

// TestCollectBackends runs the same cleanup on every backend with the
// blobs' real times (S3: Last-Modified), moving now instead of the blobs.
func TestCollectBackends(t *testing.T) {
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			ctx := context.Background()
			b := bk.setup(t)(t)
			var sums []string
			for _, d := range []string{"referenced", "orphan one", "orphan two"} {
				sum, _, err := b.Put([]byte(d))
				if err != nil {
					t.Fatal(err)
				}
				sums = append(sums, sum)
			}
			// A reference to a blob the store lacks is reported, not fatal.
			missing := sumOf([]byte("lost"))
			refs := newSQLRefs(t, sums[0], missing, "not a sum")
			steps := []struct {
				name    string
				now     time.Time
				sources []blobs.RefSource
				want    blobs.GCStats
				held    []string
				wantErr bool
			}{
				{name: "all young", now: time.Now(), sources: []blobs.RefSource{refs},
					want: blobs.GCStats{Listed: 3, Referenced: 1, KeptYoung: 2, Refs: 2, Missing: 1}, held: sorted(sums...)},
				{name: "old, a source fails", now: time.Now().Add(48 * time.Hour), sources: []blobs.RefSource{refs, failing},
					held: sorted(sums...), wantErr: true},
				{name: "old", now: time.Now().Add(48 * time.Hour), sources: []blobs.RefSource{refs},
					want: blobs.GCStats{Listed: 3, Referenced: 1, Deleted: 2, BytesFreed: int64(len("orphan one") + len("orphan two")), Refs: 2, Missing: 1},
					held: []string{sums[0]}},
				{name: "rerun frees nothing", now: time.Now().Add(48 * time.Hour), sources: []blobs.RefSource{refs},
					want: blobs.GCStats{Listed: 1, Referenced: 1, Refs: 2, Missing: 1}, held: []string{sums[0]}},
			}
			for _, s := range steps {
				got, err := blobs.Collect(ctx, b, s.sources, s.now, 0)
				if (err != nil) != s.wantErr {
					t.Fatalf("%s: Collect error = %v, want error %v", s.name, err, s.wantErr)
				}
				if got != s.want {
					t.Errorf("%s: stats = %+v, want %+v", s.name, got, s.want)
				}
				if h := held(t, b); !equal(h, s.held) {
					t.Errorf("%s: held %v, want %v", s.name, h, s.held)
				}
			}
		})
	}
}

// TestCollectCanceled: a canceled context deletes nothing.
func TestCollectCanceled(t *testing.T) {
	st, err := blobs.Open(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	sum, _, err := st.Put([]byte("orphan"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := blobs.Collect(ctx, st, nil, time.Now().Add(48*time.Hour), 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Collect error = %v, want context.Canceled", err)
	}
	if !st.Has(sum) {
		t.Fatal("a canceled cleanup deleted a blob")
	}
}

// TestDedupRenewsTime: writing bytes the store already holds renews the
// blob's time, so cleanup does not take a blob a push or deploy in flight
// has just named again (the deduplicated write found it old and
// unreferenced). Both backends still hold and serve it.
func TestDedupRenewsTime(t *testing.T) {
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			ctx := context.Background()
			b := bk.setup(t)(t)
			data := []byte("named again by a new commit")
			sum, _, err := b.Put(data)
			if err != nil {
				t.Fatal(err)
			}
			before, err := b.Stat(ctx, sum)
			if err != nil {
				t.Fatal(err)
			}
			if fs, ok := b.(*blobs.Store); ok {
				// The file store's blob made old, as after days unreferenced.
				p, _ := fs.Path(sum)
				old := time.Now().Add(-72 * time.Hour)
				if err := os.Chtimes(p, old, old); err != nil {
					t.Fatal(err)
				}
				if before, err = b.Stat(ctx, sum); err != nil {
					t.Fatal(err)
				}
			}
			for _, put := range []func() (time.Time, error){
				func() (time.Time, error) { _, _, err := b.Put(data); return time.Time{}, err },
				func() (time.Time, error) {
					in, _, err := b.PutReader(ctx, bytes.NewReader(data))
					return in.ModTime, err
				},
			} {
				if _, err := put(); err != nil {
					t.Fatal(err)
				}
				after, err := b.Stat(ctx, sum)
				if err != nil {
					t.Fatal(err)
				}
				if after.ModTime.Before(before.ModTime) {
					t.Fatalf("time went back: %v -> %v", before.ModTime, after.ModTime)
				}
				if _, isFile := b.(*blobs.Store); isFile && time.Since(after.ModTime) > time.Hour {
					t.Fatalf("a deduplicated write left the blob old: %v", after.ModTime)
				}
				// Cleanup now keeps it: young, though nothing names it.
				st, err := blobs.Collect(ctx, b, nil, time.Now(), 0)
				if err != nil || st.Deleted != 0 {
					t.Fatalf("cleanup after the write: %+v %v", st, err)
				}
			}
			got, err := b.Read(sum)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read after: %q %v", got, err)
			}
		})
	}
}
