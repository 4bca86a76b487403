package payments

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// FailingWebhook is an account whose webhook deliveries fail: failed for
// good after every retry, or still retrying after a failed attempt.
type FailingWebhook struct {
	ProjectID, AccountID string
	// Failed counts deliveries that failed for good or are retrying.
	Failed    int
	LastError string
	// Since is when the oldest of them was created.
	Since time.Time
}

// FailingWebhooks lists the workspace's accounts whose deliveries fail, for
// the attention list.
func (s *Service) FailingWebhooks(ctx context.Context, workspace string) ([]FailingWebhook, error) {
	rows, err := s.d.DB.QueryContext(ctx, `SELECT a.project_id, e.account_id, count(*), min(e.created_at),
		(SELECT last_error FROM payment_events l WHERE l.account_id = e.account_id AND l.last_error <> '' ORDER BY l.created_at DESC LIMIT 1)
		FROM payment_events e JOIN payment_accounts a ON a.id = e.account_id
		WHERE e.workspace_id = ? AND (e.delivery_status = 'failed' OR (e.delivery_status = 'pending' AND e.attempts > 0 AND e.last_error <> ''))
		GROUP BY e.account_id, a.project_id ORDER BY a.project_id`, workspace)
	if err != nil {
		return nil, fmt.Errorf("payments: failing webhooks: %w", err)
	}
	defer rows.Close()
	var out []FailingWebhook
	for rows.Next() {
		var f FailingWebhook
		var since string
		var last *string
		if err := rows.Scan(&f.ProjectID, &f.AccountID, &f.Failed, &since, &last); err != nil {
			return nil, fmt.Errorf("payments: failing webhooks: %w", err)
		}
		f.Since = store.ParseTime(since)
		if last != nil {
			f.LastError = *last
		}
		out = append(out, f)
	}
	return out, rows.Err()
}
