package blobs_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/blobs/blobstest"
)

// backends names every Backend with its setup: given the test that groups
// a backend's cases, it returns a constructor of fresh instances. The file
// store, and an S3 bucket on a real versitygw started for the group (the S3
// half skips without it, naming the install command).
var backends = []struct {
	name  string
	setup func(t *testing.T) func(t *testing.T) blobs.Backend
}{
	{"file", func(*testing.T) func(t *testing.T) blobs.Backend {
		return func(t *testing.T) blobs.Backend {
			s, err := blobs.Open(filepath.Join(t.TempDir(), "blobs"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}},
	{"s3", func(t *testing.T) func(t *testing.T) blobs.Backend {
		srv := blobstest.StartS3(t)
		return func(t *testing.T) blobs.Backend {
			cfg := srv.Config(fmt.Sprintf("conf-%d", bucketSeq.next()), "platform/blobs")
			cfg.SpoolDir = t.TempDir()
			cfg.PartSize = 5 << 20 // S3's minimum, so the multipart path runs on small data
			b, err := blobs.NewS3(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}},
}

type seq struct {
	mu sync.Mutex
	n  int
}

func (s *seq) next() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return s.n
}

var bucketSeq seq

// pattern returns n deterministic bytes that are not all alike.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

var conformance = []struct {
	name string
	run  func(t *testing.T, b blobs.Backend)
}{
	{"put dedup read head stat", func(t *testing.T, b blobs.Backend) {
		ctx := context.Background()
		sum, written, err := b.Put([]byte("hello"))
		if err != nil || !written || sum != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
			t.Fatalf("Put = %s %v %v", sum, written, err)
		}
		if s2, written, err := b.Put([]byte("hello")); err != nil || written || s2 != sum {
			t.Fatalf("second Put = %s %v %v, want the same name, not written", s2, written, err)
		}
		if got, err := b.Read(sum); err != nil || string(got) != "hello" {
			t.Fatalf("Read = %q %v", got, err)
		}
		if !b.Has(sum) {
			t.Fatal("Has = false")
		}
		for n, want := range map[int]string{0: "", 2: "he", 5: "hello", 512: "hello"} {
			if head, err := b.Head(sum, n); err != nil || string(head) != want {
				t.Fatalf("Head(%d) = %q %v, want %q", n, head, err, want)
			}
		}
		info, err := b.Stat(ctx, sum)
		if err != nil || info.Sum != sum || info.Size != 5 || info.ModTime.IsZero() {
			t.Fatalf("Stat = %+v %v", info, err)
		}
	}},
	{"empty blob", func(t *testing.T, b blobs.Backend) {
		sum, written, err := b.Put(nil)
		if err != nil || !written || sum != sumOf(nil) {
			t.Fatalf("Put(nil) = %s %v %v", sum, written, err)
		}
		if got, err := b.Read(sum); err != nil || len(got) != 0 {
			t.Fatalf("Read = %q %v", got, err)
		}
		if head, err := b.Head(sum, 4); err != nil || len(head) != 0 {
			t.Fatalf("Head = %q %v", head, err)
		}
		o, err := b.Get(context.Background(), sum)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		if n, err := io.Copy(io.Discard, o); n != 0 || err != nil || o.Info().Size != 0 {
			t.Fatalf("Get read %d %v", n, err)
		}
	}},
	{"missing blob", func(t *testing.T, b blobs.Backend) {
		ctx := context.Background()
		missing := strings.Repeat("0", 64)
		if b.Has(missing) {
			t.Fatal("Has(missing) = true")
		}
		for name, err := range map[string]error{
			"Read": second(b.Read(missing)),
			"Head": second(b.Head(missing, 4)),
			"Stat": second(b.Stat(ctx, missing)),
			"Get":  second(b.Get(ctx, missing)),
		} {
			if !errors.Is(err, blobs.ErrNotFound) {
				t.Errorf("%s(missing) = %v, want ErrNotFound", name, err)
			}
		}
	}},
	{"bad name refused before any I/O", func(t *testing.T, b blobs.Backend) {
		ctx := context.Background()
		for _, bad := range []string{"", "../../etc/passwd", strings.Repeat("A", 64), strings.Repeat("a", 63), "../" + strings.Repeat("a", 61)} {
			if b.Has(bad) {
				t.Errorf("Has(%q) = true", bad)
			}
			for name, err := range map[string]error{
				"Read":   second(b.Read(bad)),
				"Head":   second(b.Head(bad, 4)),
				"Stat":   second(b.Stat(ctx, bad)),
				"Get":    second(b.Get(ctx, bad)),
				"Delete": b.Delete(ctx, bad),
			} {
				if !errors.Is(err, blobs.ErrBadSum) {
					t.Errorf("%s(%q) = %v, want ErrBadSum", name, bad, err)
				}
			}
		}
	}},
	{"stream put, multipart sized, dedup with Put", func(t *testing.T, b blobs.Backend) {
		ctx := context.Background()
		data := pattern(12<<20+7, 1) // more than two 5 MiB parts
		info, written, err := b.PutReader(ctx, bytes.NewReader(data))
		if err != nil || !written || info.Sum != sumOf(data) || info.Size != int64(len(data)) {
			t.Fatalf("PutReader = %+v %v %v", info, written, err)
		}
		if _, written, err := b.PutReader(ctx, bytes.NewReader(data)); err != nil || written {
			t.Fatalf("second PutReader written=%v %v", written, err)
		}
		if sum, written, err := b.Put(data); err != nil || written || sum != info.Sum {
			t.Fatalf("Put after PutReader = %s %v %v", sum, written, err)
		}
		got, err := b.Read(info.Sum)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Read: %d bytes, %v", len(got), err)
		}
		small := []byte("small and streamed")
		if info, written, err := b.PutReader(ctx, bytes.NewReader(small)); err != nil || !written || info.Sum != sumOf(small) || info.Size != int64(len(small)) {
			t.Fatalf("small PutReader = %+v %v %v", info, written, err)
		}
	}},
	{"cancelled stream stores nothing", func(t *testing.T, b blobs.Backend) {
		ctx, cancel := context.WithCancel(context.Background())
		data := pattern(1<<20, 2)
		r := &cancelAfter{r: bytes.NewReader(data), n: 256 << 10, cancel: cancel}
		if _, _, err := b.PutReader(ctx, r); !errors.Is(err, context.Canceled) {
			t.Fatalf("PutReader = %v, want context.Canceled", err)
		}
		if b.Has(sumOf(data)) {
			t.Fatal("a cancelled put left a blob")
		}
		n := 0
		if err := b.List(context.Background(), func(blobs.Info) error { n++; return nil }); err != nil || n != 0 {
			t.Fatalf("List after a cancelled put: %d blobs, %v", n, err)
		}
	}},
	{"failing stream stores nothing", func(t *testing.T, b blobs.Backend) {
		boom := errors.New("boom")
		if _, _, err := b.PutReader(context.Background(), io.MultiReader(strings.NewReader("partial"), errReader{boom})); !errors.Is(err, boom) {
			t.Fatalf("PutReader = %v, want boom", err)
		}
		if b.Has(sumOf([]byte("partial"))) {
			t.Fatal("a failed put left a blob")
		}
	}},
	{"ranged reads: Seek, ReadAt, http.ServeContent", func(t *testing.T, b blobs.Backend) {
		ctx := context.Background()
		data := pattern(300_000, 3)
		sum, _, err := b.Put(data)
		if err != nil {
			t.Fatal(err)
		}
		o, err := b.Get(ctx, sum)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		if in := o.Info(); in.Sum != sum || in.Size != int64(len(data)) {
			t.Fatalf("Info = %+v", in)
		}
		if _, err := o.Seek(100_000, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1000)
		if _, err := io.ReadFull(o, buf); err != nil || !bytes.Equal(buf, data[100_000:101_000]) {
			t.Fatalf("read after Seek: %v", err)
		}
		if _, err := o.ReadAt(buf, 250_000); err != nil || !bytes.Equal(buf, data[250_000:251_000]) {
			t.Fatalf("ReadAt: %v", err)
		}
		if n, err := o.ReadAt(buf, int64(len(data))-10); n != 10 || !errors.Is(err, io.EOF) {
			t.Fatalf("ReadAt past the end = %d %v, want 10 io.EOF", n, err)
		}
		// The control plane serves blobs to edges with http.ServeContent over
		// a real socket.
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			o, err := b.Get(r.Context(), sum)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			defer o.Close()
			http.ServeContent(w, r, "", o.Info().ModTime, o)
		}))
		defer srv.Close()
		for _, tc := range []struct {
			rng    string
			status int
			want   []byte
		}{
			{"", http.StatusOK, data},
			{"bytes=10-19", http.StatusPartialContent, data[10:20]},
			{"bytes=-5", http.StatusPartialContent, data[len(data)-5:]},
			{"bytes=299990-", http.StatusPartialContent, data[299_990:]},
			{"bytes=400000-", http.StatusRequestedRangeNotSatisfiable, nil},
		} {
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			if tc.rng != "" {
				req.Header.Set("Range", tc.rng)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || (tc.want != nil && !bytes.Equal(body, tc.want)) {
				t.Errorf("Range %q: %d, %d bytes; want %d, %d bytes", tc.rng, resp.StatusCode, len(body), tc.status, len(tc.want))
			}
		}
	}},
	{"delete is idempotent", func(t *testing.T, b blobs.Backend) {
		ctx := context.Background()
		sum, _, err := b.Put([]byte("to delete"))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(ctx, sum); err != nil {
			t.Fatal(err)
		}
		if b.Has(sum) {
			t.Fatal("Has after Delete")
		}
		if _, err := b.Read(sum); !errors.Is(err, blobs.ErrNotFound) {
			t.Fatalf("Read after Delete = %v", err)
		}
		if err := b.Delete(ctx, sum); err != nil {
			t.Fatalf("second Delete = %v", err)
		}
		if _, written, err := b.Put([]byte("to delete")); err != nil || !written {
			t.Fatalf("Put after Delete = %v %v, want written again", written, err)
		}
	}},
	{"list", func(t *testing.T, b blobs.Backend) {
		ctx := context.Background()
		want := map[string]int64{}
		for i := range 5 {
			data := pattern(100*i, byte(i))
			sum, _, err := b.Put(data)
			if err != nil {
				t.Fatal(err)
			}
			want[sum] = int64(len(data))
		}
		got := map[string]int64{}
		if err := b.List(ctx, func(in blobs.Info) error { got[in.Sum] = in.Size; return nil }); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("List = %v, want %v", got, want)
		}
		stop := errors.New("stop")
		n := 0
		if err := b.List(ctx, func(blobs.Info) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
			t.Fatalf("List stopped = %v after %d", err, n)
		}
	}},
	{"concurrent puts of the same bytes", func(t *testing.T, b blobs.Backend) {
		data := pattern(64<<10, 9)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Go(func() {
				var err error
				if i%2 == 0 {
					_, _, err = b.Put(data)
				} else {
					_, _, err = b.PutReader(context.Background(), bytes.NewReader(data))
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		got, err := b.Read(sumOf(data))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Read = %d bytes %v", len(got), err)
		}
		n := 0
		if err := b.List(context.Background(), func(blobs.Info) error { n++; return nil }); err != nil || n != 1 {
			t.Fatalf("List = %d blobs %v, want 1", n, err)
		}
	}},
}

// TestConformance runs every case against every backend.
func TestConformance(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			open := be.setup(t)
			for _, tc := range conformance {
				t.Run(tc.name, func(t *testing.T) { tc.run(t, open(t)) })
			}
		})
	}
}

// TestPutReaderMemoryIsFlat streams 48 MiB into each backend and checks that
// the heap did not grow by anything like the blob's size.
func TestPutReaderMemoryIsFlat(t *testing.T) {
	const size = 48 << 20
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			b := be.setup(t)(t)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			info, _, err := b.PutReader(context.Background(), io.LimitReader(&patternReader{}, size))
			if err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			if info.Size != size {
				t.Fatalf("stored %d bytes", info.Size)
			}
			if grown := after.TotalAlloc - before.TotalAlloc; grown > size/2 {
				t.Fatalf("PutReader of %d MiB allocated %d MiB", size>>20, grown>>20)
			}
		})
	}
}

func second[T any](_ T, err error) error { return err }

// cancelAfter cancels its context once n bytes have been read.
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n -= n
	if c.n <= 0 {
		c.cancel()
	}
	return n, err
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// patternReader yields an endless cheap byte stream.
type patternReader struct{ i byte }

func (p *patternReader) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = p.i
		p.i += 7
	}
	return len(b), nil
}
