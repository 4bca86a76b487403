package edge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
)

// blobStore finds the bytes of deployed files by SHA-256: in the shared
// blob directory when the edge runs beside the control plane, otherwise in
// its own copy under DataDir/edge/blobs (the same content-addressed layout,
// package blobs), fetched once from the control plane and verified. Blobs
// are immutable, so a copy never goes stale.
type blobStore struct {
	shared *blobs.Store // DATA/blobs of `platform serve`; nil for a remote edge
	local  *blobs.Store
	base   string // control plane URL
	token  string
	client *http.Client
	m      *metrics
	flight flightGroup
}

// fetchWorkers is how many blobs are fetched at once when a configuration
// arrives.
const fetchWorkers = 4

// ErrBlobMismatch is returned when fetched bytes do not match their name or
// size.
var ErrBlobMismatch = errors.New("edge: blob does not match its sha256 or size")

// open opens the blob named sum, fetching it first when no copy is here.
func (b *blobStore) open(sum string, size int64) (*os.File, error) {
	if !blobs.ValidSum(sum) {
		return nil, fmt.Errorf("edge: blob %q: %w", sum, blobs.ErrBadSum)
	}
	if b.shared != nil {
		if f, err := b.shared.Open(sum); err == nil {
			return f, nil
		}
	}
	f, err := b.local.Open(sum)
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, blobs.ErrNotFound) {
		return nil, fmt.Errorf("edge: %w", err)
	}
	if err := b.fetchOnce(context.Background(), sum, size); err != nil {
		return nil, err
	}
	return b.local.Open(sum)
}

// read returns the bytes of the blob named sum.
func (b *blobStore) read(sum string, size int64) ([]byte, error) {
	f, err := b.open(sum, size)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, 0, max(size, 0)+1)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("edge: blob %s: %w", sum, err)
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
	if size >= 0 && int64(len(data)) != size {
		return nil, fmt.Errorf("%w: %s has %d bytes, want %d", ErrBlobMismatch, sum, len(data), size)
	}
	return data, nil
}

// has reports whether a copy of sum is here.
func (b *blobStore) has(sum string) bool {
	return (b.shared != nil && b.shared.Has(sum)) || b.local.Has(sum)
}

// ensure fetches every blob of refs that is not here yet, a few at a time.
// A configuration is applied only once ensure succeeds, so a swap never
// serves a file whose bytes are missing.
func (b *blobStore) ensure(ctx context.Context, refs []blobRef) error {
	var missing []blobRef
	for _, r := range refs {
		if blobs.ValidSum(r.sum) && !b.has(r.sum) {
			missing = append(missing, r)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	work := make(chan blobRef)
	errc := make(chan error, len(missing))
	var wg sync.WaitGroup
	for range min(fetchWorkers, len(missing)) {
		wg.Go(func() {
			for r := range work {
				errc <- b.fetchOnce(ctx, r.sum, r.size)
			}
		})
	}
	for _, r := range missing {
		work <- r
	}
	close(work)
	wg.Wait()
	close(errc)
	var errs []error
	for err := range errc {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// fetchOnce fetches sum, once for concurrent callers.
func (b *blobStore) fetchOnce(ctx context.Context, sum string, size int64) error {
	_, err := b.flight.do("blob\x00"+sum, func() (any, error) { return nil, b.fetch(ctx, sum, size) })
	return err
}

// fetch downloads sum from the control plane into the local copy,
// verifying its hash and size, and renames it into place.
func (b *blobStore) fetch(ctx context.Context, sum string, size int64) (err error) {
	defer func() {
		if err != nil {
			b.m.blobFetches.WithLabelValues("error").Inc()
		} else {
			b.m.blobFetches.WithLabelValues("ok").Inc()
		}
	}()
	if b.base == "" {
		return fmt.Errorf("edge: blob %s: %w", sum, blobs.ErrNotFound)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+snapshot.BlobsPath+sum, nil)
	if err != nil {
		return fmt.Errorf("edge: fetch blob %s: %w", sum, err)
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("edge: fetch blob %s: %w", sum, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("edge: fetch blob %s: control plane answered %s", sum, resp.Status)
	}
	dst, err := b.local.Path(sum)
	if err != nil {
		return fmt.Errorf("edge: fetch blob %s: %w", sum, err)
	}
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("edge: fetch blob %s: %w", sum, err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("edge: fetch blob %s: %w", sum, err)
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	limit := int64(1 << 62)
	if size >= 0 {
		limit = size + 1
	}
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, limit))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("edge: fetch blob %s: %w", sum, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != sum || (size >= 0 && n != size) {
		return fmt.Errorf("%w: %s", ErrBlobMismatch, sum)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("edge: fetch blob %s: %w", sum, err)
	}
	return nil
}

// flightGroup runs one call per key at a time and shares its result with
// the callers that arrive meanwhile.
type flightGroup struct {
	mu sync.Mutex
	m  map[string]*flight
}

type flight struct {
	done chan struct{}
	val  any
	err  error
}

func (g *flightGroup) do(key string, fn func() (any, error)) (any, error) {
	g.mu.Lock()
	if g.m == nil {
		g.m = map[string]*flight{}
	}
	if f, ok := g.m[key]; ok {
		g.mu.Unlock()
		<-f.done
		return f.val, f.err
	}
	f := &flight{done: make(chan struct{})}
	g.m[key] = f
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.m, key)
		g.mu.Unlock()
		close(f.done)
	}()
	f.val, f.err = fn()
	return f.val, f.err
}
