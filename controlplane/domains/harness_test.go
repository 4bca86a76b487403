package domains

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/certs"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/internal/areatest"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"github.com/svcplatform/platform/controlplane/usage"
	"github.com/svcplatform/platform/internal/dnstest"
	"github.com/svcplatform/platform/rules"
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
	_ Projects        = (*projects.Service)(nil)
	_ Publisher       = (*edgesync.Service)(nil)
	_ Certificates    = (*certs.Service)(nil)
	_ usage.Source    = (*Service)(nil)
	_ api.HandlerFunc = Handlers{}.Add
)

var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

// The apps domain of the tests and the edge address apex domains point at.
const (
	appsDomain = "apps.test"
	edgeAddr   = "192.0.2.10"
)

// fixture is the area on a fresh store with a real edge sync service (its
// sites: every project of fakeProjects) and a test DNS server.
type fixture struct {
	t      *testing.T
	db     *store.DB
	clk    *clock.Fake
	runner *jobs.Runner
	prj    *fakeProjects
	sync   *edgesync.Service
	dns    *dnstest.Server
	svc    *Service
	srv    *httptest.Server
}

func newFixture(t *testing.T, e pgtest.Engine, cfg Config) *fixture {
	t.Helper()
	return newFixtureWith(t, e, cfg, nil)
}

// newFixtureWith is newFixture with an Obtainer of certificates.
func newFixtureWith(t *testing.T, e pgtest.Engine, cfg Config, obt CertObtainer) *fixture {
	t.Helper()
	f := &fixture{t: t, db: e.Open(t), clk: clock.NewFake(t0), dns: dnstest.Start(t)}
	quiet := slog.New(slog.DiscardHandler)
	var err error
	if f.runner, err = jobs.New(jobs.Config{}, jobs.Deps{DB: f.db, Clock: f.clk, Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.runner.Close() })
	f.prj = areatest.StandardProjects()
	sealer, err := seal.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	if f.sync, err = edgesync.New(context.Background(), edgesync.Config{AppsDomain: appsDomain}, edgesync.Deps{DB: f.db, Sealer: sealer,
		Clock: f.clk, Logger: quiet, Sources: f.sources()}); err != nil {
		t.Fatal(err)
	}
	cfg.AppsDomain = appsDomain
	cfg.DNSResolver = f.dns.Addr
	if cfg.EdgeAddresses == nil {
		cfg.EdgeAddresses = []string{edgeAddr}
	}
	if f.svc, err = New(cfg, Deps{DB: f.db, Clock: f.clk, Jobs: f.runner, Projects: f.prj, Pub: f.sync, Obtainer: obt, Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	// The site addresses resolve to the edge, as the apps domain's
	// wildcard record does.
	for _, p := range f.prj.All() {
		f.dns.Addrs(p.Slug+"."+appsDomain, edgeAddr)
	}
	mux := http.NewServeMux()
	api.Mount(mux, Routes(Handlers{S: f.svc}), api.MountOptions{Authn: callers})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// sources serve every project of fakeProjects as a static site, and the
// domains of the store (EdgeDomains).
func (f *fixture) sources() edgesync.Sources {
	return edgesync.Sources{
		Sites: func(context.Context, store.Querier) ([]snapshot.Site, error) {
			var out []snapshot.Site
			for _, p := range f.prj.All() {
				out = append(out, snapshot.Site{ProjectID: p.ID, Deployment: snapshot.Deployment{ID: "dpl_" + p.ID, Kind: snapshot.KindStatic}})
			}
			return out, nil
		},
		Projects: func(context.Context, store.Querier) (map[string]edgesync.ProjectRef, error) {
			out := map[string]edgesync.ProjectRef{}
			for _, p := range f.prj.All() {
				out[p.ID] = edgesync.ProjectRef{Workspace: p.WorkspaceID, Slug: p.Slug}
			}
			return out, nil
		},
		Project: func(context.Context, store.Querier, string) (edgesync.ProjectRef, bool, error) {
			return edgesync.ProjectRef{}, false, nil
		},
		ServingKind: func(context.Context, store.Querier, string) (string, error) { return snapshot.KindStatic, nil },
		Served:      func(context.Context, store.Querier, string) (bool, error) { return false, nil },
		Workspaces:  func(context.Context, store.Querier) ([]string, error) { return []string{"ws_a", "ws_b"}, nil },
		Shield:      func(context.Context, store.Querier) (map[string]rules.Settings, error) { return nil, nil },
		Passwords:   func(context.Context, store.Querier) (map[string]string, error) { return nil, nil },
		CDN:         func(context.Context, store.Querier) (map[string]snapshot.CDN, error) { return nil, nil },
		Domains:     EdgeDomains,
	}
}

// edgeHosts are the custom hosts of the current snapshot, with their
// redirect: "host" or "host>target".
func (f *fixture) edgeHosts() []string {
	f.t.Helper()
	snap, err := f.sync.Snapshot(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	out := []string{}
	for _, d := range snap.Domains {
		h := d.Host
		if d.RedirectTo != "" {
			h += ">" + d.RedirectTo
		}
		out = append(out, h)
	}
	return out
}

// response is an answer of the test server.
type response = areatest.Response

// call sends a request as key; body is sent as is when it is a string or
// []byte, as JSON otherwise.
func (f *fixture) call(key, method, path string, body any) response {
	f.t.Helper()
	return areatest.Call(f.t, f.srv, key, method, path, body)
}

// must calls and fails the test unless the status is want.
func (f *fixture) must(want int, key, method, path string, body any) response {
	f.t.Helper()
	return areatest.Must(f.t, want, f.srv, key, method, path, body)
}

// add adds name (with redirect, "" for none) to project as dev.
func (f *fixture) add(project, name, redirect string) CustomDomain {
	f.t.Helper()
	body := map[string]any{"name": name}
	if redirect != "" {
		body["redirect"] = redirect
	}
	var a CustomDomainAnswer
	f.must(http.StatusCreated, "dev", "POST", "/api/projects/"+project+"/domains", body).Decode(f.t, &a)
	return a.Domain
}

// verify verifies a domain as key, expecting want.
func (f *fixture) verify(key, id string, want int) CustomDomain {
	f.t.Helper()
	var a CustomDomainAnswer
	r := f.must(want, key, "POST", "/api/domains/"+id+"/verify", nil)
	if want == http.StatusOK {
		r.Decode(f.t, &a)
	}
	return a.Domain
}

// publish publishes d's records in the test DNS as asked.
func (f *fixture) publish(d CustomDomain) {
	f.t.Helper()
	for _, r := range d.Records {
		switch r.Type {
		case "TXT":
			f.dns.TXT(r.Name, r.Value)
		case "CNAME":
			f.dns.CNAME(r.Name, r.Value)
		case "A", "AAAA":
			f.dns.Addrs(r.Name, r.Value)
		}
	}
}

func (f *fixture) runDue() {
	f.t.Helper()
	if _, err := f.runner.RunDue(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}
