package media

import (
	"context"
	"errors"
	"fmt"

	"github.com/svcplatform/platform/controlplane/projects"
)

// The area's parts of project deletion and the project read.
var (
	_ projects.Dependent = (*Service)(nil)
	_ projects.Counter   = (*Service)(nil)
)

// Name names the area's resources in teardown messages.
func (s *Service) Name() string { return "media" }

// Blockers: media never blocks a project's deletion.
func (s *Service) Blockers(context.Context, string) ([]projects.Blocker, error) { return nil, nil }

// Remove deletes every video and live channel of a project: processing is
// stopped, files go, then the rows. An asset whose files could not all be
// removed keeps its row, so calling Remove again (a retried project
// delete) finds it and tries again; the error names the asset
// (projects.LeftBehind), the host paths stay in the wrapped error.
func (s *Service) Remove(ctx context.Context, projectID string) error {
	rs, err := queryRecords(ctx, s.d.DB, `project_id = ?`, projectID)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range rs {
		if err := s.removeAsset(ctx, r); err != nil {
			errs = append(errs, projects.LeftBehind("media asset "+r.ID, err))
		}
	}
	return errors.Join(errs...)
}

// removeAsset stops and deletes one asset: its processing job (waited
// for, so it writes nothing afterwards), its files, then its row.
func (s *Service) removeAsset(ctx context.Context, r record) error {
	s.mu.Lock()
	run := s.running[r.ID]
	s.mu.Unlock()
	if run != nil {
		run.cancel()
		select {
		case <-run.done:
		case <-ctx.Done():
			return fmt.Errorf("media: remove %s: %w", r.ID, ctx.Err())
		}
	}
	dirs := []string{s.assetDir(r.ID)}
	if d := s.jobDir(r.ID); d != "" {
		dirs = append(dirs, d)
	}
	if r.Kind == KindLive && s.live != nil {
		dirs = append(dirs, s.live.channelDir(r.ID))
	}
	for _, d := range dirs {
		if err := s.removeAll(d); err != nil {
			return fmt.Errorf("media: remove %s files: %w", r.ID, err)
		}
	}
	if _, err := s.d.DB.ExecContext(ctx, `DELETE FROM media_assets WHERE id = ?`, r.ID); err != nil {
		return fmt.Errorf("media: remove %s: %w", r.ID, err)
	}
	return nil
}

// Service is the key of the project read's services object.
func (s *Service) Service() string { return "media" }

// Count returns how many videos and live channels a project holds.
func (s *Service) Count(ctx context.Context, projectID string) (int, error) {
	var n int
	if err := s.d.DB.QueryRowContext(ctx, `SELECT count(*) FROM media_assets WHERE project_id = ?`, projectID).Scan(&n); err != nil {
		return 0, fmt.Errorf("media: count: %w", err)
	}
	return n, nil
}
