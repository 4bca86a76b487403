package buckets

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/internal/areatest"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The tests' world and callers are areatest's (ws_a on hobby with prj_a,
// prj_b and prj_dead; ws_b on pro with prj_c).
type fakeProjects = areatest.Projects

var (
	eachEngine = areatest.EachEngine
	callers    = areatest.Callers
)

// The assembly's services are what the area depends on.
var (
	_ Projects = (*projects.Service)(nil)
)

// fixture is the area on a fresh store, its REST routes and its S3 surface
// each on a test server.
type fixture struct {
	t      *testing.T
	db     *store.DB
	clk    *clock.Fake
	blobs  blobs.Backend
	sealer *seal.Sealer
	prj    *fakeProjects
	plans  *areatest.Plans
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
	f.prj = areatest.StandardProjects()
	f.plans = areatest.StandardPlans()
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
type response = areatest.Response

// call sends a request as key ("" for none); a []byte, string or
// io.Reader body is sent as is, anything else as JSON. header is name,
// value pairs.
func (f *fixture) call(key, method, path string, body any, header ...string) response {
	f.t.Helper()
	return areatest.Call(f.t, f.srv, key, method, path, body, header...)
}

// must calls and fails the test unless the status is want.
func (f *fixture) must(want int, key, method, path string, body any, header ...string) response {
	f.t.Helper()
	return areatest.Must(f.t, want, f.srv, key, method, path, body, header...)
}

func (f *fixture) do(req *http.Request) response {
	f.t.Helper()
	return areatest.Send(f.t, f.srv.Client(), req)
}

// get fetches a URL (on the REST server when it starts with "/") without
// credentials.
func (f *fixture) get(rawURL string, header ...string) response {
	f.t.Helper()
	return areatest.Call(f.t, f.srv, "", http.MethodGet, rawURL, nil, header...)
}

// bucket creates a bucket in prj_a as dev.
func (f *fixture) bucket(name string, public bool) Bucket {
	f.t.Helper()
	var a BucketAnswer
	f.must(http.StatusCreated, "dev", "POST", "/api/projects/prj_a/buckets", map[string]any{"name": name, "public": public}).Decode(f.t, &a)
	return a.Bucket
}

// put stores an object through the REST API as dev.
func (f *fixture) put(bucketID, key string, data []byte, header ...string) Object {
	f.t.Helper()
	var a ObjectAnswer
	f.must(http.StatusOK, "dev", "PUT", "/api/buckets/"+bucketID+"/objects/"+keyPath(key), data, header...).Decode(f.t, &a)
	return a.Object
}

// readBucket reads a bucket as the viewer.
func (f *fixture) readBucket(id string) Bucket {
	f.t.Helper()
	var a BucketAnswer
	f.must(http.StatusOK, "viewer", "GET", "/api/buckets/"+id, nil).Decode(f.t, &a)
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
