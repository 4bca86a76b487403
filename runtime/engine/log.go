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
}

func (r *logRing) add(stream, text string) {
	if len(text) > maxFunctionLine {
		text = text[:maxFunctionLine]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, supervise.LogLine{Time: r.now(), Stream: stream, Text: text})
	r.bytes += len(text)
	for r.bytes > r.limit && len(r.lines) > 1 {
		r.bytes -= len(r.lines[0].Text)
		r.lines[0] = supervise.LogLine{}
		r.lines = r.lines[1:]
	}
}

func (r *logRing) snapshot() []supervise.LogLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]supervise.LogLine(nil), r.lines...)
}
