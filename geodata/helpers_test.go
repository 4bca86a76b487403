package geodata

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fixture returns the path of a file in testdata.
func fixture(name string) string { return filepath.Join("testdata", name) }

// logRecorder is a slog.Handler that keeps the messages it is given.
type logRecorder struct {
	mu   sync.Mutex
	recs []string // "LEVEL message attrs..."
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	h.mu.Lock()
	h.recs = append(h.recs, b.String())
	h.mu.Unlock()
	return nil
}

// count returns how many messages contain every one of parts.
func (h *logRecorder) count(parts ...string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
next:
	for _, r := range h.recs {
		for _, p := range parts {
			if !strings.Contains(r, p) {
				continue next
			}
		}
		n++
	}
	return n
}

func (h *logRecorder) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.recs, "\n")
}

func newLogger() (*slog.Logger, *logRecorder) {
	h := &logRecorder{}
	return slog.New(h), h
}

// openTest opens a DB that is closed when the test ends.
func openTest(t testing.TB, cfg Config) (*DB, *logRecorder) {
	t.Helper()
	logger, logs := newLogger()
	db, err := Open(cfg, logger)
	if err != nil {
		t.Fatalf("Open: %v\nlog:\n%s", err, logs)
	}
	t.Cleanup(func() { db.Close() })
	return db, logs
}

// replaceFile replaces dst with data the way downloads and deploys do: write
// a temporary file beside it, then rename it over dst.
func replaceFile(t testing.TB, dst string, data []byte) {
	t.Helper()
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(fixture(name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
