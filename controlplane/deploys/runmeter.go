package deploys

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/metering"
)

// DefaultRunMeterEvery is how often the running time of apps and worker
// programs is written as app_run_seconds (Config.RunMeterEvery when 0).
const DefaultRunMeterEvery = time.Minute

// runMeter turns the runtime's running-time reports into app_run_seconds
// events. Reports are taken once from the runtime and summed in an
// aggregator whose flushes are exactly-once (metering.Aggregator: a batch
// keeps its id until stored), so a retried flush never counts twice; a
// crash loses at most one interval.
type runMeter struct {
	agg *metering.Aggregator // nil: cfg.Meter records one event at a time
	ws  map[string]string    // deployment id -> workspace, until its final report
}

// noteRun remembers the workspace of a deployment the runtime runs, so
// its running time is metered even after its rows are gone (project
// deleted).
func (s *Service) noteRun(id, workspace string) {
	s.mu.Lock()
	s.meter.ws[id] = workspace
	s.mu.Unlock()
}

// FlushRunTime meters app_run_seconds: the running time of every app and
// worker program the runtime ran since the previous flush (asleep, crashed
// and backing off do not count), per workspace, project and UTC day. A
// flush that fails keeps what it took and writes it first next time.
func (s *Service) FlushRunTime(ctx context.Context) error {
	rt := s.runtime()
	if rt == nil || s.cfg.Meter == nil {
		return nil
	}
	s.meterMu.Lock()
	defer s.meterMu.Unlock()
	now := s.cfg.Clock.Now()
	var single []metering.Event
	for _, r := range rt.TakeRunTime() {
		s.mu.Lock()
		ws, ok := s.meter.ws[r.ID]
		if r.Final {
			delete(s.meter.ws, r.ID)
		}
		s.mu.Unlock()
		if !ok {
			var err error
			if ws, err = s.workspaceOf(ctx, r.ID); err != nil {
				s.cfg.Logger.Warn("deploys: app running time of an unknown deployment is not metered", "deployment", r.ID, "seconds", r.Duration.Seconds(), "err", err)
				continue
			}
		}
		secs := r.Duration.Seconds()
		if s.meter.agg != nil {
			s.meter.agg.Add(ws, r.Project, metering.AppRunSeconds, secs, now)
		} else {
			single = append(single, metering.Event{Workspace: ws, Project: r.Project, Metric: metering.AppRunSeconds, Quantity: secs, At: now})
		}
	}
	if s.meter.agg != nil {
		if err := s.meter.agg.Flush(ctx); err != nil {
			return fmt.Errorf("deploys: meter app running time: %w", err)
		}
		return nil
	}
	var errs []error
	for _, e := range single {
		errs = append(errs, s.cfg.Meter.Record(ctx, e))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deploys: meter app running time: %w", err)
	}
	return nil
}

// workspaceOf reads a deployment's workspace (a deployment started before
// noteRun knew it).
func (s *Service) workspaceOf(ctx context.Context, id string) (string, error) {
	var ws string
	err := s.cfg.DB.QueryRowContext(ctx, `SELECT workspace_id FROM deployments WHERE id = ?`, id).Scan(&ws)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("deployment %s is gone", id)
	}
	return ws, err
}
