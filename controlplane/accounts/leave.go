package accounts

import (
	"context"
	"fmt"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Leaving and deleting a workspace. A member leaves with their session:
// their keys are revoked and the session moves to another workspace of
// theirs (or ends); the last owner cannot leave. The owner deletes the
// workspace signed in: every project goes first, each as project deletion
// does (its blockers, earnings owed and payable links among them, refuse
// it), and money left on the Balance or owed blocks it too; then every key
// is revoked, every member removed (their sessions move elsewhere or end)
// and the workspace is marked deleted. Its ledger and audit rows stay.

// Blocker is a reason a workspace cannot be deleted yet, with what to do
// (the projects area's shape).
type Blocker struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Action  string `json:"action"`
}

// Teardown is what deleting a workspace needs from other areas; the
// control plane installs it (SetTeardown).
type Teardown struct {
	// Projects lists the workspace's project ids.
	Projects func(ctx context.Context, workspace string) ([]string, error)
	// ProjectBlockers, when set, lists what stops a project being deleted,
	// so that nothing is deleted while any project is blocked.
	ProjectBlockers func(ctx context.Context, project string) ([]Blocker, error)
	// DeleteProject deletes one project as DELETE /api/projects/{id} does
	// (its blockers answer 409 deletion_blocked).
	DeleteProject func(ctx context.Context, p *auth.Principal, project string) error
	// Money tells what the workspace's Balance holds and what it owes, in
	// micro-dollars.
	Money func(ctx context.Context, workspace string) (balance, owed int64, err error)
}

// SetTeardown installs what deleting a workspace needs.
func (s *Service) SetTeardown(t Teardown) {
	s.mu.Lock()
	s.teardown = t
	s.mu.Unlock()
}

// Left is the answer of leaving or deleting a workspace: where the
// caller's session acts now ("" when it ended: the person has no other
// workspace).
type Left struct {
	Left        string `json:"left"`
	WorkspaceID string `json:"workspaceId"`
}

// LeaveWorkspace removes the signed-in member from their workspace.
func (s *Service) LeaveWorkspace(ctx context.Context, p *auth.Principal) (Left, error) {
	defer s.keys.invalidate(invMember + p.MemberID)
	next, err := s.store.RemoveMembers(ctx, p.WorkspaceID, p.MemberID, s.clock.Now(), func(m Member, otherOwners func() (int, error)) error {
		if m.Role == auth.Owner {
			if n, err := otherOwners(); err != nil {
				return err
			} else if n == 0 {
				return api.Conflict("last_owner", "you are this workspace's only owner: make someone else owner first, or delete the workspace")
			}
		}
		return nil
	}, audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "member.leave", Category: audit.CategoryMember,
		TargetType: "member", TargetID: p.MemberID, Summary: "left the workspace; their keys were revoked"}, p.SessionHash)
	if err != nil {
		return Left{}, err
	}
	return Left{Left: p.WorkspaceID, WorkspaceID: next}, nil
}

// DeleteRequest is the body of DELETE /api/workspace: the workspace's name,
// typed again.
type DeleteRequest struct {
	Confirm string `json:"confirm"`
}

// DeleteWorkspace deletes the caller's workspace (the owner, signed in).
func (s *Service) DeleteWorkspace(ctx context.Context, p *auth.Principal, req DeleteRequest) (Left, error) {
	s.mu.Lock()
	t := s.teardown
	s.mu.Unlock()
	if t.Projects == nil || t.DeleteProject == nil {
		return Left{}, &api.Error{Kind: api.KindUnavailable, Code: "delete_unavailable", Message: "deleting a workspace is not available on this platform: ask the operator"}
	}
	w, err := s.store.Workspace(ctx, p.WorkspaceID)
	if err != nil {
		return Left{}, err
	}
	if req.Confirm != w.Name {
		return Left{}, api.Invalid("send confirm with the workspace's name (%q) to delete it and everything in it", w.Name)
	}
	ids, err := t.Projects(ctx, w.ID)
	if err != nil {
		return Left{}, fmt.Errorf("accounts: delete workspace: %w", err)
	}
	var blockers []Blocker
	if t.Money != nil {
		balance, owed, err := t.Money(ctx, w.ID)
		if err != nil {
			return Left{}, fmt.Errorf("accounts: delete workspace: %w", err)
		}
		if owed > 0 {
			blockers = append(blockers, Blocker{Kind: "balance_owed", Message: fmt.Sprintf("the workspace owes %d micro-dollars for usage", owed),
				Action: "load the Balance (the operator's platform balance add) so that it is paid"})
		}
		if balance > 0 {
			blockers = append(blockers, Blocker{Kind: "balance_left", Message: fmt.Sprintf("the Balance holds %d micro-dollars", balance),
				Action: "spend it, or ask the operator to refund it, before deleting"})
		}
	}
	if t.ProjectBlockers != nil {
		for _, id := range ids {
			b, err := t.ProjectBlockers(ctx, id)
			if err != nil {
				return Left{}, fmt.Errorf("accounts: delete workspace: %w", err)
			}
			blockers = append(blockers, b...)
		}
	}
	if len(blockers) > 0 {
		return Left{}, api.Conflict("deletion_blocked", "workspace %s cannot be deleted yet: %d thing(s) to settle first", w.Name, len(blockers)).
			With("blockers", blockers)
	}
	for _, id := range ids {
		if err := t.DeleteProject(ctx, p, id); err != nil {
			return Left{}, err
		}
	}
	now := s.clock.Now()
	next, err := s.store.DeleteWorkspace(ctx, w.ID, now, p.SessionHash, audit.Event{Workspace: w.ID, Actor: p, Action: "workspace.delete",
		Category: audit.CategoryAccount, TargetType: "workspace", TargetID: w.ID,
		Summary: fmt.Sprintf("workspace %s deleted with its %d project(s); every key revoked, every member removed", w.Name, len(ids))})
	s.keys.invalidate(invAll)
	s.plans.drop(w.ID)
	if err != nil {
		return Left{}, err
	}
	return Left{Left: w.ID, WorkspaceID: next}, nil
}
