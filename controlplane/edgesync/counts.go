package edgesync

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/rules"
)

// Limits of count ingestion.
const (
	// MaxCountRows is the most rows one batch may carry.
	MaxCountRows = 10_000
	// MaxCountN bounds one row's count.
	MaxCountN = 1_000_000_000_000
	// countsKept is how long counts are kept (blocks reads 30 days at most).
	countsKept = 60 * 24 * time.Hour
	// batchesKept is how long batch ids are remembered against repeats.
	batchesKept = 7 * 24 * time.Hour
)

// validateBatch checks a batch before anything is stored.
func validateBatch(b snapshot.CountBatch, now time.Time) error {
	if b.Batch == "" || len(b.Batch) > 100 {
		return api.Invalid("batch must be an id of 1 to 100 characters")
	}
	if len(b.Counts) > MaxCountRows {
		return api.E(api.KindTooLarge, "too_many_counts", "a batch holds at most %d rows", MaxCountRows)
	}
	earliest, latest := now.Add(-countsKept), now.Add(48*time.Hour)
	for i, c := range b.Counts {
		day, err := time.Parse(time.DateOnly, c.Day)
		switch {
		case c.ID == "" || len(c.ID) > 100:
			return api.Invalid("counts[%d]: id must name a site", i)
		case c.Rule == rules.RuleNone:
			return api.Invalid("counts[%d]: rule must be denyList, country or aiCrawler", i)
		case c.Verdict == rules.Allow:
			return api.Invalid("counts[%d]: verdict must be refuse or wouldRefuse", i)
		case err != nil:
			return api.Invalid("counts[%d]: day must be a UTC date YYYY-MM-DD", i)
		case day.Before(earliest) || day.After(latest):
			return api.Invalid("counts[%d]: day %s is out of range", i, c.Day)
		case c.N == 0 || c.N > MaxCountN:
			return api.Invalid("counts[%d]: n must be from 1 to %d", i, int64(MaxCountN))
		}
	}
	return nil
}

// Ingest adds a batch of counts from the edge holding token tokenID. A batch
// id seen before adds nothing (the edge resent it after a lost answer).
// Rows for projects that no longer exist are skipped.
func (s *Service) Ingest(ctx context.Context, tokenID string, b snapshot.CountBatch) (snapshot.CountAnswer, error) {
	now := s.clock.Now()
	if err := validateBatch(b, now); err != nil {
		return snapshot.CountAnswer{}, err
	}
	var out snapshot.CountAnswer
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		out = snapshot.CountAnswer{} // fn may run again after a serialization failure
		// ON CONFLICT, not a caught unique violation: a failed statement
		// ends a PostgreSQL transaction.
		res, err := tx.ExecContext(ctx, `INSERT INTO edge_count_batches(batch_id, token_id, received_at) VALUES (?,?,?)
			ON CONFLICT(batch_id) DO NOTHING`, b.Batch, tokenID, store.FormatTime(now))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			out.Duplicate = true
			return nil
		}
		type target struct{ workspace, kind string }
		targets := map[string]*target{}
		for _, c := range b.Counts {
			t, seen := targets[c.ID]
			if !seen {
				ref, ok, err := s.src.Project(ctx, tx, c.ID)
				if err != nil {
					return err
				}
				if ok {
					kind, err := s.src.ServingKind(ctx, tx, c.ID)
					if err != nil {
						return err
					}
					if kind == "" {
						kind = snapshot.KindStatic
					}
					t = &target{workspace: ref.Workspace, kind: kind}
				}
				targets[c.ID] = t
			}
			if t == nil {
				out.Skipped++
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO edge_counts(workspace_id, project_id, kind, rule, verdict, day, n) VALUES (?,?,?,?,?,?,?)
				ON CONFLICT(project_id, rule, verdict, day) DO UPDATE SET n = edge_counts.n + excluded.n, kind = excluded.kind`,
				t.workspace, c.ID, t.kind, c.Rule.String(), c.Verdict.String(), c.Day, int64(c.N)); err != nil {
				return err
			}
			out.Accepted++
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM edge_count_batches WHERE received_at < ?`, store.FormatTime(now.Add(-batchesKept))); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM edge_counts WHERE day < ?`, now.Add(-countsKept).UTC().Format(time.DateOnly))
		return err
	})
	if err != nil {
		return snapshot.CountAnswer{}, fmt.Errorf("edgesync: ingest: %w", err)
	}
	return out, nil
}

// CountRow is the sum of one site's counts for one rule and verdict.
type CountRow struct {
	ProjectID string
	Kind      string
	Rule      string
	Verdict   string
	N         int64
}

// DayRow is one day's total of a verdict.
type DayRow struct {
	Day     string
	Verdict string
	N       int64
}

// Counts sums the workspace's counts from day since (YYYY-MM-DD, UTC) on,
// per project, rule and verdict, and per day and verdict. Counts of deleted
// projects are gone with them.
func (s *Service) Counts(ctx context.Context, workspace, since string) ([]CountRow, []DayRow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT project_id, kind, rule, verdict, sum(n) FROM edge_counts
		WHERE workspace_id = ? AND day >= ? GROUP BY project_id, kind, rule, verdict`, workspace, since)
	if err != nil {
		return nil, nil, fmt.Errorf("edgesync: counts: %w", err)
	}
	var out []CountRow
	for rows.Next() {
		var r CountRow
		if err := rows.Scan(&r.ProjectID, &r.Kind, &r.Rule, &r.Verdict, &r.N); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("edgesync: counts: %w", err)
		}
		out = append(out, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("edgesync: counts: %w", err)
	}
	rows, err = s.db.QueryContext(ctx, `SELECT day, verdict, sum(n) FROM edge_counts
		WHERE workspace_id = ? AND day >= ? GROUP BY day, verdict ORDER BY day, verdict`, workspace, since)
	if err != nil {
		return nil, nil, fmt.Errorf("edgesync: counts: %w", err)
	}
	defer rows.Close()
	var days []DayRow
	for rows.Next() {
		var d DayRow
		if err := rows.Scan(&d.Day, &d.Verdict, &d.N); err != nil {
			return nil, nil, fmt.Errorf("edgesync: counts: %w", err)
		}
		days = append(days, d)
	}
	return out, days, rows.Err()
}

// Dependent returns what removes a deleted project's counts.
func (s *Service) Dependent() projects.Dependent { return countsDependent{s} }

type countsDependent struct{ s *Service }

// Name implements projects.Dependent.
func (d countsDependent) Name() string { return "shield counts" }

// Blockers implements projects.Dependent: counts never block a delete.
func (d countsDependent) Blockers(context.Context, string) ([]projects.Blocker, error) {
	return nil, nil
}

// Remove implements projects.Dependent: a deleted project's counts go.
func (d countsDependent) Remove(ctx context.Context, projectID string) error {
	if _, err := d.s.db.ExecContext(ctx, `DELETE FROM edge_counts WHERE project_id = ?`, projectID); err != nil {
		return fmt.Errorf("edgesync: remove counts: %w", err)
	}
	return nil
}
