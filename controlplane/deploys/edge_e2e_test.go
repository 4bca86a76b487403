package deploys_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/edge"
	"github.com/svcplatform/platform/geodata"
	"github.com/svcplatform/platform/runtime/supervise"
)

// fixtureGeo is geodata's committed country database (8.8.8.0/24 US,
// 193.99.144.0/20 DE).
var fixtureGeo = filepath.Join("..", "..", "geodata", "testdata", "country-geoip2.mmdb")

// edgeEnv is a control plane with a runtime and a real edge syncing from
// it over the edge protocol with an edge token, as `platform serve` runs it.
type edgeEnv struct {
	rtEnv
	ed     *edge.Edge
	client *http.Client
}

func newEdgeEnv(t *testing.T) *edgeEnv {
	t.Helper()
	env := newRuntimeEnv(t, "")
	quiet := slog.New(slog.DiscardHandler)
	tok, err := env.CP.EdgeSync().EnsureLocalToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	loc, err := geodata.Open(geodata.Config{CountryDB: fixtureGeo, NoReload: true}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = loc.Close() })
	ed, err := edge.New(edge.Config{
		HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0", AppsDomain: "apps.test", DataDir: t.TempDir(),
		ControlPlane: env.Server.URL, Token: tok, Locator: loc, Logger: quiet, SyncWait: 10 * time.Second,
		// The test names visitors' addresses in X-Forwarded-For.
		TrustedProxies: []string{"127.0.0.1/32"},
		// Pooled connections to an app's front count as activity: let
		// them go at once here (the default keep-alive, seconds, is far
		// below the 15 min idle timeout).
		OriginKeepAlive: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ed.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ed.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("edge: %v", err)
		}
	})
	addr := ed.HTTPSAddr().String()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: ed.CA().Pool()},
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	e := &edgeEnv{rtEnv: env, ed: ed, client: client}
	e.synced(t)
	return e
}

// synced waits until the edge serves the control plane's configuration.
func (e *edgeEnv) synced(t *testing.T) {
	t.Helper()
	want := e.CP.EdgeSync().Version()
	deadline := time.Now().Add(15 * time.Second)
	for !e.ed.Ready() || e.ed.Version() < want {
		if time.Now().After(deadline) {
			t.Fatalf("edge at version %d, control plane at %d", e.ed.Version(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// get fetches https://host/path through the edge, from the visitor
// address from ("" for the test's own).
func (e *edgeEnv) get(t *testing.T, host, path, from string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "https://"+host+path, nil)
	if from != "" {
		req.Header.Set("X-Forwarded-For", from)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("GET https://%s%s: %v", host, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestThroughTheEdge is issue 17's proof over the real edge (HTTPS, the
// edge protocol, an edge token): an app deployed from a commit answers
// through the edge; idled to zero, the country rules refuse a blocked
// visitor without waking it and an allowed visitor's request wakes it; a
// wasm function answers through the edge, and one that loops forever is
// stopped at its limit and the edge answers 504.
func TestThroughTheEdge(t *testing.T) {
	bin, mod := artifacts(t)
	e := newEdgeEnv(t)
	app := newSite(t, e.Env, "edgeapp")
	setVar(t, e.Env, app.project, "GREETING", "through the edge")
	c := app.pushFiles(t, map[string]string{"platform.json": `{"kind":"app","run":["./server"],"health":"/health"}`}, map[string][]byte{"server": bin})
	d := app.deployRT(t, c)
	if d.Deployment.State != "live" {
		t.Fatalf("%+v\n%s", d.Deployment, d.text())
	}
	e.synced(t)
	const host = "edgeapp.apps.test"
	const us, de = "8.8.8.8", "193.99.144.10"
	sup := e.eng.Supervisor()
	id := d.Deployment.ID

	t.Run("app through the edge", func(t *testing.T) {
		for _, tc := range []struct{ path, want string }{
			{"/env?k=SERVICE_PROJECT_ID", app.project},
			{"/env?k=GREETING", "through the edge"},
		} {
			if code, body := e.get(t, host, tc.path, us); code != 200 || body != tc.want {
				t.Fatalf("%s: %d %q, want %q", tc.path, code, body, tc.want)
			}
		}
	})
	t.Run("scale to zero, country rules before the wake, woken by an edge request", func(t *testing.T) {
		waitState(t, sup, id, func(st supervise.Status) bool { return st.Active == 0 }) // the edge's pooled connection is gone
		e.Clock.Advance(testIdle + time.Minute)
		if n := e.eng.Reap(context.Background()); n != 1 {
			t.Fatalf("reaped %d, want the idle app", n)
		}
		waitState(t, sup, id, func(st supervise.Status) bool { return st.State == supervise.StateIdle && st.PID == 0 })

		e.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"blockedCountries": []string{"DE"}})
		e.synced(t)
		if code, body := e.get(t, host, "/env?k=SERVICE_PROJECT_ID", de); code != 403 || !strings.Contains(body, "Not available in your region") {
			t.Fatalf("blocked visitor: %d %q", code, body)
		}
		if st, _ := sup.Status(id); st.State != supervise.StateIdle || st.Restarts != 0 {
			t.Fatalf("a refused visitor woke the app: %+v", st)
		}
		if code, body := e.get(t, host, "/env?k=SERVICE_PROJECT_ID", us); code != 200 || body != app.project {
			t.Fatalf("wake through the edge: %d %q", code, body)
		}
		if st, _ := sup.Status(id); st.State != supervise.StateHealthy || st.PID == 0 {
			t.Fatalf("after the wake: %+v", st)
		}
		if !strings.Contains(app.detail(t, id).text(), "waking for a request") {
			t.Fatalf("output lacks the wake:\n%s", app.detail(t, id).text())
		}
	})

	fn := newSite(t, e.Env, "edgefn")
	cf := fn.pushFiles(t, map[string]string{"platform.json": `{"kind":"function","module":"fn.wasm"}`}, map[string][]byte{"fn.wasm": mod})
	fd := fn.deployRT(t, cf)
	if fd.Deployment.State != "live" {
		t.Fatalf("%+v\n%s", fd.Deployment, fd.text())
	}
	e.synced(t)
	t.Run("function through the edge", func(t *testing.T) {
		for _, tc := range []struct {
			name, path, from string
			code             int
			body             string
		}{
			{"call", "/hello", us, 200, "hello from " + fn.project + "\n"},
			{"looping function stopped at its limit", "/loop", us, http.StatusGatewayTimeout, ""},
			{"country rules before the function runs", "/hello", de, 403, "Not available in your region"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, body := e.get(t, "edgefn.apps.test", tc.path, tc.from)
				if code != tc.code || !strings.Contains(body, tc.body) {
					t.Fatalf("%d %.80q, want %d %q; the function's output:\n%s", code, body, tc.code, tc.body, fn.detail(t, fd.Deployment.ID).text())
				}
			})
		}
	})
}
