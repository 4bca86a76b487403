package cache

import (
	"time"

	"github.com/valyala/fasthttp"
)

// Capture keeps a copy of a response body the edge streams to the visitor
// (chunked, or too long to buffer before answering), and stores the
// response once the body has ended within Config.MaxEntryBytes. Past the
// bound it stops copying and drops what it had, so a large download costs
// the cache nothing. It is not safe for concurrent use; one goroutine
// writes the body through it and calls Finish or Abort.
type Capture struct {
	p    *pending
	buf  []byte
	max  int64
	over bool
	done bool
}

// Capture starts storing the origin's response to a forwarded GET request
// while its body streams (RFC 9111 §3: a response may be stored whatever
// its framing). It returns nil with the Decision when the response is not
// to be stored, or is announced larger than Config.MaxEntryBytes; unsafe
// methods invalidate as with [Cache.Store]. The status and header fields
// are copied now: resp and req may be released before Finish. Write the
// body through the Capture as it is forwarded, then call
// [Capture.Finish] when it ended cleanly, or [Capture.Abort] when it did not.
func (c *Cache) Capture(target string, req *fasthttp.Request, resp *fasthttp.Response, requestTime, responseTime time.Time) (*Capture, Decision) {
	p, d := c.prepare(target, req, resp, requestTime, responseTime)
	if p == nil {
		return nil, d
	}
	// The fields refer to resp's buffers: copy them now.
	fs := make([]field, len(p.fields))
	for i, f := range p.fields {
		fs[i] = field{name: append([]byte(nil), f.name...), value: append([]byte(nil), f.value...)}
	}
	p.fields = fs
	cp := &Capture{p: p, max: c.cfg.MaxEntryBytes}
	if cl := resp.Header.ContentLength(); cl > 0 {
		cp.buf = make([]byte, 0, cl)
	}
	return cp, d
}

// Write copies p while the body is within the bound. It never fails, so
// it can sit in an io.MultiWriter or io.TeeReader beside the visitor's
// connection.
func (cp *Capture) Write(p []byte) (int, error) {
	if cp.over || cp.done {
		return len(p), nil
	}
	if int64(len(cp.buf)+len(p)) > cp.max {
		cp.over, cp.buf = true, nil
		return len(p), nil
	}
	cp.buf = append(cp.buf, p...)
	return len(p), nil
}

// Finish stores the response with the body written, once. The Decision
// says what happened: ReasonTooLarge when the body passed the bound.
func (cp *Capture) Finish() Decision {
	if cp.done {
		d := cp.p.d
		d.Reason = ReasonRejected
		return d
	}
	cp.done = true
	if cp.over {
		d := cp.p.d
		d.Reason = ReasonTooLarge
		return d
	}
	d := cp.p.commit(cp.buf)
	cp.buf = nil
	return d
}

// Abort drops the copy: the body did not end cleanly (the origin or the
// visitor went away), and an incomplete response is never stored.
func (cp *Capture) Abort() {
	cp.done, cp.buf = true, nil
}
