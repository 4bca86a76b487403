package databases

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
)

// Query answers are written piece by piece rather than through
// encoding/json: the rows are already JSON, and encoding/json would copy
// them once more into a buffer it keeps pooled, so that one large answer
// left its size in memory after it was sent. Written this way an answer
// costs its rows (bounded by Limits.MaxResultBytes) and nothing more.

// writeAnswer writes a query answer with status 200.
func writeAnswer(w http.ResponseWriter, write func(io.Writer) error) error {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	return write(w)
}

// WriteTo writes the answer as JSON, as encoding/json would lay it out.
func (a QueryAnswer) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	cw.str(`{"results":`)
	cw.raw(a.Results)
	cw.str(`,"statements":` + strconv.Itoa(a.Statements) + `,"meta":`)
	cw.meta(a.Meta)
	cw.str("}\n")
	return cw.n, cw.err
}

// WriteTo writes the answer as JSON, as encoding/json would lay it out.
func (a BatchAnswer) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	cw.str(`{"batch":[`)
	for i, r := range a.Batch {
		if i > 0 {
			cw.str(",")
		}
		cw.str(`{"results":`)
		cw.raw(r.Results)
		cw.str(`,"meta":`)
		cw.meta(r.Meta)
		cw.str("}")
	}
	cw.str("]}\n")
	return cw.n, cw.err
}

// countWriter writes until the first error and counts what it wrote.
type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) raw(b []byte) {
	if c.err != nil {
		return
	}
	if len(b) == 0 {
		b = emptyRows
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
}

func (c *countWriter) str(s string) { c.raw([]byte(s)) }

func (c *countWriter) meta(m Meta) {
	b, err := json.Marshal(m)
	if err != nil {
		c.err = err
		return
	}
	c.raw(b)
}
