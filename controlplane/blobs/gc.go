package blobs

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// DefaultGrace is how old an unreferenced blob must be before Collect
// deletes it when no grace is given: far longer than any upload, push or
// deploy takes between writing its blobs and recording the rows that name
// them.
const DefaultGrace = 24 * time.Hour

// RefSource is an area that names blobs in its rows (repo commits,
// deployments). BlobRefs calls fn for every sum the area still references,
// in any order and possibly more than once, and returns fn's error or its
// own.
type RefSource interface {
	BlobRefs(ctx context.Context, fn func(sum string) error) error
}

// RefSourceFunc adapts a function to RefSource.
type RefSourceFunc func(ctx context.Context, fn func(sum string) error) error

// BlobRefs implements RefSource.
func (f RefSourceFunc) BlobRefs(ctx context.Context, fn func(sum string) error) error {
	return f(ctx, fn)
}

// ErrRefSource wraps the failure of a RefSource: Collect deleted nothing.
var ErrRefSource = errors.New("blobs: gc: reference source failed")

// GCStats is what one Collect did.
type GCStats struct {
	// Listed is the number of blobs the backend held.
	Listed int `json:"listed"`
	// Referenced is the number of listed blobs kept because a source names them.
	Referenced int `json:"referenced"`
	// KeptYoung is the number of unreferenced blobs kept because they are
	// younger than the grace period (or their time is unknown).
	KeptYoung int `json:"kept_young"`
	// Deleted is the number of blobs deleted, BytesFreed their total size.
	Deleted    int   `json:"deleted"`
	BytesFreed int64 `json:"bytes_freed"`
	// Refs is the number of distinct valid sums the sources named; Missing
	// is how many of them the backend did not list (a referenced blob
	// that is gone: worth an alert, never caused by Collect).
	Refs    int `json:"refs"`
	Missing int `json:"missing"`
}

// key is a blob name in 32 bytes rather than 64 hex characters, so the
// marked set of a large store costs half the memory.
type key [32]byte

func keyOf(sum string) (key, bool) {
	var k key
	if !ValidSum(sum) {
		return k, false
	}
	if _, err := hex.Decode(k[:], []byte(sum)); err != nil {
		return k, false
	}
	return k, true
}

// Collect deletes the blobs of b that no source references and that are
// older than grace (DefaultGrace when grace <= 0) at now, by Info.ModTime.
//
// It works in three steps: list every blob (keeping only the old ones as
// candidates), mark every sum the sources name, then delete the old
// unreferenced candidates, each after a fresh Stat confirms it is still
// old. Listing before marking means a blob referenced by a row committed
// before the mark is never deleted; the grace period keeps blobs written by
// an upload or deploy whose rows are not committed yet.
//
// If listing or any source fails, Collect returns the error and deletes
// nothing. A failed Delete stops the sweep and is returned with the
// stats so far; Delete is idempotent, so the next run simply goes on.
func Collect(ctx context.Context, b Backend, sources []RefSource, now time.Time, grace time.Duration) (GCStats, error) {
	if grace <= 0 {
		grace = DefaultGrace
	}
	var st GCStats
	cutoff := now.Add(-grace)

	// 1. List: the old blobs are candidates, the young ones are kept.
	old := make(map[key]struct{})
	young := make(map[key]struct{}) // a day's writes: small
	err := b.List(ctx, func(in Info) error {
		k, ok := keyOf(in.Sum)
		if !ok {
			return nil // List skips strays already; be safe anyway
		}
		st.Listed++
		if in.ModTime.IsZero() || in.ModTime.After(cutoff) {
			st.KeptYoung++
			young[k] = struct{}{}
			return nil
		}
		old[k] = struct{}{}
		return nil
	})
	if err != nil {
		return GCStats{}, fmt.Errorf("blobs: gc: list: %w", err)
	}

	// 2. Mark: every sum any source still names. Any failure and nothing
	// is deleted.
	marked := make(map[key]struct{})
	for i, src := range sources {
		err := src.BlobRefs(ctx, func(sum string) error {
			if k, ok := keyOf(sum); ok {
				marked[k] = struct{}{}
			}
			return ctx.Err()
		})
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return GCStats{}, fmt.Errorf("%w: source %d (%T): %w", ErrRefSource, i, src, err)
		}
	}
	st.Refs = len(marked)
	for k := range marked {
		if _, ok := old[k]; ok {
			st.Referenced++
			delete(old, k)
		} else if _, ok := young[k]; ok {
			st.Referenced++
			st.KeptYoung--
		} else {
			st.Missing++
		}
	}

	// 3. Sweep: the old unreferenced blobs, each confirmed old just before
	// its delete (a writer that touched it meanwhile keeps it).
	for k := range old {
		sum := hex.EncodeToString(k[:])
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("blobs: gc: sweep: %w", err)
		}
		in, err := b.Stat(ctx, sum)
		if errors.Is(err, ErrNotFound) {
			continue // deleted by another run
		}
		if err != nil {
			return st, fmt.Errorf("blobs: gc: stat %s: %w", sum, err)
		}
		if in.ModTime.IsZero() || in.ModTime.After(cutoff) {
			st.KeptYoung++
			continue
		}
		if err := b.Delete(ctx, sum); err != nil {
			return st, fmt.Errorf("blobs: gc: delete %s: %w", sum, err)
		}
		st.Deleted++
		st.BytesFreed += in.Size
	}
	return st, nil
}
