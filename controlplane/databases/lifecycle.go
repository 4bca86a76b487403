package databases

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/mattn/go-sqlite3"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/placement"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
)

// EngineSQLite is the one engine offered.
const EngineSQLite = "sqlite"

// MaxNameLen bounds a database name.
const MaxNameLen = 100

// pageSize is SQLite's default page size, which every database uses.
const pageSize = 4096

// Database is a database as the API shows it.
type Database struct {
	// ID names the database in paths.
	ID string `json:"id"`
	// Name is the name given at create, unique within the project.
	Name string `json:"name"`
	// Engine is sqlite.
	Engine string `json:"engine"`
	// ProjectID is the project the database belongs to.
	ProjectID string `json:"projectId"`
	// Status is ready, failed (the create did not finish: PATCH
	// {"action": "retry"}) or creating.
	Status string `json:"status"`
	// Error says why the create failed.
	Error string `json:"error,omitempty"`
	// Endpoint is where queries are POSTed.
	Endpoint string `json:"endpoint"`
	// Limits are the limits that apply to the database.
	Limits DatabaseLimits `json:"limits"`
	// SizeBytes is the database's last measured size.
	SizeBytes int64 `json:"sizeBytes"`
	// CreatedAt is when the database was created.
	CreatedAt time.Time `json:"createdAt"`
}

// DatabaseLimits are the limits that apply to a database and its workspace.
type DatabaseLimits struct {
	// DatabaseBytes is the most the database may hold.
	DatabaseBytes int64 `json:"databaseBytes"`
	// ValueBytes bounds one value or row.
	ValueBytes int `json:"valueBytes"`
	// SQLBytes bounds one statement (and the sql of a request).
	SQLBytes int `json:"sqlBytes"`
	// ParamsPerStatement bounds the bound values of a statement.
	ParamsPerStatement int `json:"paramsPerStatement"`
	// ColumnsPerTable bounds the columns of a table, index or result.
	ColumnsPerTable int `json:"columnsPerTable"`
	// StatementsPerBatch bounds the statements of one request.
	StatementsPerBatch int `json:"statementsPerBatch"`
	// QueryTimeoutSeconds bounds the time the statements of one request run.
	QueryTimeoutSeconds float64 `json:"queryTimeoutSeconds"`
	// QueryRequests per WindowSeconds is the workspace's query rate limit.
	QueryRequests int `json:"queryRequests"`
	// WindowSeconds is the rate limit's window.
	WindowSeconds float64 `json:"windowSeconds"`
	// WorkspaceStorageBytes is the plan's storage for all the workspace's
	// databases together.
	WorkspaceStorageBytes int64 `json:"workspaceStorageBytes"`
	// WorkspaceDatabases is how many databases the plan holds.
	WorkspaceDatabases int `json:"workspaceDatabases"`
}

// DatabaseAnswer wraps one database.
type DatabaseAnswer struct {
	// Database is the database.
	Database Database `json:"database"`
}

// CreateRequest is the body of POST /api/projects/{id}/databases.
type CreateRequest struct {
	// Name is required.
	Name string `json:"name"`
	// Engine is sqlite, the default.
	Engine string `json:"engine,omitempty"`
}

// PatchRequest is the body of PATCH /api/databases/{id}.
type PatchRequest struct {
	// Action is retry: run a failed create again.
	Action string `json:"action"`
}

// Name names the area's resources in project teardown messages.
func (s *Service) Name() string { return "databases" }

var _ projects.Dependent = (*Service)(nil)

// Blockers lists nothing: databases never stop a project's deletion.
func (s *Service) Blockers(context.Context, string) ([]projects.Blocker, error) { return nil, nil }

// Remove deletes every database of a deleted project. It is safe to call
// again after a partial failure.
func (s *Service) Remove(ctx context.Context, projectID string) error {
	ids, err := s.records.inProject(ctx, projectID)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		rec, err := s.records.byID(ctx, id)
		if err == nil {
			err = s.remove(ctx, nil, rec, fmt.Sprintf("deleted database %s with its project", rec.Name))
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func validName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", api.Invalid("name is required")
	}
	if len(name) > MaxNameLen {
		return "", api.Invalid("name is at most %d characters", MaxNameLen)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return "", api.Invalid("name cannot hold control characters")
	}
	return name, nil
}

