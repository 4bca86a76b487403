package devicelogin_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/devicelogin"
)

// fixture is a control plane (accounts, store, sealer) with the device
// login routes mounted on a server of their own, behind the same
// authentication.
type fixture struct {
	t   *testing.T
	env *cptest.Env
	srv *httptest.Server
}

func newFixture(t *testing.T) *fixture {
	env := cptest.New(t)
	cp := env.CP
	s, err := devicelogin.New(devicelogin.Config{}, devicelogin.Deps{DB: cp.DB, Sealer: cp.Sealer, Keys: cp.Accounts,
		ProjectExists: cp.Projects.Exists, Clock: env.Clock})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	api.Mount(mux, devicelogin.Routes(devicelogin.Handlers{S: s}), api.MountOptions{Authn: cp.Accounts})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &fixture{t: t, env: env, srv: srv}
}

type answer struct {
	status int
	body   map[string]any
}

func (a answer) code() string {
	e, _ := a.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (f *fixture) call(key, method, path string, body any) answer {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, f.srv.URL+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return answer{resp.StatusCode, m}
}

func TestDeviceLogin(t *testing.T) {
	f := newFixture(t)
	start := f.call("", "POST", "/api/device/code", map[string]any{"clientName": "platform CLI on laptop"})
	if start.status != 201 {
		t.Fatalf("code: %+v", start)
	}
	device, _ := start.body["deviceCode"].(string)
	user, _ := start.body["userCode"].(string)
	if len(user) != 9 || user[4] != '-' || start.body["interval"] != float64(5) || start.body["expiresIn"] != float64(600) {
		t.Fatalf("code answer: %+v", start.body)
	}
	poll := func() answer { return f.call("", "POST", "/api/device/token", map[string]any{"deviceCode": device}) }
	if a := poll(); a.status != 400 || a.code() != "authorization_pending" {
		t.Fatalf("first poll: %+v", a)
	}
	if a := poll(); a.status != 429 || a.code() != "slow_down" {
		t.Fatalf("fast poll: %+v", a)
	}
	viewer := f.env.Member("viewer@example.com", "viewer")
	for _, c := range []struct {
		name, key, method, path string
		body                    any
		status                  int
		code                    string
	}{
		{"lookup without a key", "", "GET", "/api/device/requests/" + user, nil, 401, "unauthenticated"},
		{"approve without a key", "", "POST", "/api/device/approve", map[string]any{"userCode": user}, 401, "unauthenticated"},
		{"malformed user code", cptest.OwnerKey, "POST", "/api/device/approve", map[string]any{"userCode": "AEIOU"}, 400, "invalid_request"},
		{"unknown user code", cptest.OwnerKey, "POST", "/api/device/approve", map[string]any{"userCode": "BBBB-BBBB"}, 404, "device_code_not_found"},
		{"unknown project", cptest.OwnerKey, "POST", "/api/device/approve", map[string]any{"userCode": user, "projectId": "prj_nope"}, 400, "invalid_request"},
		{"bad device code", "", "POST", "/api/device/token", map[string]any{"deviceCode": "nope"}, 400, "invalid_request"},
		{"unknown device code", "", "POST", "/api/device/token", map[string]any{"deviceCode": "dvc_nope"}, 400, "expired_token"},
		{"client name too long", "", "POST", "/api/device/code", map[string]any{"clientName": string(bytes.Repeat([]byte("x"), 101))}, 400, "invalid_request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if a := f.call(c.key, c.method, c.path, c.body); a.status != c.status || a.code() != c.code {
				t.Fatalf("%d %q, want %d %q: %v", a.status, a.code(), c.status, c.code, a.body)
			}
		})
	}
	// The member sees what asks, in any typing of the code, then approves.
	look := f.call(viewer.Key, "GET", "/api/device/requests/"+lower(user), nil)
	if look.status != 200 || look.body["request"].(map[string]any)["clientName"] != "platform CLI on laptop" {
		t.Fatalf("lookup: %+v", look)
	}
	ok := f.call(viewer.Key, "POST", "/api/device/approve", map[string]any{"userCode": user})
	if ok.status != 200 || ok.body["status"] != "approved" {
		t.Fatalf("approve: %+v", ok)
	}
	if a := f.call(cptest.OwnerKey, "POST", "/api/device/approve", map[string]any{"userCode": user}); a.status != 409 || a.code() != "device_code_used" {
		t.Fatalf("second approve: %+v", a)
	}
	f.env.Clock.Advance(6 * time.Second)
	got := poll()
	key, _ := got.body["key"].(string)
	if got.status != 200 || key == "" {
		t.Fatalf("token: %+v", got)
	}
	// The key is the approving viewer's: it reads, it does not create.
	c := f.env.Client(key)
	if r := c.Do("GET", "/api/workspace", nil); r.Status != 200 {
		t.Fatalf("the new key: %d %s", r.Status, r.Body)
	}
	if r := c.Do("POST", "/api/projects", map[string]any{"name": "x"}); r.Status != 403 {
		t.Fatalf("a viewer's key created a project: %d", r.Status)
	}
	if a := poll(); a.status != 400 || a.code() != "expired_token" {
		t.Fatalf("a collected login polled again: %+v", a)
	}

	t.Run("denied", func(t *testing.T) {
		s := f.call("", "POST", "/api/device/code", nil)
		dev, uc := s.body["deviceCode"].(string), s.body["userCode"].(string)
		if a := f.call(cptest.OwnerKey, "POST", "/api/device/approve", map[string]any{"userCode": uc, "deny": true}); a.status != 200 || a.body["status"] != "denied" {
			t.Fatalf("deny: %+v", a)
		}
		if a := f.call("", "POST", "/api/device/token", map[string]any{"deviceCode": dev}); a.status != 403 || a.code() != "access_denied" {
			t.Fatalf("poll after deny: %+v", a)
		}
	})
	t.Run("expired", func(t *testing.T) {
		s := f.call("", "POST", "/api/device/code", nil)
		dev, uc := s.body["deviceCode"].(string), s.body["userCode"].(string)
		f.env.Clock.Advance(11 * time.Minute)
		if a := f.call(cptest.OwnerKey, "POST", "/api/device/approve", map[string]any{"userCode": uc}); a.status != 404 {
			t.Fatalf("approve after expiry: %+v", a)
		}
		if a := f.call("", "POST", "/api/device/token", map[string]any{"deviceCode": dev}); a.status != 400 || a.code() != "expired_token" {
			t.Fatalf("poll after expiry: %+v", a)
		}
	})
}

func lower(s string) string { return string(bytes.ToLower([]byte(s))) }

func TestParseUserCode(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"BCDF-GHJK", "BCDF-GHJK", true},
		{"bcdfghjk", "BCDF-GHJK", true},
		{" bcdf ghjk ", "BCDF-GHJK", true},
		{"BCDF-GHJ", "", false},
		{"BCDF-GHJKL", "", false},
		{"ABCD-EFGH", "", false},
		{"BCDF-GHJ1", "", false},
		{"", "", false},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, ok := devicelogin.ParseUserCode(c.in)
			if got != c.want || ok != c.ok {
				t.Fatalf("ParseUserCode(%q) = %q %v", c.in, got, ok)
			}
		})
	}
}

func FuzzParseUserCode(f *testing.F) {
	f.Add("BCDF-GHJK")
	f.Add("bcdf ghjk")
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := devicelogin.ParseUserCode(s)
		if !ok {
			return
		}
		again, ok2 := devicelogin.ParseUserCode(got)
		if !ok2 || again != got || len(got) != 9 {
			t.Fatalf("%q -> %q -> %q", s, got, again)
		}
	})
}
