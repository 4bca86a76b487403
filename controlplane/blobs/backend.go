package blobs

import (
	"context"
	"io"
	"time"
)

// Backend is where content-addressed blobs live: the local directory
// (*Store) or an S3-compatible bucket (*S3). Both give the same answers:
// a blob is named by the SHA-256 of its bytes, written once (putting bytes
// the backend already holds writes nothing and reports written false), never
// changed afterwards, and a name that is not 64 lower-case hex digits is
// refused with ErrBadSum before any I/O. A blob the backend does not hold is
// ErrNotFound (errors.Is).
//
// The methods without a context (Put, Has, Read, Head) are the ones the
// consumers of the file store already call; on S3 they run under the
// backend's own time limit (S3Config.Timeout).
type Backend interface {
	// Put stores data and returns its name and whether it was newly written.
	Put(data []byte) (sum string, written bool, err error)
	// PutReader stores the bytes of r without holding them all in memory
	// and returns what was stored and whether it was newly written. The
	// caller bounds r (io.LimitReader) when its size is untrusted.
	PutReader(ctx context.Context, r io.Reader) (info Info, written bool, err error)
	// Has reports whether the backend holds sum. An I/O error reads as
	// false; Stat tells a missing blob from a failing backend.
	Has(sum string) bool
	// Stat returns the size and time of the blob named sum.
	Stat(ctx context.Context, sum string) (Info, error)
	// Read returns all the bytes of the blob named sum.
	Read(sum string) ([]byte, error)
	// Head returns up to n leading bytes of the blob named sum.
	Head(sum string, n int) ([]byte, error)
	// Get opens the blob named sum for reading, seeking and ranged reads
	// (ReadAt). The object reads under ctx: keep ctx alive until Close.
	Get(ctx context.Context, sum string) (Object, error)
	// Delete removes the blob named sum. Deleting a blob that is not there
	// is not an error, so a cleanup that dies half-way can simply rerun.
	Delete(ctx context.Context, sum string) error
	// List calls fn for every blob, in no particular order, until fn
	// returns an error, which List returns. Stray objects whose names are
	// not blob names are skipped.
	List(ctx context.Context, fn func(Info) error) error
	// String describes the backend for logs, without secrets.
	String() string
}

// Object is an open blob: read it, seek in it, or read a range with ReadAt
// (the edge's and http.ServeContent's Range support). Close releases it.
type Object interface {
	io.ReadSeekCloser
	io.ReaderAt
	// Info returns the blob's name, size and time, known when it was opened.
	Info() Info
}

// Info describes a stored blob.
type Info struct {
	// Sum is the blob's name: the lower-case hex SHA-256 of its bytes.
	Sum string `json:"sha256"`
	// Size is its length in bytes.
	Size int64 `json:"size"`
	// ModTime is when it was written (the file's mtime, the object's
	// Last-Modified), good for an HTTP Last-Modified and for a cleanup's
	// grace period.
	ModTime time.Time `json:"mod_time"`
}

// Interface guards.
var (
	_ Backend = (*Store)(nil)
	_ Backend = (*S3)(nil)
)
