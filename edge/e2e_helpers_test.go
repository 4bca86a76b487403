package edge

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/geodata"
)

// The end-to-end tests run a real control plane (cptest, on a socket) and
// a real edge on 127.0.0.1 syncing from it over the edge protocol. Sites
// are made through the API: a project, a repo, a push and a deploy.

// realGeo is the country database fetched by `make geodata`, opened once.
var realGeo = sync.OnceValues(func() (geodata.Locator, string) {
	path := os.Getenv("PLATFORM_GEOIP")
	if path == "" {
		return nil, "PLATFORM_GEOIP is not set (make test sets it after `make geodata`)"
	}
	if _, err := os.Stat(path); err != nil {
		return nil, "country database " + path + " is absent: run `make geodata`"
	}
	db, err := geodata.Open(geodata.Config{CountryDB: path, NoReload: true}, quiet)
	if err != nil {
		return nil, "country database " + path + ": " + err.Error()
	}
	return db, ""
})

// needGeo skips a test that needs real country data when the database is
// absent.
func needGeo(t *testing.T) geodata.Locator {
	t.Helper()
	loc, why := realGeo()
	if loc == nil {
		t.Skip("skipping country-rule case: " + why)
	}
	return loc
}

// harness is a control plane and an edge.
type harness struct {
	t       *testing.T
	env     *cptest.Env
	edge    *Edge
	cfg     Config
	cancel  context.CancelFunc
	done    chan error
	https   string // 127.0.0.1:port
	http    string
	client  *http.Client // HTTPS, trusting the local CA, every host dialled at the edge
	h3      *http3.Transport
	h3c     *http.Client
	stopped bool
}

type harnessOpt func(*Config)

// newHarness starts a control plane and an edge that syncs from it as a
// remote edge would (blobs fetched over HTTP), trusting 127.0.0.1 as a
// proxy so tests can name any client address in X-Forwarded-For.
func newHarness(t *testing.T, opts ...harnessOpt) *harness {
	t.Helper()
	env := cptest.New(t)
	tok, _, err := env.CP.EdgeSync().MintToken(context.Background(), "test edge")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0", AppsDomain: "apps.test", DataDir: t.TempDir(),
		ControlPlane: env.Server.URL, Token: tok, TrustedProxies: []string{"127.0.0.1/32", "::1/128"},
		Now: env.Clock.Now, Logger: quiet, FlushInterval: 100 * time.Millisecond, SyncWait: 10 * time.Second,
		Locator: fixedLocator{'U', 'S'},
	}
	if loc, _ := realGeo(); loc != nil {
		cfg.Locator = loc
	}
	for _, o := range opts {
		o(&cfg)
	}
	h := &harness{t: t, env: env, cfg: cfg}
	h.start()
	t.Cleanup(h.stop)
	return h
}

// start runs an edge with h.cfg and waits until it is ready.
func (h *harness) start() {
	t := h.t
	t.Helper()
	e, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Listen(); err != nil {
		t.Fatal(err)
	}
	h.edge, h.https, h.http = e, e.HTTPSAddr().String(), e.HTTPAddr().String()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done, h.stopped = cancel, make(chan error, 1), false
	go func() { h.done <- e.Run(ctx) }()
	roots := e.CA().Pool()
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, h.https)
	}
	h.client = &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DialContext: dial, DisableCompression: true,
			MaxIdleConnsPerHost: 64},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}
	udp := h.https
	h.h3 = &http3.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots},
		Dial: func(ctx context.Context, _ string, tlsCfg *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			return quic.DialAddrEarly(ctx, udp, tlsCfg, qc)
		},
	}
	h.h3c = &http.Client{Transport: h.h3, Timeout: 30 * time.Second}
	h.waitReady()
}

// stop stops the edge (flushing its counts).
func (h *harness) stop() {
	if h.stopped {
		return
	}
	h.stopped = true
	h.client.CloseIdleConnections() // else a graceful shutdown waits for them
	h.h3.Close()
	h.cancel()
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("edge run: %v", err)
		}
	case <-time.After(20 * time.Second):
		h.t.Error("edge did not stop")
	}
}

