package databases

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/svcplatform/platform/controlplane/ratelimit"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/metering"
)

// QueryRequest is the body of POST /api/databases/{id}: either sql (one or
// more statements, run in order, binding params to their ? placeholders in
// order) or batch (one statement per item, each with its own params).
// Either way the request runs as one transaction.
type QueryRequest struct {
	// SQL is one or more statements.
	SQL *string `json:"sql,omitempty"`
	// Params are the values of SQL's placeholders, in order.
	Params []json.RawMessage `json:"params,omitempty"`
	// Batch is the alternative to SQL: one statement per item.
	Batch []BatchItem `json:"batch,omitempty"`
}

// BatchItem is one statement of a batch.
type BatchItem struct {
	// SQL is one statement.
	SQL string `json:"sql"`
	// Params are the values of its placeholders.
	Params []json.RawMessage `json:"params,omitempty"`
}

// QueryAnswer is the answer to sql: the rows of the last statement, how
// many statements ran, and what they did together.
type QueryAnswer struct {
	// Results are the rows of the last statement, as a JSON array of objects.
	Results json.RawMessage `json:"results"`
	// Statements is how many statements ran.
	Statements int `json:"statements"`
	// Meta sums what the statements did.
	Meta Meta `json:"meta"`
}

// BatchAnswer is the answer to a batch: one entry per statement, in order.
type BatchAnswer struct {
	// Batch has one entry per statement.
	Batch []BatchResult `json:"batch"`
}

// BatchResult is one statement's rows and meta.
type BatchResult struct {
	// Results are the statement's rows, as a JSON array of objects.
	Results json.RawMessage `json:"results"`
	// Meta is what the statement did.
	Meta Meta `json:"meta"`
}

// Exec runs the statements of one sql text.
func (s *Service) Exec(ctx context.Context, p *auth.Principal, id, sqlText string, params []json.RawMessage) (QueryAnswer, error) {
	if len(sqlText) > MaxSQLBytes {
		return QueryAnswer{}, tooLong("sql", len(sqlText))
	}
	stmts := Split(sqlText)
	if len(stmts) == 0 {
		return QueryAnswer{}, api.Invalid("sql holds no statement")
	}
	if len(stmts) > MaxBatch {
		return QueryAnswer{}, api.E(api.KindInvalid, "too_many_statements", "sql holds %d statements; at most %d run in one request", len(stmts), MaxBatch).
			With("limit", MaxBatch)
	}
	args := make([][]driver.NamedValue, len(stmts))
	used := 0
	for i, st := range stmts {
		if st.Vars > MaxParams && len(params)-used < st.Vars {
			continue // SQLite refuses the statement itself
		}
		if len(params)-used < st.Vars {
			return QueryAnswer{}, api.E(api.KindInvalid, "params_mismatch", "statement %d binds %d parameter(s) but params has %d value(s) left", i, st.Vars, len(params)-used).
				With("statement", i)
		}
		a, err := bindArgs(params[used:used+st.Vars], i)
		if err != nil {
			return QueryAnswer{}, err
		}
		args[i] = a
		used += st.Vars
	}
	if used != len(params) {
		return QueryAnswer{}, api.E(api.KindInvalid, "params_mismatch", "params has %d value(s) but the statements bind %d", len(params), used)
	}
	out, err := s.run(ctx, p, id, &job{stmts: stmts, args: args})
	if err != nil {
		return QueryAnswer{}, err
	}
	ans := QueryAnswer{Statements: len(out), Results: out[len(out)-1].rows}
	for _, o := range out {
		ans.Meta.add(o.meta)
	}
	return ans, nil
}

// Batch runs the statements of a batch, one per item.
func (s *Service) Batch(ctx context.Context, p *auth.Principal, id string, items []BatchItem) (BatchAnswer, error) {
	if len(items) == 0 {
		return BatchAnswer{}, api.Invalid("batch is empty")
	}
	if len(items) > MaxBatch {
		return BatchAnswer{}, api.E(api.KindInvalid, "batch_too_large", "batch has %d statements; at most %d", len(items), MaxBatch).
			With("limit", MaxBatch)
	}
	j := &job{all: true, stmts: make([]Statement, len(items)), args: make([][]driver.NamedValue, len(items))}
	for i, it := range items {
		if len(it.SQL) > MaxSQLBytes {
			return BatchAnswer{}, tooLong("batch statement", len(it.SQL)).With("statement", i)
		}
		stmts := Split(it.SQL)
		if len(stmts) != 1 {
			return BatchAnswer{}, api.E(api.KindInvalid, "one_statement_per_item", "batch item %d holds %d statements; send one statement per item", i, len(stmts)).
				With("statement", i)
		}
		if stmts[0].Vars <= MaxParams && stmts[0].Vars != len(it.Params) {
			return BatchAnswer{}, api.E(api.KindInvalid, "params_mismatch", "batch item %d binds %d parameter(s) but has %d value(s)", i, stmts[0].Vars, len(it.Params)).
				With("statement", i)
		}
		a, err := bindArgs(it.Params, i)
		if err != nil {
			return BatchAnswer{}, err
		}
		j.stmts[i], j.args[i] = stmts[0], a
	}
	out, err := s.run(ctx, p, id, j)
	if err != nil {
		return BatchAnswer{}, err
	}
	ans := BatchAnswer{Batch: make([]BatchResult, len(out))}
	for i, o := range out {
		ans.Batch[i] = BatchResult{Results: o.rows, Meta: o.meta}
	}
	return ans, nil
}

func tooLong(what string, n int) *api.Error {
	return api.E(api.KindInvalid, "sql_too_long", "%s is %d bytes; at most %d", what, n, MaxSQLBytes).With("limit", MaxSQLBytes)
}

