package databases

import (
	"context"
	"errors"
	"fmt"

	"github.com/mattn/go-sqlite3"

	"github.com/svcplatform/platform/controlplane/api"
)

// diskSpare is the free space under which SQLITE_FULL is taken for a full
// disk (a platform problem) rather than the database's size limit.
const diskSpare = 256 << 20

// queryError turns what stopped a request into the answer: a SQL mistake
// is 400 with SQLite's own message, limits are 400 with a code naming the
// limit, platform problems are 5xx. The failing statement's index is in
// "statement".
func (s *Service) queryError(ctx context.Context, rec record, err error, lim Limits) error {
	var ae *api.Error
	if errors.As(err, &ae) { // the storage hold, applied before the commit
		return ae
	}
	var se *stmtError
	denied := ""
	idx := -1
	if errors.As(err, &se) {
		idx, denied = se.index, se.denied
	}
	e := s.sqlError(ctx, rec, err, denied, lim)
	if e == nil {
		return err
	}
	if idx >= 0 {
		e = e.With("statement", idx)
	}
	return e
}

// sqlError maps err to an API error; nil when err should pass as it is
// (the caller went away).
func (s *Service) sqlError(ctx context.Context, rec record, err error, denied string, lim Limits) *api.Error {
	switch {
	case errors.Is(err, errTimeout):
		return api.E(api.KindInvalid, "query_timeout", "the statements ran longer than %s and were interrupted; nothing they changed was kept", lim.QueryTimeout).
			With("limit_seconds", lim.QueryTimeout.Seconds())
	case errors.Is(err, errWriterBusy):
		e := api.E(api.KindRateLimited, "database_busy", "database %s is busy with other writes; retry shortly", rec.ID)
		e.RetryAfter = 1
		return e
	case errors.Is(err, errResultTooLarge):
		return api.E(api.KindInvalid, "result_too_large", "the rows returned by the request, all statements together, exceed the answer limit of %d bytes; nothing was kept: select fewer rows or columns (LIMIT and OFFSET page through them) or split the batch", lim.MaxResultBytes).
			With("limit", lim.MaxResultBytes).With("limitName", "result_bytes")
	case errors.Is(err, errResultTooManyRows):
		return api.E(api.KindInvalid, "result_too_large", "the rows returned by the request, all statements together, exceed the answer limit of %d rows; nothing was kept: select fewer rows (LIMIT and OFFSET page through them) or split the batch", lim.MaxResultRows).
			With("limit", lim.MaxResultRows).With("limitName", "result_rows")
	case errors.Is(err, errClosed):
		return api.AsError(s.unreachable(ctx, rec, err))
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return nil // the caller went away
	case errors.Is(err, context.Canceled):
		return api.AsError(s.unreachable(ctx, rec, errClosed)) // the database closed under the request
	}
	var sqe sqlite3.Error
	if !errors.As(err, &sqe) {
		return api.Internal(err)
	}
	if denied != "" { // the authorizer refused part of the statement
		return api.E(api.KindInvalid, "not_allowed", "%s", denied)
	}
	msg := sqe.Error()
	switch sqe.Code {
	case sqlite3.ErrAuth:
		return api.E(api.KindInvalid, "not_allowed", "%s", msg)
	case sqlite3.ErrTooBig:
		return api.E(api.KindInvalid, "too_big", "%s (a value or row holds at most %d bytes, a statement %d)", msg, MaxValueBytes, MaxSQLBytes).
			With("limit", MaxValueBytes)
	case sqlite3.ErrFull:
		if free, ok := diskFree(s.cfg.Dir); !ok || free > diskSpare {
			return api.E(api.KindInvalid, "database_full", "database %s reached its size limit of %s: delete data (PRAGMA incremental_vacuum gives freed pages back) and retry", rec.ID, byteSize(lim.DatabaseBytes)).
				With("limit", lim.DatabaseBytes)
		}
		return &api.Error{Kind: api.KindUnavailable, Code: "storage_full", Message: "the platform's storage is full; retry later", Err: err}
	case sqlite3.ErrBusy, sqlite3.ErrLocked:
		e := api.E(api.KindRateLimited, "database_busy", "database %s is busy; retry shortly", rec.ID)
		e.RetryAfter = 1
		return e
	case sqlite3.ErrInternal, sqlite3.ErrPerm, sqlite3.ErrNomem, sqlite3.ErrReadonly, sqlite3.ErrIoErr, sqlite3.ErrCorrupt,
		sqlite3.ErrNotFound, sqlite3.ErrCantOpen, sqlite3.ErrProtocol, sqlite3.ErrNoLFS, sqlite3.ErrFormat, sqlite3.ErrNotADB:
		return &api.Error{Kind: api.KindUnavailable, Code: "database_unavailable", Message: fmt.Sprintf("database %s could not run the request; retry shortly", rec.ID), Err: err}
	case sqlite3.ErrInterrupt:
		return api.AsError(s.unreachable(ctx, rec, errClosed))
	}
	return api.E(api.KindInvalid, "sql_error", "%s", msg)
}
