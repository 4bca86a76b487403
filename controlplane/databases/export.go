package databases

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// The states of an export.
const (
	ExportActive   = "active"
	ExportComplete = "complete"
	ExportFailed   = "failed"
)

// ExportRequest is the body of POST /api/databases/{id}/export.
type ExportRequest struct {
	// Bookmark asks after an export started earlier; empty starts one (or
	// returns the one running).
	Bookmark string `json:"bookmark,omitempty"`
}

// ExportAnswer says where an export stands.
type ExportAnswer struct {
	// Status is active while the export runs, then complete (or failed).
	Status string `json:"status"`
	// Bookmark names the export in later calls.
	Bookmark string `json:"bookmark"`
	// Download is where the .sql file is fetched once complete.
	Download string `json:"download,omitempty"`
	// SizeBytes is the size of the .sql file once complete.
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// Error says why a failed export failed.
	Error string `json:"error,omitempty"`
}

// exportPause, when set, runs between an export's snapshot and its dump
// (tests hold exports active with it).
type exportPause func(bookmark string)

// Export starts an export of the database, or reports on one. While an
// export is active the database takes no queries (the specification's
// rule); queries wait up to Limits.ExportWait for it, then answer 409
// export_active. The dump is written from a snapshot taken with SQLite's
// backup API, so it is consistent whatever ran before.
func (s *Service) Export(ctx context.Context, p *auth.Principal, id string, req ExportRequest) (ExportAnswer, error) {
	rec, err := s.load(ctx, p, id, auth.OpDatabaseWrite)
	if err != nil {
		return ExportAnswer{}, err
	}
	if err := usable(rec); err != nil {
		return ExportAnswer{}, err
	}
	if req.Bookmark != "" {
		return s.exportStatus(ctx, rec, req.Bookmark)
	}
	h, err := s.pinned(ctx, rec.ID)
	if err != nil {
		return ExportAnswer{}, s.unreachable(ctx, rec, err)
	}
	defer h.leave()
	run, started, err := h.startExport(store.NewID("exp"))
	if err != nil {
		return ExportAnswer{}, s.unreachable(ctx, rec, err)
	}
	if !started {
		return s.exportStatus(ctx, rec, run.bookmark)
	}
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO database_exports(bookmark, database_id, status, created_at) VALUES (?,?,?,?)`,
			run.bookmark, rec.ID, ExportActive, store.FormatTime(s.d.Clock.Now())); err != nil {
			return err
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: rec.Workspace, Actor: p, Action: "database.export", Category: audit.CategoryData,
			TargetType: "database", TargetID: rec.ID, ProjectID: rec.Project, Summary: fmt.Sprintf("exported database %s", rec.Name),
			Details: map[string]any{"bookmark": run.bookmark}})
	})
	if err != nil {
		h.endExport(run)
		return ExportAnswer{}, err
	}
	s.exports.Add(1)
	go s.runExport(h, rec, run)
	if wait := s.Limits().ExportInline; wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-run.done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	return s.exportStatus(ctx, rec, run.bookmark)
}

// runExport writes the dump, settles the export's row and lets queries in
// again.
func (s *Service) runExport(h *handle, rec record, run *exportRun) {
	defer s.exports.Done()
	defer h.endExport(run)
	ctx := context.Background()
	size, err := s.writeExport(h, rec, run.bookmark)
	status, reason := ExportComplete, ""
	if err != nil {
		status, reason = ExportFailed, "the export could not be written; start a new one"
		s.d.Logger.Error("databases: export failed", "database", rec.ID, "bookmark", run.bookmark, "err", err)
	}
	if _, err := s.d.DB.ExecContext(ctx, `UPDATE database_exports SET status = ?, error = ?, size_bytes = ?, completed_at = ? WHERE bookmark = ?`,
		status, reason, size, store.FormatTime(s.d.Clock.Now()), run.bookmark); err != nil {
		s.d.Logger.Error("databases: export state not saved", "bookmark", run.bookmark, "err", err)
		return
	}
	if status == ExportComplete {
		s.pruneExports(ctx, rec.ID, run.bookmark)
	}
}

// writeExport snapshots the database and writes the dump of the snapshot
// to exports/<database>/<bookmark>.sql.
func (s *Service) writeExport(h *handle, rec record, bookmark string) (int64, error) {
	dir := filepath.Join(s.exportDir(), rec.ID)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return 0, err
	}
	snap := filepath.Join(dir, bookmark+".snapshot")
	defer removeFiles(snap)
	if err := h.snapshot(h.ctx, snap); err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	if f := s.pause.Load(); f != nil {
		(*f)(bookmark)
	}
	out := s.exportPath(rec.ID, bookmark)
	if err := dumpFile(h.ctx, snap, out); err != nil {
		return 0, fmt.Errorf("dump: %w", err)
	}
	fi, err := os.Stat(out)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (s *Service) exportPath(dbID, bookmark string) string {
	return filepath.Join(s.exportDir(), dbID, bookmark+".sql")
}

// snapshot copies the database into a new file at dest with SQLite's
// backup API. Should another connection write meanwhile the copy restarts,
// so the result is always one consistent state.
func (h *handle) snapshot(ctx context.Context, dest string) error {
	src, err := h.readers.Conn(ctx)
	if err != nil {
		return err
	}
	defer src.Close()
	dstDB, err := sql.Open("sqlite3", "file:"+dest+"?mode=rwc")
	if err != nil {
		return err
	}
	defer dstDB.Close()
	dst, err := dstDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer dst.Close()
	return dst.Raw(func(d any) error {
		return src.Raw(func(sc any) error {
			b, err := d.(*sqlite3.SQLiteConn).Backup("main", sc.(*conn).SQLiteConn, "main")
			if err != nil {
				return err
			}
			for {
				done, err := b.Step(4096)
				if err != nil {
					b.Close()
					return err
				}
				if done {
					return b.Finish()
				}
				if err := ctx.Err(); err != nil {
					b.Close()
					return err
				}
			}
		})
	})
}

// exportStatus reports on export bookmark of a database.
func (s *Service) exportStatus(ctx context.Context, rec record, bookmark string) (ExportAnswer, error) {
	var a ExportAnswer
	err := s.d.DB.QueryRowContext(ctx, `SELECT status, error, size_bytes FROM database_exports WHERE bookmark = ? AND database_id = ?`,
		bookmark, rec.ID).Scan(&a.Status, &a.Error, &a.SizeBytes)
	if errors.Is(err, sql.ErrNoRows) {
		return a, api.NotFound("export")
	}
	if err != nil {
		return a, fmt.Errorf("databases: export status: %w", err)
	}
	a.Bookmark = bookmark
	if a.Status == ExportComplete {
		a.Download = "/api/databases/" + rec.ID + "/export?bookmark=" + url.QueryEscape(bookmark)
	}
	return a, nil
}

// Download is a finished export ready to send.
type Download struct {
	// Path is the .sql file on disk.
	Path string
	// Filename is the name it is saved under: <database>-<time>.sql.
	Filename string
	// ModTime is when the dump was written.
	ModTime time.Time
}

// ExportFile returns the .sql file of a complete export.
func (s *Service) ExportFile(ctx context.Context, p *auth.Principal, id, bookmark string) (Download, error) {
	rec, err := s.load(ctx, p, id, auth.OpDatabaseWrite)
	if err != nil {
		return Download{}, err
	}
	if bookmark == "" {
		return Download{}, api.Invalid("bookmark is required: ?bookmark=<the bookmark the export call returned>")
	}
	a, err := s.exportStatus(ctx, rec, bookmark)
	if err != nil {
		return Download{}, err
	}
	switch a.Status {
	case ExportActive:
		return Download{}, api.Conflict("export_active", "the export is still running: POST /api/databases/%s/export with the bookmark until it is complete", rec.ID)
	case ExportFailed:
		return Download{}, api.Conflict("export_failed", "the export failed: %s", a.Error)
	}
	path := s.exportPath(rec.ID, bookmark)
	fi, err := os.Stat(path)
	if err != nil {
		return Download{}, api.E(api.KindGone, "export_gone", "this export was replaced by a newer one; start a new export")
	}
	return Download{Path: path, Filename: fileName(rec.Name, s.d.Clock.Now()), ModTime: fi.ModTime()}, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// fileName is the name a download is saved under.
func fileName(dbName string, at time.Time) string {
	base := strings.Trim(unsafeName.ReplaceAllString(dbName, "-"), "-.")
	if base == "" {
		base = "database"
	}
	return base + "-" + at.UTC().Format("20060102-150405") + ".sql"
}

// pruneExports removes the database's earlier finished exports: the newest
// complete one is kept until the next replaces it or the database goes.
func (s *Service) pruneExports(ctx context.Context, dbID, keep string) {
	rows, err := s.d.DB.QueryContext(ctx, `SELECT bookmark FROM database_exports WHERE database_id = ? AND bookmark <> ? AND status <> ?`, dbID, keep, ExportActive)
	if err != nil {
		s.d.Logger.Warn("databases: prune exports", "err", err)
		return
	}
	var old []string
	for rows.Next() {
		var bm string
		if rows.Scan(&bm) == nil {
			old = append(old, bm)
		}
	}
	rows.Close()
	for _, bm := range old {
		if err := os.Remove(s.exportPath(dbID, bm)); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.d.Logger.Warn("databases: prune export", "bookmark", bm, "err", err)
		}
	}
}
