package buckets

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The assembly's services are what the area depends on.
var (
	_ Projects = (*projects.Service)(nil)
	_ Plans    = (*accounts.Service)(nil)
	_ Jobs     = (*jobs.Runner)(nil)
)

// eachEngine runs fn on SQLite and on PostgreSQL.
func eachEngine(t *testing.T, fn func(t *testing.T, e pgtest.Engine)) {
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) { fn(t, e) })
	}
}

// fakeProjects is the projects area as the buckets area sees it.
type fakeProjects struct {
	mu sync.Mutex
	m  map[string]projects.Project
}

func (f *fakeProjects) Get(_ context.Context, workspace, id string) (projects.Project, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.m[id]
	if !ok || p.WorkspaceID != workspace {
		return projects.Project{}, api.NotFound("project")
	}
	return p, nil
}

func (f *fakeProjects) Writable(ctx context.Context, workspace, id string) (projects.Project, error) {
	p, err := f.Get(ctx, workspace, id)
	if err == nil && p.Status == projects.StatusTeardownFailed {
		return p, projects.ErrTeardownFailed
	}
	return p, err
}

func (f *fakeProjects) setStatus(id, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.m[id]
	p.Status = status
	f.m[id] = p
}

// fakePlans tells each workspace's plan; tests change it.
type fakePlans struct {
	mu sync.Mutex
	m  map[string]plans.Name
}

func (f *fakePlans) Plan(_ context.Context, ws string) plans.Name {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[ws]
}

// keys authenticates "Bearer <name>" as the principal of that name.
type keys map[string]*auth.Principal

func (k keys) Authenticate(r *http.Request) (*auth.Principal, error) {
	return k[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")], nil
}

// The callers of every test: workspace ws_a (hobby) with projects prj_a,
// prj_b and prj_dead (teardown_failed); ws_b (pro) with prj_c.
var callers = keys{
	"owner":    {WorkspaceID: "ws_a", MemberID: "mem_o", Role: auth.Owner, KeyID: "key_o", KeyPrefix: "svc_o"},
	"dev":      {WorkspaceID: "ws_a", MemberID: "mem_d", Role: auth.Developer, KeyID: "key_d", KeyPrefix: "svc_d"},
	"viewer":   {WorkspaceID: "ws_a", MemberID: "mem_v", Role: auth.Viewer, KeyID: "key_v", KeyPrefix: "svc_v"},
	"readonly": {WorkspaceID: "ws_a", MemberID: "mem_o", Role: auth.Owner, KeyID: "key_r", KeyPrefix: "svc_r", ReadOnly: true},
	"prjkey":   {WorkspaceID: "ws_a", MemberID: "mem_d", Role: auth.Developer, KeyID: "key_p", KeyPrefix: "svc_p", ProjectID: "prj_a"},
	"otherprj": {WorkspaceID: "ws_a", MemberID: "mem_d", Role: auth.Developer, KeyID: "key_q", KeyPrefix: "svc_q", ProjectID: "prj_b"},
	"stranger": {WorkspaceID: "ws_b", MemberID: "mem_s", Role: auth.Owner, KeyID: "key_s", KeyPrefix: "svc_s"},
}

// fixture is the area on a fresh store, its REST routes and its S3 surface
// each on a test server.
type fixture struct {
	t      *testing.T
	db     *store.DB
	clk    *clock.Fake
	blobs  blobs.Backend
	sealer *seal.Sealer
	prj    *fakeProjects
	plans  *fakePlans
	svc    *Service
	srv    *httptest.Server // REST routes and /storage
	s3     *httptest.Server // S3Handler("") at the root
	logs   *bytes.Buffer
	edge   *fakeEdge
}

// fakeEdge is edgesync's Change as the area sees it: the change in a
// transaction, counted as one publication once committed.
type fakeEdge struct {
	db        *store.DB
	mu        sync.Mutex
	published int
}

func (e *fakeEdge) Change(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := e.db.Tx(ctx, fn); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.published++
	return nil
}

// publications is how many changes reached the edges.
func (e *fakeEdge) publications() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.published
}

// newFixture builds the area with cfg over a fresh store of engine e and a
// blob store in a temporary directory; start is the fake clock's time.
func newFixture(t *testing.T, e pgtest.Engine, cfg Config, start time.Time) *fixture {
	t.Helper()
	bs, err := blobs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return newFixtureOn(t, e.Open(t), bs, cfg, start)
}

