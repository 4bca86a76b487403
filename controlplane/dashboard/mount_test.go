package dashboard_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/dashboard"
)

// TestMountedInControlPlane: the API address answers the dashboard on
// every path no API route takes, and the API, the hosted pages and the
// edge protocol as before.
func TestMountedInControlPlane(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, method, path string
		status             int
		// dashboard: the answer is the dashboard's (it has the CSP)
		dashboard bool
		// code: the API's error code
		code string
	}{
		{name: "root", method: "GET", path: "/", dashboard: true},
		{name: "a page", method: "GET", path: "/projects/prj_x/settings", dashboard: true},
		{name: "the setup link", method: "GET", path: "/setup?token=svcsetup_x", dashboard: true},
		{name: "a change to a page", method: "POST", path: "/projects", status: 405, dashboard: true},
		{name: "an API route", method: "GET", path: "/api/openapi.json", status: 200},
		{name: "an unknown API path", method: "GET", path: "/api/nothing-here", status: 404, code: "no_route"},
		{name: "an API path without credentials", method: "GET", path: "/api/projects", status: 401},
		{name: "the API root", method: "GET", path: "/api/", status: 404, code: "no_route"},
		{name: "a hosted checkout page", method: "GET", path: "/pay/cs_unknown", status: 404},
		{name: "the edge protocol", method: "GET", path: "/edge/v1/config", status: 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, e.base+tc.path, nil)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			want := tc.status
			if want == 0 {
				want = http.StatusOK
				if !dashboardBuilt {
					want = http.StatusServiceUnavailable // the placeholder
				}
			}
			if res.StatusCode != want {
				t.Fatalf("status %d, want %d", res.StatusCode, want)
			}
			csp := res.Header.Get("Content-Security-Policy")
			if tc.dashboard != (csp == dashboard.CSP) {
				t.Fatalf("dashboard %v, CSP %q", tc.dashboard, csp)
			}
			if tc.dashboard && tc.method == "GET" && !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
				t.Fatalf("Content-Type %q", res.Header.Get("Content-Type"))
			}
			if tc.code != "" {
				var body struct {
					Error struct {
						Code string `json:"code"`
					} `json:"error"`
				}
				json.NewDecoder(res.Body).Decode(&body)
				if body.Error.Code != tc.code {
					t.Fatalf("code %q, want %q", body.Error.Code, tc.code)
				}
			}
		})
	}
}
