package usage_test

import (
	"context"
	"encoding/json"
	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/usage"
)

// wired is the whole control plane with the usage service built over its
// real areas (the assembly's wiring), its routes on a local mux.
type wired struct {
	env *cptest.Env
	svc *usage.Service
	srv *httptest.Server
}

func newWired(t *testing.T, eng pgtest.Engine) *wired {
	t.Helper()
	env := cptest.New(t, onEngine(t, eng))
	cp := env.CP
	svc, err := usage.New(usage.Config{}, usage.Deps{
		DB: cp.DB, Clock: env.Clock, Meter: cp.Meter, Projects: cp.Projects, Plans: cp.Accounts, Credits: cp.Billing, Jobs: &fakeQueue{},
		WorkspaceCounts: map[string]usage.CountFunc{"repos": func(ctx context.Context, ws string) (int, error) {
			rs, err := cp.Repos().List(ctx, ws)
			return len(rs), err
		}},
		Workspaces: func(ctx context.Context) ([]string, error) { return accounts.WorkspaceIDs(ctx, cp.DB) },
		Sources: map[string]usage.Source{
			"projects": usage.ProjectsSource{Projects: cp.Projects},
			"deploys":  usage.DeploysSource{Projects: cp.Projects, Deployments: cp.Deploys(), Clock: env.Clock},
			"email":    usage.EmailSource{Verifier: cp.Accounts},
			"credit":   usage.CreditSource{Credits: cp.Billing, Meter: cp.Meter, Clock: env.Clock},
			"shield":   usage.ShieldSource{Shield: cp.Shield(), Changes: cp.Audit, Clock: env.Clock},
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	h := usage.Handlers{S: svc}
	mux := http.NewServeMux()
	api.Mount(mux, []api.Route{
		{Method: http.MethodGet, Path: "/api/usage", Op: auth.OpUsageRead, Handler: h.Usage},
		{Method: http.MethodGet, Path: "/api/attention", Op: auth.OpUsageRead, Handler: h.Attention},
	}, api.MountOptions{Authn: cp.Accounts, Calls: cp.KeyCalls()})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &wired{env: env, svc: svc, srv: srv}
}

func (w *wired) get(t *testing.T, path string, want int, out any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, w.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+cptest.OwnerKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("GET %s = %d %s, want %d", path, res.StatusCode, body, want)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatal(err)
		}
	}
}

func (w *wired) totals(t *testing.T) map[string]float64 {
	t.Helper()
	ctx := context.Background()
	if err := w.env.CP.KeyCalls().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.env.CP.Databases().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var r usage.Report
	w.get(t, "/api/usage?period=7d", 200, &r)
	out := map[string]float64{}
	for k, v := range r.Totals {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// Each case does something through the areas and sees its metrics move by
// exactly that much.
func TestMetricsMoveThroughTheAreas(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			w := newWired(t, eng)
			env := w.env
			project := env.CreateProject("Blog")
			var repo struct {
				Repo struct{ ID string } `json:"repo"`
			}
			env.Owner.Must(201, "POST", "/api/repos", map[string]any{"name": "site"}).JSON(t, &repo)
			var db struct {
				Database struct{ ID string } `json:"database"`
			}
			env.Owner.Must(201, "POST", "/api/projects/"+project+"/databases", map[string]any{"name": "main"}).JSON(t, &db)
			env.Owner.Must(200, "POST", "/api/databases/"+db.Database.ID, map[string]any{"sql": "CREATE TABLE t(v TEXT)"})

			tests := []struct {
				name string
				do   func(t *testing.T)
				want map[string]float64
			}{
				{"create a project", func(t *testing.T) { env.CreateProject("Shop") }, map[string]float64{"projects_created": 1}},
				{"deploy a commit", func(t *testing.T) {
					env.Owner.Must(201, "POST", "/api/repos/"+repo.Repo.ID+"/commits", map[string]any{"message": "m",
						"files": []map[string]any{{"path": "index.html", "content": "<h1>hi</h1>"}}})
					env.Owner.Must(202, "POST", "/api/repos/"+repo.Repo.ID+"/deploy", map[string]any{"projectId": project, "commit": 1})
					env.CP.Deploys().Wait()
				}, map[string]float64{"deploys": 1}},
				{"a batch of three statements", func(t *testing.T) {
					env.Owner.Must(200, "POST", "/api/databases/"+db.Database.ID, map[string]any{"batch": []map[string]any{
						{"sql": "INSERT INTO t(v) VALUES ('a'),('b')"}, {"sql": "INSERT INTO t(v) VALUES ('c')"}, {"sql": "SELECT * FROM t"}}})
				}, map[string]float64{"database_queries": 3, "database_rows_written": 3, "database_rows_read": 3}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					before := w.totals(t)
					tt.do(t)
					after := w.totals(t)
					for m, n := range tt.want {
						if got := after[m] - before[m]; got != n {
							t.Errorf("%s moved by %v, want %v", m, got, n)
						}
					}
				})
			}
			t.Run("api key calls count every keyed request", func(t *testing.T) {
				before := w.totals(t) // itself one call, counted in the next read
				for range 4 {
					env.Owner.Must(200, "GET", "/api/workspace", nil)
				}
				after := w.totals(t)
				if got := after["api_key_calls"] - before["api_key_calls"]; got != 5 {
					t.Errorf("api_key_calls moved by %v, want 5 (4 calls and the report read)", got)
				}
			})
			t.Run("counts, limits and credit", func(t *testing.T) {
				var r usage.Report
				w.get(t, "/api/usage", 200, &r)
				if r.Counts["projects"] != 2 || r.Counts["repos"] != 1 || r.Limits.Plan != "pro" || r.AICredits == nil || r.AICredits.IncludedMicros != 10_000_000 {
					t.Fatalf("counts %v, limits %+v, credits %+v", r.Counts, r.Limits, r.AICredits)
				}
			})
			t.Run("bad period", func(t *testing.T) {
				var e struct {
					Error struct{ Code, Message string }
				}
				w.get(t, "/api/usage?period=week", 400, &e)
				if e.Error.Code != "invalid_period" {
					t.Fatalf("error = %+v", e.Error)
				}
				w.get(t, "/api/usage?period=7d&period=30d", 400, nil)
			})
		})
	}
}

