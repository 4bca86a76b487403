package databases

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/metering"
)

// usage gathers query and row counts in memory and hands them to the meter
// in one event per workspace, project, metric and day at each flush: a
// query then costs no write to the metadata database. A crash loses at
// most the counts of one flush interval.
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

// add counts quantity of metric at time at.
func (u *usage) add(workspace, project string, metric metering.Metric, quantity float64, at time.Time) {
	if quantity == 0 {
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

// flush records what was gathered; counts that fail to record are kept for
// the next flush.
func (u *usage) flush(ctx context.Context) error {
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
