package deploys_test

import (
	"context"
	"testing"
	"time"

	"github.com/svcplatform/platform/runtime/supervise"
)

// TestAppRunSeconds: the usage report's app_run_seconds is the running
// time of the project's server app on the platform's clock: counted while
// it runs, not while it sleeps, each flush counted once, and the last
// seconds of a replaced deployment counted when it stops.
func TestAppRunSeconds(t *testing.T) {
	bin, _ := artifacts(t)
	env := newRuntimeEnv(t, "")
	s := newSite(t, env.Env, "Metered")
	c := s.pushFiles(t, map[string]string{"platform.json": `{"kind":"app","run":["./server"],"health":"/health"}`}, map[string][]byte{"server": bin})
	d := s.deployRT(t, c)
	if d.Deployment.State != "live" {
		t.Fatalf("%+v\n%s", d.Deployment, d.text())
	}
	id := d.Deployment.ID
	ctx := context.Background()
	dps := env.CP.Deploys()
	report := func(t *testing.T) float64 {
		t.Helper()
		var r struct{ Totals map[string]float64 }
		env.Owner.Must(200, "GET", "/api/usage?period=7d&project="+s.project, nil).JSON(t, &r)
		v, ok := r.Totals["app_run_seconds"]
		if !ok {
			t.Fatalf("no app_run_seconds in %v", r.Totals)
		}
		return v
	}
	steps := []struct {
		name string
		do   func(t *testing.T)
		want float64
	}{
		{"running", func(*testing.T) { env.Clock.Advance(90 * time.Second) }, 90},
		{"a second flush adds nothing", func(*testing.T) {}, 90},
		{"asleep does not count", func(t *testing.T) {
			env.Clock.Advance(testIdle) // idle since it became healthy: 90 s + testIdle
			if n := env.eng.Reap(ctx); n != 1 {
				t.Fatalf("reaped %d", n)
			}
			waitState(t, env.eng.Supervisor(), id, func(st supervise.Status) bool { return st.State == supervise.StateIdle })
			env.Clock.Advance(5 * time.Hour)
		}, 90 + testIdle.Seconds()},
		{"woken by a request, then replaced and drained", func(t *testing.T) {
			mustGet(t, s.origin(t).Origin+"/env?k=SERVICE_PROJECT_ID", s.project)
			env.Clock.Advance(20 * time.Second)
			if d2 := s.deployRT(t, c); d2.Deployment.State != "live" { // the new one starts at +20 s
				t.Fatalf("%+v", d2.Deployment)
			}
			env.Clock.Advance(testDrain) // both run during the drain
			env.eng.Reap(ctx)            // the old one stops
		}, 90 + testIdle.Seconds() + 20 + 2*testDrain.Seconds()},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do(t)
			if err := dps.FlushRunTime(ctx); err != nil {
				t.Fatal(err)
			}
			if got := report(t); got != st.want {
				t.Fatalf("app_run_seconds %v, want %v", got, st.want)
			}
		})
	}
}
