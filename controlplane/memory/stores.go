package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// Store statuses.
const (
	statusActive   = "active"
	statusDeleting = "deleting"
)

// Store is a memory store as the API shows it.
type Store struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	ProjectID string `json:"projectId"`
	// Keys and Bytes are what the store holds: keys, and bytes of keys,
	// values and metadata; expired keys count until the sweep removes
	// them (within Config.SweepEvery).
	Keys      int64       `json:"keys"`
	Bytes     int64       `json:"bytes"`
	Limits    StoreLimits `json:"limits"`
	CreatedAt time.Time   `json:"createdAt"`
	UpdatedAt time.Time   `json:"updatedAt"`
}

// StoreLimits are the limits the store's keys are held to: the plan's caps
// (-1: none) and the fixed sizes.
type StoreLimits struct {
	Keys          int64 `json:"keys"`
	Bytes         int64 `json:"bytes"`
	KeyBytes      int   `json:"keyBytes"`
	ValueBytes    int   `json:"valueBytes"`
	MetadataBytes int   `json:"metadataBytes"`
	BulkKeys      int   `json:"bulkKeys"`
}

// CreateRequest is the body of POST /api/projects/{id}/memory.
type CreateRequest struct {
	// Name is unique among the project's stores: 1 to MaxNameLen
	// characters, without control characters.
	Name string `json:"name"`
}

// StoreAnswer is the answer of a store's create and read.
type StoreAnswer struct {
	Store Store `json:"store"`
}

// StoreList is the answer of GET /api/projects/{id}/memory.
type StoreList struct {
	Stores []Store `json:"stores"`
}

// record is a store as stored.
type record struct {
	ID, Workspace, Project, Name, Status string
	Keys, Bytes                          int64
	CreatedAt, UpdatedAt                 time.Time
}

const storeCols = `id, workspace_id, project_id, name, status, key_count, bytes, created_at, updated_at`

func scanStore(sc interface{ Scan(...any) error }) (record, error) {
	var r record
	var created, updated string
	if err := sc.Scan(&r.ID, &r.Workspace, &r.Project, &r.Name, &r.Status, &r.Keys, &r.Bytes, &created, &updated); err != nil {
		return r, err
	}
	r.CreatedAt, r.UpdatedAt = store.ParseTime(created), store.ParseTime(updated)
	return r, nil
}

// storeByID reads a store through q; with lock, on PostgreSQL, the row
// stays locked until q's transaction ends (SQLite's write transactions
// already run one at a time). store.ErrNotFound when there is none.
func (s *Service) storeByID(ctx context.Context, q store.Querier, id string, lock bool) (record, error) {
	query := `SELECT ` + storeCols + ` FROM memory_stores WHERE id = ?`
	if lock && s.d.DB.Dialect() == store.Postgres {
		query += ` FOR UPDATE`
	}
	r, err := scanStore(q.QueryRowContext(ctx, query, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, store.ErrNotFound
	}
	if err != nil {
		return r, fmt.Errorf("memory: store %s: %w", id, err)
	}
	return r, nil
}

// visible checks that the caller may do op on store r (read through
// storeByID): 404 for none, a deleted one or another workspace's; the
// permission table's 403 for a key of another project.
func visible(p *auth.Principal, r record, err error, id string, op auth.Op) error {
	if errors.Is(err, store.ErrNotFound) || err == nil && (r.Status != statusActive || r.Workspace != p.WorkspaceID) {
		return errStoreNotFound(id)
	}
	if err != nil {
		return err
	}
	return auth.Authorize(p, op, r.Project)
}

func errStoreNotFound(id string) error {
	return api.E(api.KindNotFound, "not_found", "memory store %s not found: GET /api/projects/{id}/memory lists a project's stores", id)
}

// answer renders r for the API under the workspace's plan.
func (s *Service) answer(r record, plan plans.Name) Store {
	l := s.cfg.limits(plan)
	return Store{ID: r.ID, Name: r.Name, ProjectID: r.Project, Keys: r.Keys, Bytes: r.Bytes, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		Limits: StoreLimits{Keys: l.KeysPerStore, Bytes: l.BytesPerStore, KeyBytes: MaxKeyBytes, ValueBytes: MaxValueBytes,
			MetadataBytes: MaxMetadataBytes, BulkKeys: MaxBulkKeys}}
}

// validName trims and checks a store's name.
func validName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > MaxNameLen || !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl) {
		return "", api.E(api.KindInvalid, "invalid_name", "name must be 1 to %d characters without control characters", MaxNameLen)
	}
	return name, nil
}

