package cdn_test

import (
	"context"
	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"testing"

	"github.com/svcplatform/platform/controlplane/cdn"
	"github.com/svcplatform/platform/controlplane/cptest"
)

func TestCDNSettings(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			var got cdn.Answer
			env.Owner.Must(200, "GET", "/api/services/cdn", nil).JSON(t, &got)
			if !got.Enabled || got.CacheTTLSeconds != 3600 {
				t.Fatalf("defaults: %+v", got)
			}
			v := env.CP.EdgeSync().Version()
			env.Owner.Must(200, "PUT", "/api/services/cdn", map[string]any{"cacheTtlSeconds": 0}).JSON(t, &got)
			if !got.Enabled || got.CacheTTLSeconds != 0 || got.Note == "" {
				t.Fatalf("ttl 0: %+v", got)
			}
			env.Owner.Must(200, "PUT", "/api/services/cdn", map[string]any{"enabled": false}).JSON(t, &got)
			if got.Enabled || got.CacheTTLSeconds != 0 {
				t.Fatalf("merge: %+v", got)
			}
			snap, err := env.CP.EdgeSync().Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if snap.Version <= v || snap.Workspaces[0].CDN.Enabled || snap.Workspaces[0].CDN.CacheTTLSeconds != 0 {
				t.Fatalf("snapshot: version %d (was %d) %+v", snap.Version, v, snap.Workspaces)
			}

			refusals := []struct{ name, body, code string }{
				{"negative", `{"cacheTtlSeconds":-1}`, "invalid_setting"},
				{"fraction", `{"cacheTtlSeconds":1.5}`, "invalid_setting"},
				{"exponent", `{"cacheTtlSeconds":1e3}`, "invalid_setting"},
				{"string", `{"cacheTtlSeconds":"60"}`, "invalid_setting"},
				{"null", `{"cacheTtlSeconds":null}`, "invalid_setting"},
				{"over a year", `{"cacheTtlSeconds":31536001}`, "invalid_setting"},
				{"enabled not boolean", `{"enabled":1}`, "invalid_request"},
				{"unknown field", `{"ttl":60}`, "unknown_field"},
				{"empty body", ``, "invalid_request"},
			}
			for _, tt := range refusals {
				t.Run(tt.name, func(t *testing.T) {
					r := env.Owner.Do("PUT", "/api/services/cdn", tt.body)
					if r.Status != 400 || r.ErrorCode() != tt.code {
						t.Fatalf("%d %s; want 400 %s", r.Status, r.Body, tt.code)
					}
				})
			}
			env.Owner.Must(200, "GET", "/api/services/cdn", nil).JSON(t, &got)
			if got.Enabled || got.CacheTTLSeconds != 0 {
				t.Fatalf("a refused save changed the settings: %+v", got)
			}
			env.Owner.Must(200, "PUT", "/api/services/cdn", map[string]any{"cacheTtlSeconds": cdn.MaxCacheTTLSeconds})
		})
	}
}

func TestCDNPermissions(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			prj := env.CreateProject("p")
			viewer := env.Member("v@example.com", "viewer")
			admin := env.Member("a@example.com", "admin")
			tests := []struct {
				name   string
				c      *cptest.Client
				method string
				status int
			}{
				{"viewer reads", viewer, "GET", 200},
				{"viewer cannot change", viewer, "PUT", 403},
				{"developer cannot change", env.Member("d@example.com", "developer"), "PUT", 403},
				{"admin changes", admin, "PUT", 200},
				{"project key refused", env.NewKey("full", prj), "GET", 403},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					var body any
					if tt.method == "PUT" {
						body = map[string]any{"cacheTtlSeconds": 60}
					}
					tt.c.Must(tt.status, tt.method, "/api/services/cdn", body)
				})
			}
		})
	}
}

// TestMain stops the PostgreSQL server the engine subtests started.
func TestMain(m *testing.M) { pgtest.Main(m) }

// onEngine starts the control plane on engine e's metadata store (a SQLite
// path or a fresh PostgreSQL database).
func onEngine(t *testing.T, e pgtest.Engine) cptest.Options {
	return cptest.Options{Configure: func(c *controlplane.Config) { c.Store = e.DSN(t) }}
}
