package api

import (
	"bytes"
	"errors"
	"net/http"
)

// ErrAnswerTooLarge is returned by ServeInProcess when the answer passes
// its bound.
var ErrAnswerTooLarge = errors.New("api: answer too large")

// ServeInProcess serves req through h (the API's own handler) into memory
// and returns the status and the body without surrounding white space. It
// keeps at most max bytes: past that the handler's writes fail and the
// result is ErrAnswerTooLarge. Agents' tools and the assistant connector
// call the REST routes this way, so their permissions, limits and audit are
// the API's own.
func ServeInProcess(h http.Handler, req *http.Request, max int) (int, []byte, error) {
	rec := &recorder{header: http.Header{}, max: max}
	h.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	if rec.overflow {
		return rec.status, nil, ErrAnswerTooLarge
	}
	return rec.status, bytes.TrimSpace(rec.body.Bytes()), nil
}

// recorder is the bounded ResponseWriter of ServeInProcess.
type recorder struct {
	header   http.Header
	status   int
	body     bytes.Buffer
	max      int
	overflow bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.body.Len()+len(b) > r.max {
		r.overflow = true
		return 0, ErrAnswerTooLarge
	}
	return r.body.Write(b)
}