// CreateStore makes a store in a project: 402 plan_limit past the plan's
// stores per project, 409 name_taken for a name the project's stores
// already use, 409 project_teardown_failed for a project whose deletion did
// not finish.
func (s *Service) CreateStore(ctx context.Context, p *auth.Principal, projectID string, req CreateRequest) (Store, error) {
	name, err := validName(req.Name)
	if err != nil {
		return Store{}, err
	}
	if _, err := s.d.Projects.Writable(ctx, p.WorkspaceID, projectID); err != nil {
		return Store{}, err
	}
	plan := s.d.Plans.Plan(ctx, p.WorkspaceID)
	limit := s.cfg.limits(plan).StoresPerProject
	now := s.now()
	r := record{ID: store.NewID("mem"), Workspace: p.WorkspaceID, Project: projectID, Name: name, Status: statusActive, CreatedAt: now, UpdatedAt: now}
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM memory_stores WHERE project_id = ? AND status = 'active'`, projectID).Scan(&n); err != nil {
			return fmt.Errorf("memory: count stores: %w", err)
		}
		if limit != plans.Unlimited && n+1 > limit {
			return s.limitError(plan, "stores_per_project", func(l Limits) int64 { return int64(l.StoresPerProject) }, int64(n), int64(n+1),
				"the %s plan holds %d memory store(s) per project and this project has %d: delete one or move to a larger plan", plan, limit, n)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO memory_stores (`+storeCols+`) VALUES (?,?,?,?,?,0,0,?,?)
			ON CONFLICT (project_id, name) WHERE status = 'active' DO NOTHING`,
			r.ID, r.Workspace, r.Project, r.Name, r.Status, store.FormatTime(now), store.FormatTime(now))
		if err != nil {
			return fmt.Errorf("memory: insert store: %w", err)
		}
		if k, err := res.RowsAffected(); err != nil || k == 0 {
			return api.Conflict("name_taken", "this project already has a memory store named %q: choose another name", name)
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "memory.create", Category: audit.CategoryData,
			TargetType: "memory_store", TargetID: r.ID, ProjectID: projectID, Summary: fmt.Sprintf("created memory store %s", name)})
	})
	if err != nil {
		return Store{}, err
	}
	return s.answer(r, plan), nil
}

// Stores lists a project's stores, oldest first.
func (s *Service) Stores(ctx context.Context, p *auth.Principal, projectID string) (StoreList, error) {
	if _, err := s.d.Projects.Get(ctx, p.WorkspaceID, projectID); err != nil {
		return StoreList{}, err
	}
	plan := s.d.Plans.Plan(ctx, p.WorkspaceID)
	rows, err := s.d.DB.QueryContext(ctx, `SELECT `+storeCols+` FROM memory_stores
		WHERE project_id = ? AND workspace_id = ? AND status = 'active' ORDER BY created_at, id`, projectID, p.WorkspaceID)
	if err != nil {
		return StoreList{}, fmt.Errorf("memory: stores: %w", err)
	}
	defer rows.Close()
	out := StoreList{Stores: []Store{}}
	for rows.Next() {
		r, err := scanStore(rows)
		if err != nil {
			return StoreList{}, fmt.Errorf("memory: stores: %w", err)
		}
		out.Stores = append(out.Stores, s.answer(r, plan))
	}
	return out, rows.Err()
}

// GetStore reads one store.
func (s *Service) GetStore(ctx context.Context, p *auth.Principal, id string) (Store, error) {
	r, err := s.storeByID(ctx, s.d.DB, id, false)
	if err := visible(p, r, err, id, OpRead); err != nil {
		return Store{}, err
	}
	return s.answer(r, s.d.Plans.Plan(ctx, p.WorkspaceID)), nil
}

// DeleteStore deletes a store and its keys. The store is gone for the API
// (and its name free) when the call returns; its keys are removed in
// batches right after, and by the sweep should that be interrupted.
func (s *Service) DeleteStore(ctx context.Context, p *auth.Principal, id string) error {
	var name string
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		r, err := s.storeByID(ctx, tx, id, true)
		if err := visible(p, r, err, id, OpWrite); err != nil {
			return err
		}
		name = r.Name
		if _, err := tx.ExecContext(ctx, `UPDATE memory_stores SET status = 'deleting', updated_at = ? WHERE id = ?`,
			store.FormatTime(s.now()), id); err != nil {
			return fmt.Errorf("memory: delete store: %w", err)
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: r.Workspace, Actor: p, Action: "memory.delete", Category: audit.CategoryData,
			TargetType: "memory_store", TargetID: id, ProjectID: r.Project,
			Summary: fmt.Sprintf("deleted memory store %s (%d keys, %d bytes)", r.Name, r.Keys, r.Bytes)})
	})
	if err != nil {
		return err
	}
	if err := s.purge(context.WithoutCancel(ctx), id); err != nil {
		s.d.Logger.Warn("memory: removing a deleted store's keys; the sweep finishes it", "store", id, "name", name, "err", err)
	}
	return nil
}

// purge removes a deleting store's keys in batches, then its row.
func (s *Service) purge(ctx context.Context, id string) error {
	for {
		res, err := s.d.DB.ExecContext(ctx, `DELETE FROM memory_keys WHERE store_id = ? AND key_name IN
			(SELECT key_name FROM memory_keys WHERE store_id = ? LIMIT ?)`, id, id, s.cfg.SweepBatch)
		if err != nil {
			return fmt.Errorf("memory: remove keys of %s: %w", id, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("memory: remove keys of %s: %w", id, err)
		}
		if n < int64(s.cfg.SweepBatch) {
			break
		}
	}
	if _, err := s.d.DB.ExecContext(ctx, `DELETE FROM memory_stores WHERE id = ? AND status = 'deleting'`, id); err != nil {
		return fmt.Errorf("memory: remove store %s: %w", id, err)
	}
	return nil
}

// limitError is the refusal of a workspace on plan holding current of what
// pick counts and needing want: 402 plan_limit with limit, current,
// limitName and, when a larger plan holds want, required_plan.
func (s *Service) limitError(plan plans.Name, name string, pick func(Limits) int64, current, want int64, format string, args ...any) *api.Error {
	e := api.E(api.KindPaymentRequired, "plan_limit", format, args...).
		With("limit", pick(s.cfg.limits(plan))).With("current", current).With("limitName", name)
	all := plans.All()
	for _, p := range all[slices.Index(all, plan)+1:] {
		if l := pick(s.cfg.limits(p)); l == plans.Unlimited || l >= want {
			return e.With("required_plan", string(p))
		}
	}
	return e
}
