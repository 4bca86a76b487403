package mail

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/internal/areatest"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/metering"
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
	_ Projects               = (*projects.Service)(nil)
	_ metering.BatchRecorder = (*metering.Meter)(nil)
)

var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

// fixture is the area on a fresh store with a file or relay transport,
// its routes mounted on a test server.
type fixture struct {
	t      *testing.T
	db     *store.DB
	clk    *clock.Fake
	runner *jobs.Runner
	meter  *metering.Meter
	sealer *seal.Sealer
	prj    *fakeProjects
	svc    *Service
	srv    *httptest.Server
	dir    string
	logs   *bytes.Buffer
}

// newFixture builds the area with cfg over a fresh store of engine e; an
// empty cfg.SMTPURL writes messages to a temporary folder.
func newFixture(t *testing.T, e pgtest.Engine, cfg Config) *fixture {
	t.Helper()
	f := &fixture{t: t, db: e.Open(t), clk: clock.NewFake(t0), logs: &bytes.Buffer{}}
	f.meter = metering.New(f.db, f.clk)
	var err error
	if f.runner, err = jobs.New(jobs.Config{}, jobs.Deps{DB: f.db, Clock: f.clk, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.runner.Close() })
	if f.sealer, err = seal.New(bytes.Repeat([]byte{7}, 32)); err != nil {
		t.Fatal(err)
	}
	f.prj = areatest.StandardProjects()
	if cfg.SMTPURL == "" && cfg.Dir == "" {
		f.dir = t.TempDir()
		cfg.Dir = f.dir
	}
	if cfg.From == "" {
		cfg.From = "Platform <noreply@platform.test>"
	}
	if cfg.DKIMKeyBits == 0 {
		cfg.DKIMKeyBits = 1024 // fast to make; real domains get DefaultDKIMKeyBits
	}
	var lmu sync.Mutex
	f.svc, err = New(cfg, Deps{DB: f.db, Clock: f.clk, Sealer: f.sealer, Meter: f.meter, Jobs: f.runner, Projects: f.prj,
		Plans: areatest.StandardPlans(), Logger: slog.New(slog.NewTextHandler(lockedWriter{&lmu, f.logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	api.Mount(mux, Routes(Handlers{S: f.svc}), api.MountOptions{Authn: callers})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
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

// response is an answer of the test server.
type response = areatest.Response

// call sends a request as key; body is sent as is when it is a string or
// []byte, as JSON otherwise. header is name, value pairs.
func (f *fixture) call(key, method, path string, body any, header ...string) response {
	f.t.Helper()
	return areatest.Call(f.t, f.srv, key, method, path, body, header...)
}

// must calls and fails the test unless the status is want.
func (f *fixture) must(want int, key, method, path string, body any, header ...string) response {
	f.t.Helper()
	return areatest.Must(f.t, want, f.srv, key, method, path, body, header...)
}

// send queues a message of prj_a as dev and returns it.
func (f *fixture) send(req map[string]any) Email {
	f.t.Helper()
	var a EmailAnswer
	f.must(http.StatusAccepted, "dev", "POST", "/api/projects/prj_a/emails", req).Decode(f.t, &a)
	return a.Email
}

// runDue runs the jobs due now.
func (f *fixture) runDue() {
	f.t.Helper()
	if _, err := f.runner.RunDue(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

// email reads a message of prj_a as the viewer.
func (f *fixture) email(id string) Email {
	f.t.Helper()
	var a EmailAnswer
	f.must(http.StatusOK, "viewer", "GET", "/api/projects/prj_a/emails/"+id, nil).Decode(f.t, &a)
	return a.Email
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
