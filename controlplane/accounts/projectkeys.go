package accounts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// RevokeProjectKeys revokes every key limited to projectID, in q's
// transaction: the projects area calls it inside the transaction that
// deletes the project, so a deleted project never leaves a working key.
func (s *Service) RevokeProjectKeys(ctx context.Context, q store.Querier, projectID string, now time.Time) error {
	if _, err := q.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE project_id = ? AND revoked_at = ''`,
		store.FormatTime(now), projectID); err != nil {
		return fmt.Errorf("accounts: revoke keys of project %s: %w", projectID, err)
	}
	s.keys.invalidate(invProject + projectID)
	db := s.runKeys()
	err := notifyKeys(ctx, db, q, invProject+projectID)
	if errors.Is(err, store.ErrForeignTx) {
		// q is a transaction of another handle: tell the replicas now; a
		// look-up racing the commit is dropped again by this replica's
		// own copy and otherwise lives at most KeyCacheTTL.
		err = notifyKeys(ctx, db, db, invProject+projectID)
	}
	if err != nil {
		return fmt.Errorf("accounts: revoke keys of project %s: %w", projectID, err)
	}
	return nil
}
