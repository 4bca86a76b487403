package supervise

import (
	"bytes"
	"sync"
	"time"
)

// maxLineBytes cuts longer output lines (the rest follows as a new line).
const maxLineBytes = 4 << 10

// LogLine is one line of a deployment's output or of the supervisor's
// notes about it (Stream "platform").
type LogLine struct {
	Time   time.Time `json:"time"`
	Stream string    `json:"stream"`
	Text   string    `json:"text"`
}

// ring keeps the newest lines within a byte budget.
type ring struct {
	mu    sync.Mutex
	lines []LogLine
	bytes int
	limit int
	now   func() time.Time
	added func() // called after each line, outside the lock
	sink  func(LogLine)
}

func (r *ring) add(stream, text string) {
	l := LogLine{Time: r.now(), Stream: stream, Text: text}
	r.mu.Lock()
	r.lines = append(r.lines, l)
	r.bytes += len(text)
	for r.bytes > r.limit && len(r.lines) > 1 {
		r.bytes -= len(r.lines[0].Text)
		r.lines[0] = LogLine{}
		r.lines = r.lines[1:]
	}
	r.mu.Unlock()
	if r.sink != nil {
		r.sink(l)
	}
	if r.added != nil {
		r.added()
	}
}

func (r *ring) snapshot() []LogLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]LogLine(nil), r.lines...)
}

// lineWriter splits a stream into lines for the ring.
type lineWriter struct {
	r      *ring
	stream string
	mu     sync.Mutex
	buf    []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			for len(w.buf) >= maxLineBytes {
				w.r.add(w.stream, string(w.buf[:maxLineBytes]))
				w.buf = append(w.buf[:0], w.buf[maxLineBytes:]...)
			}
			break
		}
		w.buf = append(w.buf, p[:i]...)
		for len(w.buf) > maxLineBytes {
			w.r.add(w.stream, string(w.buf[:maxLineBytes]))
			w.buf = append(w.buf[:0], w.buf[maxLineBytes:]...)
		}
		w.r.add(w.stream, string(w.buf))
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// flush adds a last unterminated line.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.r.add(w.stream, string(w.buf))
		w.buf = w.buf[:0]
	}
}
