package accounts

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// Facts other areas ask of accounts, so they never read its tables: the
// security overview counts members and keys through SecurityFacts, and the
// edge snapshot lists workspaces through WorkspaceIDs.

// SecurityFacts are the member and key counts the security overview scores.
type SecurityFacts struct {
	// Privileged counts active owners and admins; PrivilegedTwoFactor those
	// of them with two-factor sign-in on.
	Privileged, PrivilegedTwoFactor int
	// ActiveKeys counts unrevoked, unexpired keys (ephemeral run keys
	// excluded); FullAccessKeys those with full access to the whole
	// workspace; NeverUsedKeys those that never made a call.
	ActiveKeys, FullAccessKeys, NeverUsedKeys int
	// KeysUsedSince counts keys (revoked or not) used at or after the since
	// time given to SecurityFacts.
	KeysUsedSince int
	// OldestActiveKey is the creation time of the oldest active key (zero
	// when there is none).
	OldestActiveKey time.Time
}

// SecurityFacts counts the workspace's privileged members and its keys at
// now; KeysUsedSince counts keys used at or after since.
func (s *Service) SecurityFacts(ctx context.Context, workspace string, now, since time.Time) (SecurityFacts, error) {
	s.touching.wait() // keys' last uses recorded so far count
	var f SecurityFacts
	members, err := s.store.Members(ctx, workspace)
	if err != nil {
		return f, fmt.Errorf("accounts: security facts: %w", err)
	}
	for _, m := range members {
		if m.Status != "active" || m.Role < auth.Admin {
			continue
		}
		f.Privileged++
		if m.TwoFactor {
			f.PrivilegedTwoFactor++
		}
	}
	keys, err := s.store.Keys(ctx, workspace, nil)
	if err != nil {
		return f, fmt.Errorf("accounts: security facts: %w", err)
	}
	for _, k := range keys {
		if k.LastUsedAt != nil && !k.LastUsedAt.Before(since) {
			f.KeysUsedSince++
		}
		if k.RevokedAt != nil || (k.ExpiresAt != nil && !k.ExpiresAt.After(now)) {
			continue
		}
		f.ActiveKeys++
		if k.Access == "full" && k.ProjectID == "" {
			f.FullAccessKeys++
		}
		if k.LastUsedAt == nil {
			f.NeverUsedKeys++
		}
		if f.OldestActiveKey.IsZero() || k.CreatedAt.Before(f.OldestActiveKey) {
			f.OldestActiveKey = k.CreatedAt
		}
	}
	return f, nil
}

// WorkspaceIDs returns the id of every workspace not deleted, read through q (the edge
// snapshot reads all its sources through one querier). The accounts Store
// has no listing of workspaces, so the statement lives here.
func WorkspaceIDs(ctx context.Context, q store.Querier) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT id FROM workspaces WHERE deleted_at = '' ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("accounts: workspaces: %w", err)
	}
	out, err := store.AppendRows(nil, rows, store.ScanString)
	if err != nil {
		return nil, fmt.Errorf("accounts: workspaces: %w", err)
	}
	return out, nil
}
