package databases

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/placement"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// Among replicas a restarting node fails only its own interrupted creates
// and exports (another replica's create in progress is left alone), and
// adopts the databases whose files it holds that have no owner yet.
func TestRecoverAmongReplicas(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			db := e.Open(t)
			clk := clock.NewFake(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
			node := func(id string) *placement.Registry {
				r, err := placement.New(ctx, placement.Config{NodeID: id, URL: "http://127.0.0.1:1", HeartbeatEvery: time.Hour, StaleAfter: 2 * time.Hour}, placement.Deps{DB: db, Clock: clk, Logger: quiet})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			a, b := node("node-a"), node("node-b")
			now := store.FormatTime(clk.Now())
			err := db.Tx(ctx, func(tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, `INSERT INTO workspaces(id, name, created_at) VALUES ('ws_1', 'w', ?)`, now); err != nil {
					return err
				}
				for id, status := range map[string]string{"db_mine": StatusCreating, "db_theirs": StatusCreating, "db_old": StatusCreating,
					"db_local": StatusReady, "db_copy": StatusReady} {
					if _, err := tx.ExecContext(ctx, `INSERT INTO databases(id, workspace_id, project_id, name, engine, status, created_at, updated_at)
						VALUES (?, 'ws_1', 'prj_1', ?, 'sqlite', ?, ?, ?)`, id, id, status, now, now); err != nil {
						return err
					}
				}
				for _, id := range []string{"db_mine", "db_theirs"} {
					if _, err := tx.ExecContext(ctx, `INSERT INTO database_exports(bookmark, database_id, status, created_at) VALUES (?, ?, 'active', ?)`,
						"bm_"+id, id, now); err != nil {
						return err
					}
				}
				if err := a.Assign(ctx, tx, placement.KindDatabase, "db_mine"); err != nil {
					return err
				}
				if err := b.Assign(ctx, tx, placement.KindDatabase, "db_theirs"); err != nil {
					return err
				}
				return b.Assign(ctx, tx, placement.KindDatabase, "db_copy")
			})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			for _, id := range []string{"db_local", "db_copy"} {
				if err := os.WriteFile(filepath.Join(dir, id+".db"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			fwd, err := placement.NewForwarder(a, bytes.Repeat([]byte{1}, 32), quiet)
			if err != nil {
				t.Fatal(err)
			}
			runner, err := jobs.New(jobs.Config{}, jobs.Deps{DB: db, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			s, err := New(ctx, Config{Dir: dir}, Deps{DB: db, Clock: clk, Logger: quiet, Cluster: fwd, Projects: noProjects{}, Plans: noProjects{},
				Jobs: runner})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()

			for id, want := range map[string]string{"db_mine": StatusFailed, "db_old": StatusFailed, "db_theirs": StatusCreating} {
				rec, err := s.records.byID(ctx, id)
				if err != nil || rec.Status != want {
					t.Errorf("%s: %s (%v), want %s", id, rec.Status, err, want)
				}
			}
			for id, want := range map[string]string{"db_mine": ExportFailed, "db_theirs": ExportActive} {
				var status string
				if err := db.QueryRowContext(ctx, `SELECT status FROM database_exports WHERE database_id = ?`, id).Scan(&status); err != nil || status != want {
					t.Errorf("export of %s: %s (%v), want %s", id, status, err, want)
				}
			}
			for id, want := range map[string]string{"db_local": "node-a", "db_copy": "node-b"} {
				if owner, err := a.OwnerID(ctx, placement.KindDatabase, id); err != nil || owner != want {
					t.Errorf("owner of %s: %q (%v), want %s", id, owner, err, want)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "db_copy.db")); err != nil {
				t.Errorf("the file of a database another node owns was touched: %v", err)
			}
		})
	}
}

// noProjects has no project: recovery asks for none.
type noProjects struct{}

func (noProjects) Writable(context.Context, string, string) (projects.Project, error) {
	return projects.Project{}, api.NotFound("project")
}

func (noProjects) Plan(context.Context, string) plans.Name { return plans.Hobby }
