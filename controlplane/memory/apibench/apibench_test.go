package apibench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/memory"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// The benchmarks compare a memory store's key operations with the same
// operation on a database, both through the whole API over a loopback
// socket: a control plane (controlplane.New, key check, permission table,
// metering) behind httptest.Server and a keep-alive client. Each side holds
// 10,000 keys ("k00000" to "k09999" with values "value <i>"). The client
// does as little as it can on both sides: a request built from bytes, the
// answer read whole and checked with bytes.Contains.
//
//	go test -run '^$' -bench . -benchmem -count 6 ./controlplane/memory/apibench/

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	ownerKey = "bench-owner-key-0123456789abcdef"
	rows     = 10_000
)

// env is a control plane serving both areas, with one database and one
// memory store filled alike.
type env struct {
	cp     *controlplane.ControlPlane
	srv    *httptest.Server
	client *http.Client
	db     string // /api/databases/{id}
	mem    string // /api/memory/{id}
	next   int    // the next new key of a put, across -count runs
}

// newEnv builds the control plane on engine (a SQLite data directory, or
// PostgreSQL for the metadata). When the assembly does not mount the
// memory routes yet, they are mounted beside its own with the same
// authenticator, observer and key-call counter.
func newEnv(b *testing.B, engine string) *env {
	b.Helper()
	cfg := controlplane.Config{DataDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler),
		Bootstrap: accounts.BootstrapConfig{WorkspaceName: "bench", OwnerEmail: "bench@example.com", Plan: plans.Scale, Key: ownerKey}}
	if engine == "postgres" {
		cfg.Store = pgtest.MigratedDSN(b)
	}
	cp, err := controlplane.New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	lim := cp.Databases().Limits()
	lim.RequestsPerWindow = 1 << 30 // far more than 600 requests in 5 minutes
	if err := cp.Databases().SetLimits(lim); err != nil {
		b.Fatal(err)
	}
	handler := cp.Handler()
	if !slices.ContainsFunc(cp.Routes(), func(r api.Route) bool { return r.Path == "/api/memory/{id}/keys/{key...}" }) {
		svc, err := memory.New(memory.Config{}, memory.Deps{DB: cp.DB, Clock: cp.Config().Clock, Meter: cp.Meter, Jobs: cp.Jobs,
			Projects: cp.Projects, Plans: cp.Accounts, Audit: cp.Audit, Logger: cfg.Logger})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { svc.Close() })
		mux := http.NewServeMux()
		api.Mount(mux, append(slices.Clone(cp.Routes()), memory.Routes(memory.Handlers{S: svc})...),
			api.MountOptions{Authn: cp.Accounts, Log: cfg.Logger, Observer: cp.Metrics(), Calls: cp.KeyCalls()})
		handler = mux
	}
	e := &env{cp: cp, srv: httptest.NewServer(handler)}
	e.client = e.srv.Client()
	b.Cleanup(func() { e.srv.Close(); cp.Close() })
	var project struct {
		Project struct{ ID string } `json:"project"`
	}
	e.json(b, "POST", "/api/projects", map[string]any{"name": "bench"}, &project)
	var db struct {
		Database struct{ ID string } `json:"database"`
	}
	e.json(b, "POST", "/api/projects/"+project.Project.ID+"/databases", map[string]any{"name": "kv"}, &db)
	e.db = "/api/databases/" + db.Database.ID
	e.json(b, "POST", e.db, map[string]any{"sql": `CREATE TABLE kv(k TEXT PRIMARY KEY, v TEXT NOT NULL);
		WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
		INSERT INTO kv(k, v) SELECT printf('k%05d', i), 'value ' || i FROM n`}, nil)
	var st memory.StoreAnswer
	e.json(b, "POST", "/api/projects/"+project.Project.ID+"/memory", map[string]any{"name": "kv"}, &st)
	e.mem = "/api/memory/" + st.Store.ID
	for start := 0; start < rows; start += memory.MaxBulkKeys {
		entries := make([]memory.Entry, 0, memory.MaxBulkKeys)
		for i := start; i < start+memory.MaxBulkKeys; i++ {
			entries = append(entries, memory.Entry{Key: fmt.Sprintf("k%05d", i), Value: fmt.Sprint("value ", i)})
		}
		e.json(b, "PUT", e.mem+"/bulk", memory.BulkPutRequest{Entries: entries}, nil)
	}
	return e
}

// json sends body as JSON and decodes the answer into out.
func (e *env) json(b *testing.B, method, path string, body, out any) {
	b.Helper()
	data, _ := json.Marshal(body)
	status, raw := e.do(b, method, path, data)
	if status/100 != 2 {
		b.Fatalf("%s %s: %d %s", method, path, status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.Fatal(err)
		}
	}
}

// do sends one request with the owner's key and reads the answer whole.
func (e *env) do(b *testing.B, method, path string, body []byte) (int, []byte) {
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+ownerKey)
	resp, err := e.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// memoryGet reads key i from the store.
func (e *env) memoryGet(b *testing.B, i int) {
	status, body := e.do(b, "GET", fmt.Sprintf("%s/keys/k%05d", e.mem, i), nil)
	if status != http.StatusOK || string(body) != fmt.Sprint("value ", i) {
		b.Fatalf("key %d: %d %q", i, status, body)
	}
}

// databaseGet reads key i from the database by primary key.
func (e *env) databaseGet(b *testing.B, i int) {
	status, body := e.do(b, "POST", e.db, fmt.Appendf(nil, `{"sql":"SELECT v FROM kv WHERE k = ?","params":["k%05d"]}`, i))
	if status != http.StatusOK || !bytes.Contains(body, fmt.Appendf(nil, `"value %d"`, i)) {
		b.Fatalf("row %d: %d %s", i, status, body)
	}
}

// BenchmarkGet: a memory store's get against a database's point read
// (SELECT by primary key), each through the API, one request at a time
// and from parallel clients, on SQLite and on PostgreSQL metadata.
func BenchmarkGet(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			e := newEnv(b, engine)
			for _, side := range []struct {
				name string
				get  func(b *testing.B, i int)
			}{{"memory", e.memoryGet}, {"database", e.databaseGet}} {
				b.Run(side.name, func(b *testing.B) {
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						side.get(b, i%rows)
						i += 7919 // a prime: keys all over the table
					}
				})
				b.Run(side.name+"-parallel", func(b *testing.B) {
					b.ReportAllocs()
					b.RunParallel(func(pb *testing.PB) {
						i := 0
						for pb.Next() {
							side.get(b, i%rows)
							i += 7919
						}
					})
				})
			}
		})
	}
}

// BenchmarkPut: a memory store's put of a new key against a database's
// single-row INSERT, each one committed transaction through the API.
func BenchmarkPut(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			e := newEnv(b, engine)
			b.Run("memory", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if status, body := e.do(b, "PUT", fmt.Sprintf("%s/keys/new%08d", e.mem, e.next), []byte("inserted")); status != http.StatusOK {
						b.Fatalf("%d %s", status, body)
					}
					e.next++
				}
			})
			b.Run("database", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					body := fmt.Appendf(nil, `{"sql":"INSERT INTO kv(k, v) VALUES (?, 'inserted')","params":["new%08d"]}`, e.next)
					if status, out := e.do(b, "POST", e.db, body); status != http.StatusOK {
						b.Fatalf("%d %s", status, out)
					}
					e.next++
				}
			})
		})
	}
}
