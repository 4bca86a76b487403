package apibench

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/plans"
)

const (
	ownerKey = "bench-owner-key-0123456789abcdef"
	rows     = 10_000
	selectKV = "SELECT v FROM kv WHERE k = ?"
	insertKV = "INSERT INTO kv(v) VALUES (?)"
	schema   = "CREATE TABLE kv(k INTEGER PRIMARY KEY, v TEXT NOT NULL)"
	seed     = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000) INSERT INTO kv(k, v) SELECT i, 'value ' || i FROM n"
)

// api is a control plane on a loopback socket with one database holding
// the kv table.
type api struct {
	cp     *controlplane.ControlPlane
	srv    *httptest.Server
	client *http.Client
	url    string
	id     string
}

func newAPI(b *testing.B) *api {
	b.Helper()
	cp, err := controlplane.New(context.Background(), controlplane.Config{
		DataDir: b.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Bootstrap: accounts.BootstrapConfig{WorkspaceName: "bench", OwnerEmail: "bench@example.com", Plan: plans.Scale, Key: ownerKey},
	})
	if err != nil {
		b.Fatal(err)
	}
	// The benchmark sends far more than 600 requests in 5 minutes.
	lim := cp.Databases().Limits()
	lim.RequestsPerWindow = 1 << 30
	if err := cp.Databases().SetLimits(lim); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(cp.Handler())
	b.Cleanup(func() { srv.Close(); cp.Close() })
	a := &api{cp: cp, srv: srv, client: srv.Client()}
	var project struct {
		Project struct{ ID string } `json:"project"`
	}
	a.call(b, "/api/projects", map[string]any{"name": "bench"}, &project)
	var db struct {
		Database struct{ ID string } `json:"database"`
	}
	a.call(b, "/api/projects/"+project.Project.ID+"/databases", map[string]any{"name": "kv"}, &db)
	a.id = db.Database.ID
	a.url = "/api/databases/" + a.id
	a.call(b, a.url, map[string]any{"sql": schema + "; " + seed}, nil)
	return a
}

// owner is the workspace owner as the service sees the benchmark's key.
func (a *api) owner() *auth.Principal {
	return &auth.Principal{WorkspaceID: a.cp.Bootstrap.Workspace.ID, Role: auth.Owner}
}

// call POSTs body to path and decodes the answer into out.
func (a *api) call(b *testing.B, path string, body any, out any) {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", a.srv.URL+path, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+ownerKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		b.Fatalf("%s: %d %s", path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.Fatal(err)
		}
	}
}

// direct is the same table in its own file, opened with the settings the
// service uses (WAL, synchronous=FULL, foreign keys, statement cache).
func direct(b *testing.B) *sql.DB {
	b.Helper()
	path := filepath.Join(b.TempDir(), "kv.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=FULL&_foreign_keys=on&_busy_timeout=5000&_stmt_cache_size=64")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	if _, err := db.Exec(schema + "; " + seed); err != nil {
		b.Fatal(err)
	}
	return db
}

type answer struct {
	Results []struct {
		V string `json:"v"`
	} `json:"results"`
}

func BenchmarkPointSelect(b *testing.B) {
	b.Run("api", func(b *testing.B) {
		a := newAPI(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			var out answer
			k := i%rows + 1
			a.call(b, a.url, map[string]any{"sql": selectKV, "params": []int{k}}, &out)
			if len(out.Results) != 1 || out.Results[0].V != fmt.Sprint("value ", k) {
				b.Fatalf("row %d: %+v", k, out)
			}
			i++
		}
	})
	b.Run("service", func(b *testing.B) {
		a := newAPI(b)
		svc, owner := a.cp.Databases(), a.owner()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			k := i%rows + 1
			out, err := svc.Exec(context.Background(), owner, a.id, selectKV, []json.RawMessage{json.RawMessage(fmt.Sprint(k))})
			if err != nil || out.Meta.RowsRead != 1 {
				b.Fatalf("row %d: %+v %v", k, out, err)
			}
			i++
		}
	})
	b.Run("driver", func(b *testing.B) {
		db := direct(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			var v string
			k := i%rows + 1
			if err := db.QueryRow(selectKV, k).Scan(&v); err != nil || v != fmt.Sprint("value ", k) {
				b.Fatalf("row %d: %q %v", k, v, err)
			}
			i++
		}
	})
}

func BenchmarkInsert(b *testing.B) {
	b.Run("api", func(b *testing.B) {
		a := newAPI(b)
		b.ReportAllocs()
		for b.Loop() {
			a.call(b, a.url, map[string]any{"sql": insertKV, "params": []string{"inserted"}}, nil)
		}
	})
	b.Run("service", func(b *testing.B) {
		a := newAPI(b)
		svc, owner := a.cp.Databases(), a.owner()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := svc.Exec(context.Background(), owner, a.id, insertKV, []json.RawMessage{json.RawMessage(`"inserted"`)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("driver", func(b *testing.B) {
		db := direct(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := db.Exec(insertKV, "inserted"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
