package projects

import (
	"context"
	"fmt"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Delete removes a project and everything it owns.
//
//  1. Every dependent area is asked for blockers (unwithdrawn earnings, a
//     pending withdrawal, a payable link, a running deploy); any blocker
//     answers 409 deletion_blocked with blockers[] and changes nothing.
//  2. Every dependent removes its resources. When one fails the project is
//     kept as teardown_failed (only reads and deletes accepted) and the
//     answer is 502 teardown_incomplete naming what is left; deleting again
//     retries the removal.
//  3. Otherwise the project row and its variables go.
func (s *Service) Delete(ctx context.Context, pr *auth.Principal, id string) error {
	p, err := s.Get(ctx, pr.WorkspaceID, id)
	if err != nil {
		return err
	}
	var blockers []Blocker
	for _, d := range s.dependents {
		b, err := d.Blockers(ctx, id)
		if err != nil {
			return fmt.Errorf("projects: %s blockers: %w", d.Name(), err)
		}
		blockers = append(blockers, b...)
	}
	if len(blockers) > 0 {
		return api.Conflict("deletion_blocked", "project %s cannot be deleted yet: %d thing(s) to settle first", p.Name, len(blockers)).
			With("blockers", blockers)
	}
	var failed []string
	for _, d := range s.dependents {
		if err := d.Remove(ctx, id); err != nil {
			failed = append(failed, d.Name()+": "+err.Error())
		}
	}
	if len(failed) > 0 {
		msg := strings.Join(failed, "; ")
		err := s.store.MarkTeardownFailed(ctx, id, msg, s.clock.Now(), audit.Event{Workspace: pr.WorkspaceID, Actor: pr,
			Action: "project.teardown_failed", Category: audit.CategoryProject, TargetType: "project", TargetID: id, ProjectID: id,
			Summary: "deletion incomplete: " + msg})
		if err != nil {
			return err
		}
		return api.E(api.KindBadGateway, "teardown_incomplete",
			"project %s could not be removed completely and is kept as teardown_failed; DELETE it again to retry", p.Name).
			With("failed", failed).With("status", StatusTeardownFailed)
	}
	return s.store.DeleteProject(ctx, id, s.clock.Now(), audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "project.delete",
		Category: audit.CategoryProject, TargetType: "project", TargetID: id, ProjectID: id, Summary: fmt.Sprintf("deleted project %s (%s)", p.Name, p.Slug)})
}
