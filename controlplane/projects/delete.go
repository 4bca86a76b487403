package projects

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
//     answer is 502 teardown_incomplete naming what is left (see
//     LeftBehind; the errors themselves are logged, never answered);
//     deleting again retries the removal.
//  3. Otherwise the project row and its variables go.
func (s *Service) Delete(ctx context.Context, pr *auth.Principal, id string) error {
	p, err := s.Get(ctx, pr.WorkspaceID, id)
	if err != nil {
		return err
	}
	blockers, err := s.Blockers(ctx, id)
	if err != nil {
		return err
	}
	if len(blockers) > 0 {
		return api.Conflict("deletion_blocked", "project %s cannot be deleted yet: %d thing(s) to settle first", p.Name, len(blockers)).
			With("blockers", blockers)
	}
	var failed []string
	for _, d := range s.dependents {
		if err := d.Remove(ctx, id); err != nil {
			s.logger().Error("projects: teardown incomplete", "project", id, "area", d.Name(), "err", err)
			failed = append(failed, teardownMessage(d.Name(), err))
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

// Blockers lists what stops project id being deleted now, from every
// dependent area (as DELETE /api/projects/{id} answers them), so that
// deleting a workspace can refuse before it removes any project.
func (s *Service) Blockers(ctx context.Context, id string) ([]Blocker, error) {
	var blockers []Blocker
	for _, d := range s.dependents {
		b, err := d.Blockers(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("projects: %s blockers: %w", d.Name(), err)
		}
		blockers = append(blockers, b...)
	}
	return blockers, nil
}

// RemoveError is a Dependent's Remove failure naming the resource it left
// behind. Teardown answers and the project's teardownError show only
// Resource; Err, which may name host paths, is logged.
type RemoveError struct {
	// Resource names what is left, for people: "media asset med_1",
	// "database db_2".
	Resource string
	Err      error
}

func (e *RemoveError) Error() string { return e.Resource + ": " + e.Err.Error() }

func (e *RemoveError) Unwrap() error { return e.Err }

// LeftBehind wraps err, a failure to remove resource, for Remove to
// return (errors.Join several).
func LeftBehind(resource string, err error) error {
	return &RemoveError{Resource: resource, Err: err}
}

// teardownMessage says what area left behind: the resources its error
// names (LeftBehind), never the error's own words.
func teardownMessage(area string, err error) string {
	var names []string
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *RemoveError:
			if !slices.Contains(names, e.Resource) {
				names = append(names, e.Resource)
			}
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		default:
			walk(errors.Unwrap(err))
		}
	}
	walk(err)
	if len(names) == 0 {
		return area + ": some resources could not be removed (the server log has the details)"
	}
	return area + ": could not remove " + strings.Join(names, ", ")
}

// SetLogger installs where teardown failures are logged in full
// (slog.Default when never set).
func (s *Service) SetLogger(l *slog.Logger) { s.log = l }

func (s *Service) logger() *slog.Logger {
	if s.log == nil {
		return slog.Default()
	}
	return s.log
}