func newFixtureOn(t *testing.T, db *store.DB, bs blobs.Backend, cfg Config, start time.Time) *fixture {
	t.Helper()
	f := &fixture{t: t, db: db, clk: clock.NewFake(start), blobs: bs, logs: &bytes.Buffer{}, edge: &fakeEdge{db: db}}
	var err error
	if f.sealer, err = seal.New(bytes.Repeat([]byte{7}, 32)); err != nil {
		t.Fatal(err)
	}
	f.prj = &fakeProjects{m: map[string]projects.Project{
		"prj_a":    {ID: "prj_a", WorkspaceID: "ws_a", Name: "Shop", Status: projects.StatusActive},
		"prj_b":    {ID: "prj_b", WorkspaceID: "ws_a", Name: "Blog", Status: projects.StatusActive},
		"prj_dead": {ID: "prj_dead", WorkspaceID: "ws_a", Name: "Gone", Status: projects.StatusTeardownFailed},
		"prj_c":    {ID: "prj_c", WorkspaceID: "ws_b", Name: "Other", Status: projects.StatusActive},
	}}
	f.plans = &fakePlans{m: map[string]plans.Name{"ws_a": plans.Hobby, "ws_b": plans.Pro}}
	var lmu sync.Mutex
	f.svc, err = New(cfg, Deps{DB: f.db, Blobs: f.blobs, Sealer: f.sealer, Projects: f.prj, Plans: f.plans, Clock: f.clk,
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&lmu, f.logs}, nil)), Edge: f.edge})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	api.Mount(mux, Routes(Handlers{S: f.svc}), api.MountOptions{Authn: callers})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	f.s3 = httptest.NewServer(f.svc.S3Handler(""))
	t.Cleanup(f.s3.Close)
	return f
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// t0 is the fake clock's start in tests that do not talk to S3 clients
// (which sign with the real time).
var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

// response is an answer of a test server.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) code() string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(r.body, &e)
	return e.Error.Code
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// call sends a request as key ("" for none); a []byte or string body is
// sent as is, anything else as JSON. header is name, value pairs.
func (f *fixture) call(key, method, path string, body any, header ...string) response {
	f.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = b
	default:
		data, err := json.Marshal(b)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return f.do(req)
}

func (f *fixture) do(req *http.Request) response {
	f.t.Helper()
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// get fetches a URL without credentials.
func (f *fixture) get(rawURL string, header ...string) response {
	f.t.Helper()
	if strings.HasPrefix(rawURL, "/") {
		rawURL = f.srv.URL + rawURL
	}
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return f.do(req)
}

// must calls and fails the test unless the status is want.
func (f *fixture) must(want int, key, method, path string, body any, header ...string) response {
	f.t.Helper()
	r := f.call(key, method, path, body, header...)
	if r.status != want {
		f.t.Fatalf("%s %s as %s: status %d, want %d: %s", method, path, key, r.status, want, r.body)
	}
	return r
}

// bucket creates a bucket in prj_a as dev.
func (f *fixture) bucket(name string, public bool) Bucket {
	f.t.Helper()
	var a BucketAnswer
	f.must(http.StatusCreated, "dev", "POST", "/api/projects/prj_a/buckets", map[string]any{"name": name, "public": public}).decode(f.t, &a)
	return a.Bucket
}

// put stores an object through the REST API as dev.
func (f *fixture) put(bucketID, key string, data []byte, header ...string) Object {
	f.t.Helper()
	var a ObjectAnswer
	f.must(http.StatusOK, "dev", "PUT", "/api/buckets/"+bucketID+"/objects/"+keyPath(key), data, header...).decode(f.t, &a)
	return a.Object
}

// readBucket reads a bucket as the viewer.
func (f *fixture) readBucket(id string) Bucket {
	f.t.Helper()
	var a BucketAnswer
	f.must(http.StatusOK, "viewer", "GET", "/api/buckets/"+id, nil).decode(f.t, &a)
	return a.Bucket
}

// count counts the rows of a table.
func (f *fixture) count(table string) int {
	f.t.Helper()
	var n int
	if err := f.db.QueryRowContext(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// blobCount counts the blobs the store holds.
func (f *fixture) blobCount() int {
	f.t.Helper()
	n := 0
	if err := f.blobs.List(context.Background(), func(blobs.Info) error { n++; return nil }); err != nil {
		f.t.Fatal(err)
	}
	return n
}
