package controlplane_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/metering"
)

// Requests are counted by route pattern and status, never by raw path.
func TestAPIMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	env := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) { c.Registerer = reg }})
	id := env.CreateProject("m")
	env.Owner.Must(http.StatusOK, "GET", "/api/projects/"+id, nil)
	env.Owner.Must(http.StatusNotFound, "GET", "/api/projects/prj_nope", nil)
	env.Owner.Must(http.StatusNotFound, "GET", "/api/no/such/thing", nil)
	env.Client("").Must(http.StatusUnauthorized, "GET", "/api/projects", nil)
	for _, tt := range []struct {
		route, code string
		want        float64
	}{
		{"GET /api/projects/{id}", "200", 1},
		{"GET /api/projects/{id}", "404", 1},
		{"POST /api/projects", "201", 1},
		{"GET /api/projects", "401", 1},
		{controlplaneNoRoute, "404", 1},
	} {
		t.Run(tt.route+" "+tt.code, func(t *testing.T) {
			if got := count(t, reg, tt.route, tt.code); got != tt.want {
				t.Fatalf("%s %s = %v, want %v", tt.route, tt.code, got, tt.want)
			}
		})
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" && (l.GetValue() == "/api/projects/"+id || l.GetValue() == "/api/no/such/thing") {
					t.Errorf("raw path as a label: %s", l.GetValue())
				}
			}
		}
	}
	if !names["platform_api_request_duration_seconds"] || !names["platform_api_requests_total"] {
		t.Fatalf("metrics registered: %v", names)
	}
}

const controlplaneNoRoute = "no_route"

// count returns platform_api_requests_total{route, code}.
func count(t *testing.T, reg *prometheus.Registry, route, code string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "platform_api_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["route"] == route && l["code"] == code {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// Every API-key call is recorded as api_key_calls, batched: counted in
// memory on the request path and written per workspace and project on a
// flush; dashboard sessions and public routes are not key calls.
func TestAPIKeyCallsMetered(t *testing.T) {
	env := cptest.New(t)
	ws := env.CP.Bootstrap.Workspace.ID
	id := env.CreateProject("k")
	prjKey := env.NewKey("full", id)
	for range 3 {
		env.Owner.Must(http.StatusOK, "GET", "/api/projects", nil)
	}
	prjKey.Must(http.StatusOK, "GET", "/api/projects/"+id, nil)
	env.Client("").Must(http.StatusOK, "GET", "/api/openapi.json", nil)
	ctx := context.Background()
	if err := env.CP.KeyCalls().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	from, to := env.Clock.Now().Add(-time.Hour), env.Clock.Now().Add(time.Hour)
	for _, tt := range []struct {
		name    string
		project string
		want    float64
	}{
		// Owner: create project, create key, 3 listings = 5 calls; the
		// project key: 1.
		{"workspace", "", 6},
		{"project key", id, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := env.CP.Meter.Total(ctx, ws, tt.project, metering.APIKeyCalls, from, to)
			if err != nil || got != tt.want {
				t.Fatalf("api_key_calls = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	// Nothing is written twice.
	if err := env.CP.KeyCalls().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := env.CP.Meter.Total(ctx, ws, "", metering.APIKeyCalls, from, to); got != 6 {
		t.Fatalf("after a second flush: %v", got)
	}
}
