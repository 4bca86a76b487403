package vectors

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/metering"
)

// The metrics the area records (the lead may move them to metering's list).
const (
	// MetricOperations counts upsert, query, delete and index requests.
	MetricOperations metering.Metric = "vector_operations"
	// MetricQueriedDimensions counts, as Vectorize bills, the dimensions of
	// each query times the vectors it ranked.
	MetricQueriedDimensions metering.Metric = "vector_queried_dimensions"
	// MetricStored is each collection's live vector count, recorded once
	// per UTC day.
	MetricStored metering.Metric = "vectors_stored"
)

// usage gathers counts in memory and hands them to the meter at each
// flush, one event per workspace, project, metric and day.
type usage struct {
	rec     metering.Recorder
	mu      sync.Mutex
	pending map[usageKey]*usageSum
}

type usageKey struct {
	workspace, project string
	metric             metering.Metric
	day                string
}

type usageSum struct {
	quantity float64
	first    time.Time
}

func newUsage(rec metering.Recorder) *usage {
	return &usage{rec: rec, pending: map[usageKey]*usageSum{}}
}

func (u *usage) add(workspace, project string, metric metering.Metric, quantity float64, at time.Time) {
	if quantity == 0 || u.rec == nil {
		return
	}
	k := usageKey{workspace, project, metric, at.UTC().Format("2006-01-02")}
	u.mu.Lock()
	s := u.pending[k]
	if s == nil {
		s = &usageSum{first: at}
		u.pending[k] = s
	}
	s.quantity += quantity
	u.mu.Unlock()
}

// flush records what was gathered; what fails is kept for the next flush.
func (u *usage) flush(ctx context.Context) error {
	if u.rec == nil {
		return nil
	}
	u.mu.Lock()
	batch := u.pending
	u.pending = map[usageKey]*usageSum{}
	u.mu.Unlock()
	var errs []error
	for k, s := range batch {
		err := u.rec.Record(ctx, metering.Event{Workspace: k.workspace, Project: k.project, Metric: k.metric, Quantity: s.quantity, At: s.first})
		if err != nil {
			errs = append(errs, err)
			u.add(k.workspace, k.project, k.metric, s.quantity, s.first)
		}
	}
	return errors.Join(errs...)
}