func validEngine(engine string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(engine))
	if e == "" || e == EngineSQLite {
		return EngineSQLite, nil
	}
	// The specification: any engine other than sqlite answers 501, known
	// (postgres, mysql, redis) or not.
	if len(e) > 40 {
		e = e[:40] + "..."
	}
	return "", api.E(api.KindNotImplemented, "engine_unavailable", "engine %q is not offered: databases run the sqlite engine (the default; omit engine)", e).
		With("engine", EngineSQLite)
}

// Create makes a database in a project: a row that holds its place in the
// plan, then its SQLite file. When the file cannot be made the database
// stays as failed, with the reason, and the answer is 409 create_failed;
// PATCH {"action": "retry"} runs the create again without counting against
// the plan a second time.
func (s *Service) Create(ctx context.Context, p *auth.Principal, projectID string, req CreateRequest) (Database, error) {
	name, err := validName(req.Name)
	if err != nil {
		return Database{}, err
	}
	engine, err := validEngine(req.Engine)
	if err != nil {
		return Database{}, err
	}
	if _, err := s.d.Projects.Writable(ctx, p.WorkspaceID, projectID); err != nil {
		return Database{}, err
	}
	plan := s.d.Plans.Plan(ctx, p.WorkspaceID)
	limit := databaseLimit(plan)
	rec := record{ID: store.NewID("db"), Workspace: p.WorkspaceID, Project: projectID, Name: name, Engine: engine,
		Status: StatusCreating, CreatedAt: s.d.Clock.Now()}
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		n, err := s.records.countLive(ctx, tx, p.WorkspaceID)
		if err != nil {
			return err
		}
		if !plans.Allows(limit, n+1) {
			return plans.LimitError(plan, databaseLimit, n, n+1,
				"the %s plan holds %d database(s) and the workspace has %d: delete one or move to a larger plan", plan, limit, n)
		}
		if err := s.records.insert(ctx, tx, rec); err != nil {
			if store.IsUniqueViolation(err) {
				return api.Conflict("name_taken", "this project already has a database named %q", name)
			}
			return err
		}
		// Among replicas the creating node owns the database: its file is
		// made here, and requests reaching other replicas come here.
		if f := s.cluster(); f != nil {
			if err := f.Registry().Assign(ctx, tx, placement.KindDatabase, rec.ID); err != nil {
				return err
			}
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "database.create", Category: audit.CategoryData,
			TargetType: "database", TargetID: rec.ID, ProjectID: projectID, Summary: fmt.Sprintf("created database %s", name)})
	})
	if err != nil {
		return Database{}, err
	}
	return s.materialize(ctx, rec)
}

// databaseLimit is how many databases a plan holds.
func databaseLimit(p plans.Name) int { return plans.Of(p).Databases }

// materialize makes the file of a record in state creating and settles the
// state: ready, or failed with the reason.
func (s *Service) materialize(ctx context.Context, rec record) (Database, error) {
	status, reason := StatusReady, ""
	if err := s.createFile(ctx, rec.ID); err != nil {
		status, reason = StatusFailed, publicReason(err)
		s.d.Logger.Error("databases: create failed", "database", rec.ID, "err", err)
	}
	err := s.records.setStatus(ctx, s.d.DB, rec.ID, status, reason, s.d.Clock.Now())
	s.records.forget(rec.ID)
	s.storage.invalidate(rec.Workspace)
	if err != nil {
		return Database{}, fmt.Errorf("databases: settle create: %w", err)
	}
	rec.Status, rec.Error = status, reason
	d := s.view(ctx, rec)
	if status == StatusFailed {
		return d, api.Conflict("create_failed", "database %s could not be created: %s; PATCH /api/databases/%s with {\"action\": \"retry\"} to try again", rec.Name, reason, rec.ID).
			With("reason", reason).With("database", d)
	}
	return d, nil
}

