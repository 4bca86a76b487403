package engine

import (
	"sync"
	"time"

	"github.com/svcplatform/platform/runtime/supervise"
)

// maxFunctionLine cuts longer function log lines.
const maxFunctionLine = 4 << 10

// logRing keeps a function's newest log lines within a byte budget.
type logRing struct {
	mu    sync.Mutex
	lines []supervise.LogLine
	bytes int
	limit int
	now   func() time.Time
	sink  func(supervise.LogLine) // called after each line, outside the lock
}

func (r *logRing) add(stream, text string) {
	if len(text) > maxFunctionLine {
		text = text[:maxFunctionLine]
	}
	l := supervise.LogLine{Time: r.now(), Stream: stream, Text: text}
	r.mu.Lock()
	r.lines = append(r.lines, l)
	r.bytes += len(text)
	for r.bytes > r.limit && len(r.lines) > 1 {
		r.bytes -= len(r.lines[0].Text)
		r.lines[0] = supervise.LogLine{}
		r.lines = r.lines[1:]
	}
	r.mu.Unlock()
	if r.sink != nil {
		r.sink(l)
	}
}

func (r *logRing) snapshot() []supervise.LogLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]supervise.LogLine(nil), r.lines...)
}
