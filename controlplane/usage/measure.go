package usage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/metering"
)

// JobMeasure is the daily measuring job's kind.
const JobMeasure = "usage.measure"

// MeasureEvery is how often the measuring job runs.
const MeasureEvery = 24 * time.Hour

// registerJobs registers the measuring job on r, every interval. Its
// schedule lives in the jobs table, so it survives restarts; running it
// twice on a day replaces that day's measurements.
func (s *Service) registerJobs(r jobs.Queue, every time.Duration) {
	r.Register(JobMeasure, func(ctx context.Context, _ jobs.Job) error {
		_, err := s.Measure(ctx)
		return err
	}, jobs.KindOptions{MaxAttempts: 5, Backoff: []time.Duration{time.Minute, 10 * time.Minute, time.Hour}, Timeout: 10 * time.Minute})
	r.Every(JobMeasure, every)
}

// Measure asks every Sizer for every workspace's sizes and stores them
// under today's UTC day. It returns how many workspace measurements were
// written; a workspace whose sizer fails is skipped (its error joined to
// the result) while the others are written.
func (s *Service) Measure(ctx context.Context) (int, error) {
	if s.d.Workspaces == nil || len(s.d.Sizers) == 0 {
		return 0, nil
	}
	wss, err := s.d.Workspaces(ctx)
	if err != nil {
		return 0, fmt.Errorf("usage: measure: %w", err)
	}
	kinds := make([]string, 0, len(s.d.Sizers))
	for k := range s.d.Sizers {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	now := s.d.Clock.Now()
	day := metering.DayOf(now)
	n := 0
	var errs []error
	for _, ws := range wss {
		for _, kind := range kinds {
			sizes, err := s.d.Sizers[kind].Sizes(ctx, ws)
			if err != nil {
				errs = append(errs, fmt.Errorf("usage: measure %s of %s: %w", kind, ws, err))
				continue
			}
			if err := replaceMeasurements(ctx, s.d.DB, ws, kind, day, now, sizes); err != nil {
				errs = append(errs, err)
				continue
			}
			n++
		}
	}
	return n, errors.Join(errs...)
}
