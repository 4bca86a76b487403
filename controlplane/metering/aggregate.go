package metering

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store"
)

// Aggregator sums events of a hot path in memory and writes them as one
// batch per flush: Add is a map update under a mutex (no allocation once a
// workspace, project, metric and day have been seen), and a flush writes
// one event per workspace, project, metric and UTC day.
//
// Flushes are exact: a batch gets an id when it is taken from memory and
// keeps it until the BatchRecorder accepts it, so a flush retried after an
// error (including one whose write did commit) never counts twice, and
// nothing is lost while the process runs. A crash loses at most what was
// added since the last flush.
type Aggregator struct {
	rec BatchRecorder
	clk clock.Clock

	mu   sync.Mutex
	sums map[aggKey]aggSum

	flushMu sync.Mutex
	pending *batch // taken from sums, not yet written
}

type aggKey struct {
	workspace, project string
	metric             Metric
	day                int64 // days since 1970-01-01 UTC
}

type aggSum struct {
	quantity float64
	first    time.Time
}

type batch struct {
	id     string
	events []Event
}

// NewAggregator returns an aggregator writing through rec; clk stamps
// events added with a zero time (clock.System when nil).
func NewAggregator(rec BatchRecorder, clk clock.Clock) *Aggregator {
	if clk == nil {
		clk = clock.System{}
	}
	return &Aggregator{rec: rec, clk: clk, sums: map[aggKey]aggSum{}}
}

// Add counts quantity of metric for workspace and project at time at (zero
// for now). Empty workspaces, empty metrics and zero quantities are
// ignored, and so is everything on a nil Aggregator (an area built
// without a meter).
func (a *Aggregator) Add(workspace, project string, metric Metric, quantity float64, at time.Time) {
	if a == nil || quantity == 0 || workspace == "" || metric == "" {
		return
	}
	if at.IsZero() {
		at = a.clk.Now()
	}
	k := aggKey{workspace: workspace, project: project, metric: metric, day: unixDay(at)}
	a.mu.Lock()
	s := a.sums[k]
	if s.first.IsZero() {
		s.first = at
	}
	s.quantity += quantity
	a.sums[k] = s
	a.mu.Unlock()
}

func unixDay(t time.Time) int64 {
	s := t.Unix()
	d := s / 86400
	if s%86400 < 0 {
		d--
	}
	return d
}

// Pending reports how many sums wait in memory (not counting a batch being
// retried).
func (a *Aggregator) Pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sums)
}

// Flush writes what was added. A batch that fails keeps its id and is
// written first by the next flush; what is added meanwhile goes in the
// batch after it.
func (a *Aggregator) Flush(ctx context.Context) error {
	if a == nil {
		return nil
	}
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	for range 2 { // the retried batch, then what was added since
		if a.pending == nil {
			a.pending = a.take()
			if a.pending == nil {
				return nil
			}
		}
		if err := a.rec.RecordBatch(ctx, a.pending.id, a.pending.events); err != nil {
			if errors.Is(err, ErrInvalidEvent) {
				a.pending = nil // cannot succeed on retry; Add refuses such events anyway
			}
			return err
		}
		a.pending = nil
	}
	return nil
}

// take moves the sums into a new batch (nil when there are none).
func (a *Aggregator) take() *batch {
	a.mu.Lock()
	sums := a.sums
	if len(sums) == 0 {
		a.mu.Unlock()
		return nil
	}
	a.sums = make(map[aggKey]aggSum, len(sums))
	a.mu.Unlock()
	b := &batch{id: store.NewID("ubt"), events: make([]Event, 0, len(sums))}
	for k, s := range sums {
		b.events = append(b.events, Event{Workspace: k.workspace, Project: k.project, Metric: k.metric, Quantity: s.quantity, At: s.first})
	}
	return b
}