// createFile makes the database's SQLite file (WAL, incremental
// auto-vacuum) and records its size.
func (s *Service) createFile(ctx context.Context, id string) error {
	if err := s.ensureDir(); err != nil {
		return err
	}
	path := s.path(id)
	if err := removeFiles(path); err != nil { // a failed attempt's leftovers
		return err
	}
	h, err := openHandle(id, path, true, s.maxPages(), s.d.Clock)
	if err != nil {
		return err
	}
	size, err := h.measure(ctx)
	if cerr := h.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	s.storage.set(id, size)
	return syncDir(s.cfg.Dir)
}

// syncDir makes a new file's directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// publicReason describes a create failure without the server's paths.
func publicReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("storage refused to %s the database file: %v", pe.Op, pe.Err)
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		return "SQLite could not create the database file: " + se.Error()
	}
	return "the database file could not be created"
}

// maxPages is SQLite's max_page_count for the database size limit.
func (s *Service) maxPages() int64 { return s.Limits().DatabaseBytes / pageSize }

// load returns database id for op: 404 when the workspace has none, the
// permission table's answer for the database's own project, 410 when it
// was deleted.
func (s *Service) load(ctx context.Context, p *auth.Principal, id string, op auth.Op) (record, error) {
	rec, err := s.records.get(ctx, p.WorkspaceID, id)
	if errors.Is(err, store.ErrNotFound) {
		return record{}, api.NotFound("database")
	}
	if err != nil {
		return record{}, err
	}
	// The route let a project key through on its own project; the
	// database's project is known only now.
	if err := auth.Authorize(p, op, rec.Project); err != nil {
		return record{}, err
	}
	if rec.Status == StatusDeleted {
		return record{}, gone(id)
	}
	return rec, nil
}

func gone(id string) error {
	return api.E(api.KindGone, "database_deleted", "database %s was deleted and no longer exists", id)
}

// usable refuses a database that cannot take queries or exports.
func usable(rec record) error {
	switch rec.Status {
	case StatusFailed:
		return api.Conflict("database_unavailable", "database %s is unavailable: its create failed (%s); PATCH it with {\"action\": \"retry\"}", rec.ID, rec.Error).
			With("reason", rec.Error)
	case StatusCreating:
		return api.Conflict("database_unavailable", "database %s is still being created", rec.ID)
	}
	return nil
}

// Get returns a database with its endpoint and limits.
func (s *Service) Get(ctx context.Context, p *auth.Principal, id string) (Database, error) {
	rec, err := s.load(ctx, p, id, auth.OpDatabaseRead)
	if err != nil {
		return Database{}, err
	}
	return s.view(ctx, rec), nil
}

// view renders a record for the API. Endpoint is the path; the handler
// makes it absolute.
func (s *Service) view(ctx context.Context, rec record) Database {
	l := s.Limits()
	allowance, pl := s.allowance(ctx, rec.Workspace)
	size, ok := s.storage.size(rec.ID)
	if !ok {
		size = rec.SizeBytes
	}
	return Database{
		ID: rec.ID, Name: rec.Name, Engine: rec.Engine, ProjectID: rec.Project, Status: rec.Status, Error: rec.Error,
		Endpoint: "/api/databases/" + rec.ID, SizeBytes: size, CreatedAt: rec.CreatedAt,
		Limits: DatabaseLimits{
			DatabaseBytes: l.DatabaseBytes, ValueBytes: MaxValueBytes, SQLBytes: MaxSQLBytes, ParamsPerStatement: MaxParams,
			ColumnsPerTable: MaxColumns, StatementsPerBatch: MaxBatch, QueryTimeoutSeconds: l.QueryTimeout.Seconds(),
			QueryRequests: l.RequestsPerWindow, WindowSeconds: l.Window.Seconds(),
			WorkspaceStorageBytes: allowance, WorkspaceDatabases: pl.Databases,
		},
	}
}

