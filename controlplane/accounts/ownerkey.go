package accounts

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// ErrOwnerAmbiguous means the workspace has several active owners and the
// reset did not name one.
var ErrOwnerAmbiguous = errors.New("accounts: the workspace has several owners")

// OwnerKeyReset asks for a new full-access key for a workspace owner: the
// operator's way back in when the owner key is lost or leaked
// (`platform owner-key reset`).
type OwnerKeyReset struct {
	// Workspace is the workspace (ws_...).
	Workspace string
	// Owner is the owner's e-mail; empty picks the workspace's only active
	// owner (ErrOwnerAmbiguous when there are several).
	Owner string
	// KeepOld keeps the owner's other keys; by default every key of the
	// owner (agent run keys included) is revoked in the same transaction.
	KeepOld bool
	// Actor names who reset it, for the audit log (operator:<user>).
	Actor string
}

// OwnerKey is what a reset made: the secret, shown once, and the ids of
// the keys it revoked.
type OwnerKey struct {
	Workspace Workspace
	Owner     Member
	Key       Key
	Secret    string
	Revoked   []string
}

// ResetOwnerKey issues a new full-access key for an active owner of the
// workspace and, unless r.KeepOld, revokes the owner's other keys; one
// transaction holds the revocation, the new key and the audit row
// (key.owner_reset). Every replica drops the revoked keys from its cache
// as a revocation through the API does.
func (s *Service) ResetOwnerKey(ctx context.Context, r OwnerKeyReset) (OwnerKey, error) {
	w, err := s.store.Workspace(ctx, r.Workspace)
	if err != nil {
		return OwnerKey{}, fmt.Errorf("accounts: workspace %s: %w", r.Workspace, err)
	}
	members, err := s.store.Members(ctx, w.ID)
	if err != nil {
		return OwnerKey{}, err
	}
	owner, err := pickOwner(members, r.Owner)
	if err != nil {
		return OwnerKey{}, err
	}
	defer s.keys.invalidate(invMember + owner.ID)
	now := s.clock.Now()
	secret, prefix, hash := auth.NewKey()
	k := Key{ID: store.NewID("key"), Name: "owner key (reset by the operator)", Prefix: prefix, Access: "full", Kind: "full",
		MemberID: owner.ID, CreatedAt: now}
	actor := r.Actor
	if actor == "" {
		actor = "operator"
	}
	revoked, err := s.store.ResetMemberKeys(ctx, KeyRecord{Key: k, WorkspaceID: w.ID, SecretHash: hash}, !r.KeepOld,
		func(m Member, workspaceActive, memberActive int) error {
			if m.Role != auth.Owner || m.Status != "active" {
				return api.Conflict("not_an_owner", "%s is no longer an active owner of workspace %s", m.Email, w.ID)
			}
			if memberActive >= MaxKeysPerMember || workspaceActive >= MaxKeysPerWorkspace {
				return api.Conflict("key_limit", "the owner holds %d unrevoked keys and the workspace %d (at most %d and %d): revoke some, or reset without keeping the old keys",
					memberActive, workspaceActive, MaxKeysPerMember, MaxKeysPerWorkspace)
			}
			return nil
		},
		func(m Member, revoked []string) audit.Event {
			return audit.Event{Workspace: w.ID, Action: "key.owner_reset", Category: audit.CategoryKey, TargetType: "member", TargetID: m.ID,
				Summary: fmt.Sprintf("owner key %s issued for %s by %s; %d earlier key(s) revoked", prefix, m.Email, actor, len(revoked)),
				Details: map[string]any{"actor": actor, "key": k.ID, "revoked": revoked, "keepOld": r.KeepOld}}
		})
	if err != nil {
		return OwnerKey{}, fmt.Errorf("accounts: owner key reset: %w", err)
	}
	return OwnerKey{Workspace: w, Owner: owner, Key: k, Secret: secret, Revoked: revoked}, nil
}

// pickOwner finds the active owner with e-mail email, or the only active
// owner when email is empty.
func pickOwner(members []Member, email string) (Member, error) {
	var owners []Member
	for _, m := range members {
		if m.Role == auth.Owner && m.Status == "active" {
			owners = append(owners, m)
		}
	}
	if email != "" {
		for _, m := range owners {
			if strings.EqualFold(m.Email, strings.TrimSpace(email)) {
				return m, nil
			}
		}
		return Member{}, fmt.Errorf("accounts: %s is not an active owner of this workspace (owners: %s)", email, emails(owners))
	}
	switch len(owners) {
	case 0:
		return Member{}, errors.New("accounts: the workspace has no active owner")
	case 1:
		return owners[0], nil
	}
	return Member{}, fmt.Errorf("%w (%s): name one", ErrOwnerAmbiguous, emails(owners))
}

func emails(ms []Member) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Email
	}
	return strings.Join(out, ", ")
}
