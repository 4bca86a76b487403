package media

import (
	"context"
	"errors"
	"fmt"
	"os"

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
// stopped, files go, then rows. Safe to call again after a partial failure.
func (s *Service) Remove(ctx context.Context, projectID string) error {
	rs, err := queryRecords(ctx, s.d.DB, `project_id = ?`, projectID)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range rs {
		errs = append(errs, s.removeAsset(ctx, r))
	}
	return errors.Join(errs...)
}

// removeAsset stops and deletes one asset.
func (s *Service) removeAsset(ctx context.Context, r record) error {
	s.mu.Lock()
	if cancel, ok := s.running[r.ID]; ok {
		cancel()
	}
	s.mu.Unlock()
	if _, err := s.d.DB.ExecContext(ctx, `DELETE FROM media_assets WHERE id = ?`, r.ID); err != nil {
		return fmt.Errorf("media: remove %s: %w", r.ID, err)
	}
	if err := os.RemoveAll(s.assetDir(r.ID)); err != nil {
		return fmt.Errorf("media: remove %s files: %w", r.ID, err)
	}
	if r.Kind == KindLive && s.live != nil {
		os.RemoveAll(s.live.channelDir(r.ID))
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