// bindArgs decodes the params of statement i.
func bindArgs(params []json.RawMessage, i int) ([]driver.NamedValue, error) {
	if len(params) > MaxParams {
		return nil, api.E(api.KindInvalid, "too_many_params", "statement %d binds %d parameters; at most %d", i, len(params), MaxParams).
			With("statement", i).With("limit", MaxParams)
	}
	args := make([]driver.NamedValue, len(params))
	for k, raw := range params {
		v, err := decodeParam(raw)
		if err != nil {
			var e *api.Error
			if errors.As(err, &e) {
				return nil, e.With("statement", i).With("param", k)
			}
			return nil, err
		}
		args[k] = driver.NamedValue{Ordinal: k + 1, Value: v}
	}
	return args, nil
}

// run takes a request through the rules of the area and runs it: the
// database's own project in the permission table, its state, the
// workspace rate limit (a request counts once however many statements it
// holds), statements refused everywhere, the storage hold, a running
// export, then the statements in one transaction with the time limit.
func (s *Service) run(ctx context.Context, p *auth.Principal, id string, j *job) ([]outcome, error) {
	rec, err := s.load(ctx, p, id, auth.OpDatabaseQuery)
	if err != nil {
		return nil, err
	}
	if err := usable(rec); err != nil {
		return nil, err
	}
	lim := s.Limits()
	d, err := s.limiter.Allow(ctx, ratelimit.Key{Workspace: rec.Workspace, Bucket: "databases.query"}, ratelimit.PerWindow(lim.RequestsPerWindow, lim.Window), 1)
	if err != nil {
		return nil, api.Internal(fmt.Errorf("databases: rate limit: %w", err))
	}
	if !d.Allowed {
		e := api.E(api.KindRateLimited, "rate_limited", "the workspace sent %d query requests in %s: wait %s", lim.RequestsPerWindow, lim.Window, d.RetryAfter.Round(time.Second)).
			With("limit", lim.RequestsPerWindow)
		e.RetryAfter = d.RetryAfterSeconds()
		return nil, e
	}
	j.readOnly = true
	for i, st := range j.stmts {
		switch st.Verb {
		case VerbTransaction:
			return nil, api.E(api.KindInvalid, "transaction_statement",
				"statement %d controls the transaction: every request already runs as one transaction, so send it without BEGIN, COMMIT, END or ROLLBACK (SAVEPOINT works)", i).
				With("statement", i)
		case VerbVacuum:
			return nil, api.E(api.KindInvalid, "not_allowed",
				"statement %d: VACUUM is not available (a request is one transaction and a database is one file); PRAGMA incremental_vacuum gives free pages back", i).
				With("statement", i)
		}
		j.readOnly = j.readOnly && st.ReadOnly()
	}
	if !j.readOnly {
		// A project whose deletion failed takes reads and deletes only.
		if g, ok := s.d.Projects.(activeGuard); ok {
			if err := g.RequireActive(ctx, rec.Project); err != nil {
				return nil, err
			}
		}
	}
	h, err := s.pinned(ctx, rec.ID)
	if err != nil {
		return nil, s.unreachable(ctx, rec, err)
	}
	defer h.leave()
	// Requests whose statements all read (SELECT, EXPLAIN) cannot add
	// data: the hold, before and on the writer, is for the others.
	hold := func() (*gate, error) { return s.hold(ctx, rec, h, j.stmts) }
	if j.readOnly {
		j.lateHold = hold // should one write after all, on the writer
	} else if j.gate, err = hold(); err != nil {
		return nil, err
	}
	var waiting func()
	if f := s.exportWaiting.Load(); f != nil {
		waiting = *f
	}
	if err := h.waitExport(ctx, lim.ExportWait, waiting); err != nil {
		return nil, s.unreachable(ctx, rec, err)
	}
	j.timeout, j.maxResult, j.maxRows = lim.QueryTimeout, lim.MaxResultBytes, lim.MaxResultRows
	size, _ := s.storage.size(rec.ID)
	out, size, err := h.run(ctx, j, size)
	if err != nil {
		return nil, s.queryError(ctx, rec, err, lim)
	}
	s.account(rec, out, size)
	return out, nil
}

// account records the size (when measured, not -1) and the usage of a
// request that ran.
func (s *Service) account(rec record, out []outcome, size int64) {
	var read, written int64
	for _, o := range out {
		read += o.meta.RowsRead
		written += o.meta.RowsWritten
	}
	if size >= 0 {
		s.storage.set(rec.ID, size)
	}
	now := s.d.Clock.Now()
	s.usage.Add(rec.Workspace, rec.Project, metering.DatabaseQueries, float64(len(out)), now)
	s.usage.Add(rec.Workspace, rec.Project, metering.RowsRead, float64(read), now)
	s.usage.Add(rec.Workspace, rec.Project, metering.RowsWritten, float64(written), now)
}

// unreachable explains why a database could not be reached.
func (s *Service) unreachable(ctx context.Context, rec record, err error) error {
	switch {
	case errors.Is(err, errExportActive):
		e := api.Conflict("export_active", "database %s is being exported and takes no queries until the export completes; retry shortly", rec.ID)
		e.RetryAfter = 1
		return e
	case errors.Is(err, errClosed):
		if now, lerr := s.records.byID(ctx, rec.ID); lerr == nil && now.Status == StatusDeleted {
			return gone(rec.ID)
		}
		return api.E(api.KindUnavailable, "database_unavailable", "database %s closed during the request; retry shortly", rec.ID)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return &api.Error{Kind: api.KindUnavailable, Code: "database_unavailable", Message: "the database could not be opened; retry shortly", Err: err}
}