// Retry runs a failed create again (PATCH {"action": "retry"}). It does
// not count against the plan: the failed database already holds its
// place. A database that is ready is returned as it is.
func (s *Service) Retry(ctx context.Context, p *auth.Principal, id string, req PatchRequest) (Database, error) {
	if req.Action != "retry" {
		return Database{}, api.Invalid("action must be retry (the one action a database takes)")
	}
	rec, err := s.load(ctx, p, id, auth.OpDatabaseWrite)
	if err != nil {
		return Database{}, err
	}
	switch rec.Status {
	case StatusReady:
		return s.view(ctx, rec), nil
	case StatusCreating:
		return Database{}, usable(rec)
	}
	if _, err := s.d.Projects.Writable(ctx, p.WorkspaceID, rec.Project); err != nil {
		return Database{}, err
	}
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE databases SET status = ?, error = '', updated_at = ? WHERE id = ? AND status = ?`,
			StatusCreating, store.FormatTime(s.d.Clock.Now()), id, StatusFailed)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return api.Conflict("database_unavailable", "database %s is already being created", id)
		}
		// A database with no owner yet (made before this node had an
		// identity) is made here: this node takes it.
		if f := s.cluster(); f != nil {
			owner, err := f.Registry().Claim(ctx, tx, placement.KindDatabase, id)
			if err != nil {
				return err
			}
			if owner != f.Registry().Config().NodeID {
				return api.E(api.KindUnavailable, "database_unavailable", "database %s belongs to node %s; retry shortly", id, owner).With("node", owner)
			}
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "database.retry", Category: audit.CategoryData,
			TargetType: "database", TargetID: id, ProjectID: rec.Project, Summary: fmt.Sprintf("retried creating database %s", rec.Name)})
	})
	s.records.forget(id)
	if err != nil {
		return Database{}, err
	}
	rec.Status, rec.Error = StatusCreating, ""
	return s.materialize(ctx, rec)
}

// Delete removes a database for good; later calls answer 410.
func (s *Service) Delete(ctx context.Context, p *auth.Principal, id string) error {
	rec, err := s.load(ctx, p, id, auth.OpDatabaseWrite)
	if err != nil {
		return err
	}
	return s.remove(ctx, p, rec, fmt.Sprintf("deleted database %s", rec.Name))
}

// remove marks a database deleted (with its audit row), interrupts what
// runs on it, and deletes its files and exports. Files that cannot be
// removed now are removed at the next start.
func (s *Service) remove(ctx context.Context, actor *auth.Principal, rec record, summary string) error {
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if err := s.records.setStatus(ctx, tx, rec.ID, StatusDeleted, "", s.d.Clock.Now()); err != nil {
			return err
		}
		// Deleted on a replica that does not own it (with its project):
		// the owner removes the file when this commits.
		if s.cluster() != nil {
			if err := s.d.DB.Notifier().Notify(ctx, tx, removedChannel, rec.ID); err != nil {
				return err
			}
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: rec.Workspace, Actor: actor, Action: "database.delete", Category: audit.CategoryData,
			TargetType: "database", TargetID: rec.ID, ProjectID: rec.Project, Summary: summary})
	})
	s.records.forget(rec.ID)
	if err != nil {
		return err
	}
	s.storage.forget(rec.Workspace, rec.ID)
	err = errors.Join(s.open.remove(rec.ID), removeFiles(s.path(rec.ID)), os.RemoveAll(filepath.Join(s.exportDir(), rec.ID)))
	if err != nil {
		s.d.Logger.Warn("databases: removing files of a deleted database", "database", rec.ID, "err", err)
	}
	return nil
}

// pinned returns the open handle of database id, opening it (and
// measuring it) when needed, with a reference the caller drops with leave.
func (s *Service) pinned(ctx context.Context, id string) (*handle, error) {
	for {
		h, err := s.open.get(id, func() (*handle, error) { return s.openExisting(ctx, id) })
		if err != nil {
			return nil, err
		}
		if err := h.pin(); err == nil {
			return h, nil
		}
		// Closed between get and pin (evicted or deleted): look again.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// openExisting opens a database file that exists; it is never created
// here, so a database whose file is gone cannot come back empty.
func (s *Service) openExisting(ctx context.Context, id string) (*handle, error) {
	path := s.path(id)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("databases: open %s: %w", id, err)
	}
	h, err := openHandle(id, path, false, s.maxPages(), s.d.Clock)
	if err != nil {
		return nil, err
	}
	if _, ok := s.storage.localSize(id); !ok {
		size, err := h.measure(ctx)
		if err != nil {
			h.close()
			return nil, err
		}
		s.storage.set(id, size)
	}
	return h, nil
}
