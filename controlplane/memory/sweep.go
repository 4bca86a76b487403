package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/svcplatform/platform/controlplane/store"
)

// SweepResult is what one sweep removed.
type SweepResult struct {
	// Expired is how many expired keys were removed.
	Expired int64
	// Stores is how many deleted stores' removal was finished.
	Stores int
}

// Sweep removes the keys expired by now, store by store in batches of
// Config.SweepBatch (each a transaction holding the store's row, so its
// counts stay exact), and finishes removing stores whose deletion was
// interrupted. The job JobSweep runs it every Config.SweepEvery; expired
// keys are invisible before it runs, it only gives their room back.
func (s *Service) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	ids, err := s.ids(ctx, `SELECT id FROM memory_stores WHERE status = 'deleting' ORDER BY id LIMIT 100`)
	if err != nil {
		return res, err
	}
	var errs []error
	for _, id := range ids {
		if err := s.purge(ctx, id); err != nil {
			errs = append(errs, err)
			continue
		}
		res.Stores++
	}
	nowMs := s.now().UnixMilli()
	done := map[string]bool{}
	for {
		ids, err := s.ids(ctx, `SELECT DISTINCT store_id FROM memory_keys WHERE expires_at > 0 AND expires_at <= ? ORDER BY store_id LIMIT 100`, nowMs)
		if err != nil {
			return res, errors.Join(append(errs, err)...)
		}
		progress := false
		for _, id := range ids {
			if done[id] {
				continue
			}
			done[id], progress = true, true // a store that fails is left for the next sweep
			n, err := s.sweepStore(ctx, id, nowMs)
			res.Expired += n
			if err != nil {
				errs = append(errs, err)
			}
		}
		if !progress {
			break
		}
	}
	return res, errors.Join(errs...)
}

// sweepStore removes a store's keys expired at nowMs, a batch per
// transaction, and returns how many.
func (s *Service) sweepStore(ctx context.Context, id string, nowMs int64) (int64, error) {
	var total int64
	for {
		var n int64
		err := s.writeTx(ctx, func(tx *sql.Tx) error {
			r, err := s.storeByID(ctx, tx, id, true)
			if errors.Is(err, store.ErrNotFound) {
				// Keys without a store: nothing to count them against.
				res, err := tx.ExecContext(ctx, `DELETE FROM memory_keys WHERE store_id = ? AND key_name IN
					(SELECT key_name FROM memory_keys WHERE store_id = ? LIMIT ?)`, id, id, s.cfg.SweepBatch)
				if err == nil {
					n, err = res.RowsAffected()
				}
				return err
			}
			if err != nil {
				return err
			}
			var b int64
			if n, b, err = s.dropExpired(ctx, tx, id, nowMs, s.cfg.SweepBatch); err != nil || n == 0 {
				return err
			}
			_, err = tx.ExecContext(ctx, `UPDATE memory_stores SET key_count = ?, bytes = ? WHERE id = ?`, r.Keys-n, r.Bytes-b, id)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("memory: sweep store %s: %w", id, err)
		}
		total += n
		if n < int64(s.cfg.SweepBatch) {
			return total, nil
		}
	}
}

// ids runs a query of one text column.
func (s *Service) ids(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := s.d.DB.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("memory: sweep: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("memory: sweep: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