func TestAttentionThroughTheAreas(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			w := newWired(t, eng)
			env := w.env
			project := env.CreateProject("Blog")
			var repo struct {
				Repo struct{ ID string } `json:"repo"`
			}
			env.Owner.Must(201, "POST", "/api/repos", map[string]any{"name": "site"}).JSON(t, &repo)
			env.Owner.Must(201, "POST", "/api/repos/"+repo.Repo.ID+"/commits", map[string]any{"message": "m",
				"files": []map[string]any{{"path": ".env", "content": "SECRET=1"}}})
			env.Owner.Must(202, "POST", "/api/repos/"+repo.Repo.ID+"/deploy", map[string]any{"projectId": project, "commit": 1})
			env.CP.Deploys().Wait()
			env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"enabled": true, "logOnly": true})

			kindsNow := func() []string {
				var a usage.Attention
				w.get(t, "/api/attention", 200, &a)
				if len(a.Unavailable) != 0 {
					t.Fatalf("unavailable sources: %v", a.Unavailable)
				}
				return kinds(a.Items)
			}
			got := kindsNow()
			want := []string{"critical/deploy_failed/" + project, "warning/email_unverified/"}
			if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
				t.Fatalf("attention = %v, want %v", got, want)
			}
			env.Clock.Advance(8 * 24 * time.Hour)
			got = kindsNow()
			if len(got) != 3 || got[2] != "warning/shield_log_only/" {
				t.Fatalf("after a week in log-only: %v", got)
			}
		})
	}
}

// TestMain stops the PostgreSQL server the engine subtests started.
func TestMain(m *testing.M) { pgtest.Main(m) }

// onEngine starts the control plane on engine e's metadata store (a SQLite
// path or a fresh PostgreSQL database).
func onEngine(t *testing.T, e pgtest.Engine) cptest.Options {
	return cptest.Options{Configure: func(c *controlplane.Config) { c.Store = e.DSN(t) }}
}