func (h *harness) waitReady() {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !h.edge.Ready() {
		if time.Now().After(deadline) {
			h.t.Fatal("edge not ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// synced waits until the edge serves the control plane's current version.
func (h *harness) synced() {
	h.t.Helper()
	want := h.env.CP.EdgeSync().Version()
	deadline := time.Now().Add(15 * time.Second)
	for h.edge.Version() < want {
		if time.Now().After(deadline) {
			h.t.Fatalf("edge at version %d, control plane at %d", h.edge.Version(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// response is a read answer.
type response struct {
	status int
	header http.Header
	body   string
	proto  string
	tls    *tls.ConnectionState
}

func read(t *testing.T, resp *http.Response, err error) *response {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: string(b), proto: resp.Proto, tls: resp.TLS}
}

// get sends a GET over HTTPS to host with extra header lines ("Name: value").
func (h *harness) get(host, path string, header ...string) *response {
	h.t.Helper()
	return h.do("GET", host, path, nil, header...)
}

func (h *harness) do(method, host, path string, body io.Reader, header ...string) *response {
	h.t.Helper()
	req, err := http.NewRequest(method, "https://"+host+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, l := range header {
		k, v, _ := strings.Cut(l, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	resp, err := h.client.Do(req)
	return read(h.t, resp, err)
}

// testSite is a project with a repo.
type testSite struct {
	h       *harness
	name    string
	host    string
	project string
	repo    string
}

// newSite creates a project and a repo named name.
func (h *harness) newSite(name string) *testSite {
	h.t.Helper()
	s := &testSite{h: h, name: name, project: h.env.CreateProject(name)}
	var out struct {
		Repo struct{ ID string } `json:"repo"`
	}
	h.env.Owner.Must(201, "POST", "/api/repos", map[string]any{"name": name}).JSON(h.t, &out)
	s.repo = out.Repo.ID
	s.host = name + ".apps.test" // names in these tests are their own slugs
	return s
}

// deploy pushes files (path -> content) and deploys them, then waits for
// the edge to apply the change. It returns the deployment id.
func (s *testSite) deploy(files map[string]string) string {
	t := s.h.t
	t.Helper()
	var list []map[string]any
	for p, c := range files {
		list = append(list, map[string]any{"path": p, "content": c})
	}
	var c struct {
		Commit struct{ Number int } `json:"commit"`
	}
	s.h.env.Owner.Must(201, "POST", "/api/repos/"+s.repo+"/commits", map[string]any{"message": "m", "files": list}).JSON(t, &c)
	var d struct {
		Deployment struct{ ID string } `json:"deployment"`
	}
	s.h.env.Owner.Must(202, "POST", "/api/repos/"+s.repo+"/deploy", map[string]any{"projectId": s.project, "commit": c.Commit.Number}).JSON(t, &d)
	s.h.env.CP.Deploys().Wait()
	var detail struct {
		Deployment struct {
			State string `json:"state"`
			Error string `json:"error"`
		} `json:"deployment"`
	}
	s.h.env.Owner.Must(200, "GET", "/api/deployments/"+d.Deployment.ID, nil).JSON(t, &detail)
	if detail.Deployment.State != "live" {
		t.Fatalf("deployment %s: state %s: %s", d.Deployment.ID, detail.Deployment.State, detail.Deployment.Error)
	}
	s.h.synced()
	return d.Deployment.ID
}

// deployOrigin deploys an app or function forwarding to origin.
func (s *testSite) deployOrigin(kind, origin string) string {
	return s.deploy(map[string]string{"platform.json": fmt.Sprintf(`{"kind":%q,"origin":%q}`, kind, origin)})
}

// shield saves Shield settings (merged over the saved ones) and waits for
// the edge.
func (h *harness) shield(settings map[string]any) {
	h.t.Helper()
	h.env.Owner.Must(200, "PUT", "/api/services/shield", settings)
	h.synced()
}

// blocks reads GET /api/services/shield/blocks.
func (h *harness) blocks() map[string]any {
	h.t.Helper()
	var out map[string]any
	h.env.Owner.Must(200, "GET", "/api/services/shield/blocks?days=7", nil).JSON(h.t, &out)
	return out
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
