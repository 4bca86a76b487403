// Package cptest starts a whole control plane on a real socket for tests,
// with a bootstrap owner key and helpers to make callers of every kind.
package cptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"github.com/svcplatform/platform/internal/passhash"
)

// OwnerKey is the bootstrap owner's key in every test control plane.
const OwnerKey = "test-owner-key-0123456789abcdef"

// Env is a running control plane: its loops run (Run), its job workers
// do not (tests run due jobs with CP.Jobs.RunDue).
type Env struct {
	T      *testing.T
	CP     *controlplane.ControlPlane
	Server *httptest.Server
	Clock  *clock.Fake
	// Owner is a caller with the owner's full-access workspace key.
	Owner *Client
	// close stops the server and Run, then closes CP, once.
	close func() error
}

// Close stops the control plane as the platform does: the server, then
// Run's loops, then CP.Close. The test's end does it too; a test that
// restarts a control plane over the same data calls it first.
func (e *Env) Close() error { return e.close() }

// Options change the control plane a test gets.
type Options struct {
	Plan plans.Name
	// Configure edits the configuration before start.
	Configure func(*controlplane.Config)
}

// New starts a control plane in a temporary data directory.
func New(t *testing.T, opts ...Options) *Env {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Plan == "" {
		o.Plan = plans.Pro
	}
	clk := clock.NewFake(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	// The server's address is known before the control plane is built, so
	// the URLs it hands out (uploads, hosted pages, callbacks) reach it.
	srv := httptest.NewUnstartedServer(nil)
	cfg := controlplane.Config{
		APIBaseURL: "http://" + srv.Listener.Addr().String(),
		DataDir:    t.TempDir(), AppsDomain: "apps.test", Clock: clk,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Bootstrap: accounts.BootstrapConfig{WorkspaceName: "Test", OwnerEmail: "owner@example.com", Plan: o.Plan, Key: OwnerKey},
		// Tests deploy origins and webhook receivers on loopback.
		AllowPrivateNetworks: true,
		// Tests run jobs themselves (CP.Jobs.RunDue); the other loops run.
		Jobs: jobs.Config{Workers: -1},
	}
	// PLATFORM_TEST_STORE=postgres runs the control plane on a real
	// PostgreSQL (controlplane/store/pgtest; the test binary's TestMain
	// calls pgtest.Main).
	if os.Getenv("PLATFORM_TEST_STORE") == "postgres" {
		cfg.Store = pgtest.MigratedDSN(t)
	}
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	cp, err := controlplane.New(context.Background(), cfg)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	cp.Accounts.SetHashParams(passhash.Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32})
	srv.Config.Handler = cp.Handler()
	srv.Start()
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- cp.Run(ctx) }()
	closeEnv := sync.OnceValue(func() error {
		srv.Close()
		stop()
		if err := <-ran; err != nil {
			t.Errorf("control plane: %v", err)
		}
		return cp.Close()
	})
	t.Cleanup(func() { closeEnv() })
	e := &Env{T: t, CP: cp, Server: srv, Clock: clk, close: closeEnv}
	e.Owner = e.Client(OwnerKey)
	return e
}

// Client calls the API with one bearer key (or none when empty).
type Client struct {
	env *Env
	Key string
	// Header is added to every request.
	Header http.Header
	// HTTP is the client used (cookies for sessions live in its jar).
	HTTP *http.Client
}

// Client returns a caller using key.
func (e *Env) Client(key string) *Client {
	return &Client{env: e, Key: key, Header: http.Header{}, HTTP: e.Server.Client()}
}

// Response is a decoded answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test on error.
func (r *Response) JSON(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Map decodes the body as a JSON object.
func (r *Response) Map(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	r.JSON(t, &m)
	return m
}

// ErrorCode returns error.code of an error body ("" when none).
func (r *Response) ErrorCode() string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(r.Body, &e)
	return e.Error.Code
}

// Do sends a request; body is marshalled to JSON unless it is a string or
// []byte, which are sent as they are.
func (c *Client) Do(method, path string, body any) *Response {
	c.env.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			c.env.T.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.env.Server.URL+path, rd)
	if err != nil {
		c.env.T.Fatal(err)
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range c.Header {
		req.Header[k] = vs
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		c.env.T.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// Must sends a request and fails the test unless the status is want.
func (c *Client) Must(want int, method, path string, body any) *Response {
	c.env.T.Helper()
	r := c.Do(method, path, body)
	if r.Status != want {
		c.env.T.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Body)
	}
	return r
}

// CreateProject makes a project as the owner and returns its id.
func (e *Env) CreateProject(name string) string {
	e.T.Helper()
	var out struct {
		Project struct {
			ID string `json:"id"`
		} `json:"project"`
	}
	e.Owner.Must(http.StatusCreated, "POST", "/api/projects", map[string]any{"name": name}).JSON(e.T, &out)
	return out.Project.ID
}

// NewKey makes a key as the owner: access full or read_only, limited to
// project when not empty.
func (e *Env) NewKey(access, project string) *Client {
	e.T.Helper()
	var out struct {
		Secret string `json:"secret"`
	}
	e.Owner.Must(http.StatusCreated, "POST", "/api/keys", map[string]any{"name": "test", "access": access, "projectId": project}).JSON(e.T, &out)
	return e.Client(out.Secret)
}

// Member invites a member with role, accepts the invitation and returns a
// full-access workspace key of theirs.
func (e *Env) Member(email, role string) *Client {
	e.T.Helper()
	var inv struct {
		Token  string `json:"token"`
		Member struct {
			ID string `json:"id"`
		} `json:"member"`
	}
	e.Owner.Must(http.StatusCreated, "POST", "/api/members", map[string]any{"email": email, "role": role}).JSON(e.T, &inv)
	e.Client("").Must(http.StatusOK, "POST", "/api/members/accept", map[string]any{"token": inv.Token, "password": "a long password 1"})
	// Sign in and make a key as that member.
	s := e.SignIn(email, "a long password 1", "")
	var out struct {
		Secret string `json:"secret"`
	}
	s.Must(http.StatusCreated, "POST", "/api/keys", map[string]any{"name": role + " key"}).JSON(e.T, &out)
	return e.Client(out.Secret)
}

// SignIn opens a dashboard session and returns a client carrying its
// cookie and CSRF token.
func (e *Env) SignIn(email, password, code string) *Client {
	e.T.Helper()
	c := e.Client("")
	jar := newJar()
	c.HTTP = &http.Client{Transport: e.Server.Client().Transport, Jar: jar}
	var out struct {
		CSRF string `json:"csrfToken"`
	}
	c.Must(http.StatusOK, "POST", "/api/session", map[string]any{"email": email, "password": password, "code": code}).JSON(e.T, &out)
	c.Header.Set("X-CSRF-Token", out.CSRF)
	return c
}
