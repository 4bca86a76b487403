package buckets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/svcplatform/platform/controlplane/blobs"
)

// partsReader reads an object made of parts as one stream: it opens the
// blob of the part under the position when a read needs it and seeks in
// it, so http.ServeContent answers Range requests across parts with one
// open blob at a time.
type partsReader struct {
	ctx   context.Context
	b     blobs.Backend
	parts []partRow
	start []int64 // offset of each part
	size  int64

	pos    int64
	cur    blobs.Object
	curIdx int
	curPos int64 // position of cur relative to its part
}

func newPartsReader(ctx context.Context, b blobs.Backend, parts []partRow) *partsReader {
	r := &partsReader{ctx: ctx, b: b, parts: parts, start: make([]int64, len(parts)), curIdx: -1}
	for i, p := range parts {
		r.start[i] = r.size
		r.size += p.Size
	}
	return r
}

func (r *partsReader) Read(p []byte) (int, error) {
	for r.pos < r.size {
		// The last part starting at or before pos: never an empty one,
		// since the part after an empty part starts where it does.
		i := sort.Search(len(r.start), func(i int) bool { return r.start[i] > r.pos }) - 1
		off := r.pos - r.start[i]
		if r.curIdx != i {
			if r.cur != nil {
				r.cur.Close()
				r.cur = nil
			}
			obj, err := r.b.Get(r.ctx, r.parts[i].Sum)
			if err != nil {
				return 0, fmt.Errorf("buckets: part %d: %w", i, err)
			}
			r.cur, r.curIdx, r.curPos = obj, i, 0
		}
		if r.curPos != off {
			if _, err := r.cur.Seek(off, io.SeekStart); err != nil {
				return 0, fmt.Errorf("buckets: part %d: %w", i, err)
			}
			r.curPos = off
		}
		left := r.parts[i].Size - off
		if int64(len(p)) > left {
			p = p[:left]
		}
		n, err := r.cur.Read(p)
		r.pos += int64(n)
		r.curPos += int64(n)
		if errors.Is(err, io.EOF) {
			if r.curPos < r.parts[i].Size {
				return n, fmt.Errorf("buckets: part %d is shorter than recorded: %w", i, io.ErrUnexpectedEOF)
			}
			err = nil
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
	return 0, io.EOF
}

func (r *partsReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.pos
	case io.SeekEnd:
		offset += r.size
	default:
		return 0, errors.New("buckets: seek: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("buckets: seek before the start")
	}
	r.pos = offset
	return offset, nil
}

func (r *partsReader) Close() error {
	if r.cur != nil {
		err := r.cur.Close()
		r.cur = nil
		return err
	}
	return nil
}
