package accounts

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// People and their workspaces. A person has one e-mail, one password and
// an optional TOTP second factor; they belong to workspaces through
// members, with a role in each. A key belongs to one workspace (its
// member's); a session acts in one workspace at a time and switches to
// another of the same person's (SwitchWorkspace).

// DefaultMaxWorkspacesPerPerson is how many workspaces one person may own
// when Config.MaxWorkspacesPerPerson is zero.
const DefaultMaxWorkspacesPerPerson = 10

// Person is someone who signs in.
type Person struct {
	ID            string    `json:"id"`
	Email         string    `json:"email"`
	Name          string    `json:"name"`
	EmailVerified bool      `json:"emailVerified"`
	CreatedAt     time.Time `json:"createdAt"`
	// passwordHash is set only when a person is created with a password.
	passwordHash string
}

// Membership is one workspace of a person, with their role in it.
type Membership struct {
	Workspace Workspace `json:"workspace"`
	MemberID  string    `json:"memberId"`
	Role      auth.Role `json:"role"`
	// Current marks the workspace the caller acts in.
	Current bool `json:"current"`
}

// Workspaces lists the caller's workspaces: every active membership of a
// session's person, or only the workspace of a key (a key acts in one
// workspace and tells nothing of its member's others).
func (s *Service) Workspaces(ctx context.Context, p *auth.Principal) ([]Membership, error) {
	if !p.Session {
		w, err := s.store.Workspace(ctx, p.WorkspaceID)
		if err != nil {
			return nil, err
		}
		return []Membership{{Workspace: w, MemberID: p.MemberID, Role: p.Role, Current: true}}, nil
	}
	ms, err := s.store.Memberships(ctx, p.MemberID)
	if err != nil {
		return nil, err
	}
	for i := range ms {
		ms[i].Current = ms[i].Workspace.ID == p.WorkspaceID
	}
	return ms, nil
}

// CreateWorkspaceRequest is the body of POST /api/workspaces.
type CreateWorkspaceRequest struct {
	Name string `json:"name"`
}

func workspaceName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 || strings.ContainsAny(name, "\r\n\t") {
		return "", api.Invalid("name is required: 1 to 100 characters on one line")
	}
	return name, nil
}

// CreateWorkspace makes a workspace on the default plan with the signed-in
// person as its owner; the session stays where it is (switch with
// SwitchWorkspace). A person owns at most MaxWorkspacesPerPerson.
func (s *Service) CreateWorkspace(ctx context.Context, p *auth.Principal, req CreateWorkspaceRequest) (Membership, error) {
	name, err := workspaceName(req.Name)
	if err != nil {
		return Membership{}, err
	}
	me, err := s.store.PersonOfMember(ctx, p.MemberID)
	if err != nil {
		return Membership{}, err
	}
	now := s.clock.Now()
	w := Workspace{ID: store.NewID("ws"), Name: name, Plan: s.defaultPlan, CreatedAt: now, OwnerEmailVerified: me.EmailVerified}
	owner := MemberRecord{WorkspaceID: w.ID, PersonID: me.ID,
		Member: Member{ID: store.NewID("mem"), Email: me.Email, Name: me.Name, Role: auth.Owner, Status: "active", CreatedAt: now}}
	limit := s.maxOwned
	err = s.store.CreateWorkspace(ctx, w, nil, owner, func(owned int) error {
		if owned >= limit {
			return api.Conflict("workspace_limit", "you own %d workspaces, the most one person may: delete one or ask the operator", owned).
				With("limit", limit).With("current", owned)
		}
		return nil
	}, audit.Event{Workspace: w.ID, Actor: &auth.Principal{WorkspaceID: w.ID, MemberID: owner.ID, Session: true}, Action: "workspace.create",
		Category: audit.CategoryAccount, TargetType: "workspace", TargetID: w.ID, Summary: "workspace created by " + me.Email})
	if err != nil {
		return Membership{}, err
	}
	return Membership{Workspace: w, MemberID: owner.ID, Role: auth.Owner}, nil
}

// SwitchRequest is the body of POST /api/session/workspace.
type SwitchRequest struct {
	WorkspaceID string `json:"workspaceId"`
}

// Switched is the answer of switching workspace: the session now acts as
// member in the workspace. The session cookie and the CSRF token stay.
type Switched struct {
	WorkspaceID string `json:"workspaceId"`
	Member      Member `json:"member"`
}

// SwitchWorkspace moves the caller's session to another workspace of the
// same person. A workspace the person is not an active member of answers
// 404, as an unknown one does.
func (s *Service) SwitchWorkspace(ctx context.Context, p *auth.Principal, req SwitchRequest) (Switched, error) {
	if !p.Session || len(p.SessionHash) == 0 {
		return Switched{}, api.Forbidden("session_required", "switching workspace is for dashboard sessions; a key acts in its own workspace")
	}
	if req.WorkspaceID == "" || len(req.WorkspaceID) > 100 {
		return Switched{}, api.Invalid("workspaceId is required")
	}
	m, err := s.store.SwitchSession(ctx, p.SessionHash, req.WorkspaceID, func(m Member) audit.Event {
		return audit.Event{Workspace: req.WorkspaceID, Actor: &auth.Principal{WorkspaceID: req.WorkspaceID, MemberID: m.ID, Session: true},
			Action: "session.switch", Category: audit.CategoryAccount, TargetType: "member", TargetID: m.ID,
			Summary: m.Email + " switched to this workspace"}
	})
	if err != nil {
		return Switched{}, err
	}
	return Switched{WorkspaceID: req.WorkspaceID, Member: m}, nil
}

// DefaultPlan is the plan new workspaces start on.
func (s *Service) DefaultPlan() plans.Name { return s.defaultPlan }

// ResolveWorkspace returns the workspace named by ref: its id, or its name
// when exactly one workspace has it (the operator's commands).
func (s *Service) ResolveWorkspace(ctx context.Context, ref string) (Workspace, error) {
	if w, err := s.store.Workspace(ctx, ref); err == nil {
		return w, nil
	}
	ids, err := s.store.WorkspacesNamed(ctx, ref)
	if err != nil {
		return Workspace{}, err
	}
	switch len(ids) {
	case 0:
		return Workspace{}, fmt.Errorf("accounts: no workspace has id or name %q", ref)
	case 1:
		return s.store.Workspace(ctx, ids[0])
	}
	return Workspace{}, fmt.Errorf("accounts: %d workspaces are named %q: give the id (%s)", len(ids), ref, strings.Join(ids, ", "))
}
