package deploys_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/runtime/engine"
	"github.com/svcplatform/platform/runtime/sandbox"
	"github.com/svcplatform/platform/runtime/supervise"
	"github.com/svcplatform/platform/runtime/wasm"
)

// The example app (runtime/testdata/app) and function (runtime/testdata/fn)
// are built once per test binary and pushed into commits like any file.
var (
	buildOnce sync.Once
	appBin    []byte
	fnWasm    []byte
	buildErr  error
	// wasmCache is the compilation cache every test runtime shares, so
	// the example module is compiled once per test binary.
	wasmCache string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "deploys-wasm-cache-")
	if err != nil {
		panic(err)
	}
	wasmCache = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	stopPostgres()
	os.Exit(code)
}

func artifacts(t *testing.T) ([]byte, []byte) {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "deploys-rt-")
		if err != nil {
			buildErr = err
			return
		}
		defer os.RemoveAll(dir)
		build := func(out, pkg string, env ...string) []byte {
			if buildErr != nil {
				return nil
			}
			cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, out), pkg)
			cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
			if b, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v: %s", pkg, err, b)
				return nil
			}
			data, err := os.ReadFile(filepath.Join(dir, out))
			buildErr = err
			return data
		}
		appBin = build("server", "../../runtime/testdata/app")
		fnWasm = build("fn.wasm", "../../runtime/testdata/fn", "GOOS=wasip1", "GOARCH=wasm")
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return appBin, fnWasm
}

// rtEnv is a control plane with a runtime (no sandbox: the tests run as
// any user) whose idle and drain decisions follow the fake clock.
type rtEnv struct {
	*cptest.Env
	eng *engine.Engine
}

const (
	testIdle  = 10 * time.Minute
	testDrain = 30 * time.Second
)

func newRuntimeEnv(t *testing.T, dataDir string) rtEnv {
	t.Helper()
	return newRuntimeEnvIn(t, dataDir, sandbox.None{}, filepath.Join(t.TempDir(), "runtime"))
}

func newRuntimeEnvIn(t *testing.T, dataDir string, box sandbox.Sandbox, runtimeDir string) rtEnv {
	t.Helper()
	opts := cptest.Options{}
	if dataDir != "" {
		opts.Configure = func(c *controlplane.Config) { c.DataDir = dataDir }
	}
	env := newCP(t, opts)
	eng, err := engine.New(context.Background(), engine.Config{
		Dir: runtimeDir,
		Supervise: supervise.Config{IdleTimeout: testIdle, DrainTimeout: testDrain, HealthInterval: 20 * time.Millisecond,
			BackoffMin: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond, StartTimeout: 30 * time.Second, StopGrace: 2 * time.Second},
		Wasm: wasm.Config{Timeout: 500 * time.Millisecond, CacheDir: wasmCache},
	}, box, env.Clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	if err := env.CP.Deploys().SetRuntime(context.Background(), eng); err != nil {
		t.Fatal(err)
	}
	return rtEnv{Env: env, eng: eng}
}

// pushFiles commits files; values of bin are binary (sent as base64).
func (s *site) pushFiles(t *testing.T, text map[string]string, bin map[string][]byte) int {
	t.Helper()
	var list []map[string]any
	for p, c := range text {
		list = append(list, map[string]any{"path": p, "content": c})
	}
	for p, c := range bin {
		list = append(list, map[string]any{"path": p, "content": base64.StdEncoding.EncodeToString(c), "base64": true})
	}
	var out struct {
		Commit struct {
			Number int `json:"commit"`
		} `json:"commit"`
	}
	s.env.Owner.Must(201, "POST", "/api/repos/"+s.repo+"/commits", map[string]any{"message": "m", "files": list}).JSON(t, &out)
	return out.Commit.Number
}

type rtDetail struct {
	Deployment struct {
		ID, State, Kind, Error, Origin, Module string
		Run                                    []string
		Rollback                               bool
	} `json:"deployment"`
	Log    []struct{ Line string } `json:"log"`
	Output []struct{ Stream, Line string }
}

func (d rtDetail) text() string {
	var b strings.Builder
	for _, l := range d.Log {
		b.WriteString(l.Line + "\n")
	}
	for _, l := range d.Output {
		b.WriteString(l.Stream + ": " + l.Line + "\n")
	}
	return b.String()
}

func (s *site) deployRT(t *testing.T, commit int) rtDetail {
	t.Helper()
	var out struct{ Deployment struct{ ID string } }
	s.env.Owner.Must(202, "POST", "/api/repos/"+s.repo+"/deploy", map[string]any{"projectId": s.project, "commit": commit}).JSON(t, &out)
	s.env.CP.Deploys().Wait()
	return s.detail(t, out.Deployment.ID)
}

func (s *site) detail(t *testing.T, id string) rtDetail {
	t.Helper()
	var d rtDetail
	s.env.Owner.Must(200, "GET", "/api/deployments/"+id, nil).JSON(t, &d)
	return d
}

// origin is the serving site's edge entry: the address the edge forwards
// to, which the tests reach directly (the edge's own forwarding is tested
// in edge/).
func (s *site) origin(t *testing.T) *snapshot.Deployment {
	t.Helper()
	for _, st := range edgeSnapshot(t, s.env).Sites {
		if st.ProjectID == s.project {
			return &st.Deployment
		}
	}
	return nil
}

// client opens a connection per request: an open connection counts as
// activity and keeps an app awake.
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func mustGet(t *testing.T, url, want string) {
	t.Helper()
	if code, body := get(t, url); code != 200 || body != want {
		t.Fatalf("GET %s: %d %q, want 200 %q", url, code, body, want)
	}
}

// waitState waits (on the supervisor's change channel, no sleeping) until
// the deployment's status satisfies ok.
func waitState(t *testing.T, sup *supervise.Supervisor, id string, ok func(supervise.Status) bool) supervise.Status {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		ch := sup.Changed()
		st, err := sup.Status(id)
		if err == nil && ok(st) {
			return st
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("deployment %s: still %+v (%v)", id, st, err)
		}
	}
}

func setVar(t *testing.T, env *cptest.Env, project, key, value string) []string {
	t.Helper()
	var out struct {
		FunctionsBehind []string `json:"functions_behind"`
	}
	r := env.Owner.Do("POST", "/api/projects/"+project+"/env", map[string]any{"key": key, "value": value})
	if r.Status != 200 && r.Status != 201 {
		t.Fatalf("set %s: %d %s", key, r.Status, r.Body)
	}
	r.JSON(t, &out)
	return out.FunctionsBehind
}

// TestAppLifecycle is issue 17 end to end over real sockets: an app
// deployed from a commit (a Go server built by the test) runs with exactly
// the project's variables and SERVICE_PROJECT_ID, a variable change shows
// as behind until the redeploy, a crash is restarted, an idle app sleeps
// and the next request wakes it, and an older commit rolls back.
func TestAppLifecycle(t *testing.T) {
	bin, _ := artifacts(t)
	env := newRuntimeEnv(t, "")
	s := newSite(t, env.Env, "Runner")
	setVar(t, env.Env, s.project, "GREETING", "hello")
	manifest := `{"kind":"app","run":["./server"],"health":"/health"}`
	c1 := s.pushFiles(t, map[string]string{"platform.json": manifest, "README.md": "v1"}, map[string][]byte{"server": bin})

	d1 := s.deployRT(t, c1)
	if d1.Deployment.State != "live" || d1.Deployment.Kind != "app" || d1.Deployment.Origin != "" || len(d1.Deployment.Run) != 1 {
		t.Fatalf("deploy: %+v\n%s", d1.Deployment, d1.text())
	}
	for _, want := range []string{`starting "./server"`, "healthy; traffic switches", "stdout: listening on"} {
		if !strings.Contains(d1.text(), want) {
			t.Fatalf("deployment log lacks %q:\n%s", want, d1.text())
		}
	}
	o := s.origin(t)
	if o == nil || !o.Managed || !strings.HasPrefix(o.Origin, "http://127.0.0.1:") || o.ID != d1.Deployment.ID || len(o.Files) != 0 {
		t.Fatalf("edge entry: %+v", o)
	}
	origin1 := o.Origin
	t.Run("project log", func(t *testing.T) {
		var out logsAnswer
		env.Owner.Must(200, "GET", "/api/projects/"+s.project+"/logs?source=app&stream=stdout", nil).JSON(t, &out)
		if !strings.Contains(logsText(out.Lines), "app stdout: listening on") || out.Lines[0].DeploymentID != d1.Deployment.ID {
			t.Fatalf("project log of the app:\n%s", logsText(out.Lines))
		}
	})
	t.Run("environment", func(t *testing.T) {
		mustGet(t, origin1+"/env?k=SERVICE_PROJECT_ID", s.project)
		mustGet(t, origin1+"/env?k=GREETING", "hello")
		if code, _ := get(t, origin1+"/env?k=HOME"); code != 404 {
			t.Fatalf("HOME is set: the app got the platform's environment")
		}
	})
	t.Run("variable change and redeploy", func(t *testing.T) {
		if behind := setVar(t, env.Env, s.project, "GREETING", "bonjour"); len(behind) != 1 {
			t.Fatalf("functions_behind %v: the app runs the old value", behind)
		}
		mustGet(t, origin1+"/env?k=GREETING", "hello") // pinned until redeploy
		var out struct{ Deployment struct{ ID string } }
		env.Owner.Must(202, "POST", "/api/projects/"+s.project+"/deploy", nil).JSON(t, &out)
		env.CP.Deploys().Wait()
		if d := s.detail(t, out.Deployment.ID); d.Deployment.State != "live" {
			t.Fatalf("redeploy: %+v\n%s", d.Deployment, d.text())
		}
		o := s.origin(t)
		mustGet(t, o.Origin+"/env?k=GREETING", "bonjour")
		if behind := setVar(t, env.Env, s.project, "OTHER", "x"); len(behind) != 1 {
			t.Fatalf("functions_behind after a new variable: %v", behind)
		}
		// The replaced deployment drains, then stops.
		mustGet(t, origin1+"/env?k=GREETING", "hello")
		env.Clock.Advance(testDrain + time.Second)
		env.eng.Reap(context.Background())
		if _, err := env.eng.Supervisor().Status(d1.Deployment.ID); !errors.Is(err, supervise.ErrNotFound) {
			t.Fatalf("drained deployment still runs: %v", err)
		}
		if _, err := client.Get(origin1 + "/health"); err == nil {
			t.Fatal("the drained deployment's address still answers")
		}
	})
	o = s.origin(t)
	id := o.ID
	t.Run("crash restarts", func(t *testing.T) {
		_, _ = client.Get(o.Origin + "/crash")
		st := waitState(t, env.eng.Supervisor(), id, func(st supervise.Status) bool {
			return st.Restarts >= 1 && st.State == supervise.StateHealthy
		})
		mustGet(t, o.Origin+"/env?k=SERVICE_PROJECT_ID", s.project)
		d := s.detail(t, id)
		if !strings.Contains(d.text(), "crashing on request") || !strings.Contains(d.text(), "exited with status 3") {
			t.Fatalf("output lacks the crash (%+v):\n%s", st, d.text())
		}
	})
	t.Run("idle to zero and wake", func(t *testing.T) {
		waitState(t, env.eng.Supervisor(), id, func(st supervise.Status) bool { return st.Active == 0 })
		env.Clock.Advance(testIdle + time.Minute)
		if n := env.eng.Reap(context.Background()); n != 1 {
			t.Fatalf("reaped %d, want the idle app", n)
		}
		waitState(t, env.eng.Supervisor(), id, func(st supervise.Status) bool { return st.State == supervise.StateIdle && st.PID == 0 })
		var p struct{ Serving struct{ State string } }
		env.Owner.Must(200, "GET", "/api/projects/"+s.project, nil).JSON(t, &p)
		if p.Serving.State != "live" {
			t.Fatalf("an app asleep shows %q, want live", p.Serving.State)
		}
		mustGet(t, o.Origin+"/env?k=SERVICE_PROJECT_ID", s.project) // the connection wakes it
		if st, _ := env.eng.Supervisor().Status(id); st.State != supervise.StateHealthy {
			t.Fatalf("after the wake: %+v", st)
		}
	})
	t.Run("rollback", func(t *testing.T) {
		c2 := s.pushFiles(t, map[string]string{"platform.json": manifest, "README.md": "v2"}, map[string][]byte{"server": bin})
		if d := s.deployRT(t, c2); d.Deployment.State != "live" || d.Deployment.Rollback {
			t.Fatalf("deploy commit %d: %+v", c2, d.Deployment)
		}
		d := s.deployRT(t, c1)
		if d.Deployment.State != "live" || !d.Deployment.Rollback {
			t.Fatalf("rollback: %+v\n%s", d.Deployment, d.text())
		}
		o := s.origin(t)
		if o.ID != d.Deployment.ID || o.Commit != c1 {
			t.Fatalf("edge serves %+v after the rollback", o)
		}
		mustGet(t, o.Origin+"/env?k=GREETING", "bonjour")
	})
	t.Run("failed start keeps the serving one", func(t *testing.T) {
		before := s.origin(t)
		c := s.pushFiles(t, map[string]string{"platform.json": `{"kind":"app","run":["./broken.sh"]}`,
			"broken.sh": "#!/bin/sh\necho cannot start: missing DATABASE_URL >&2\nexit 2\n"}, nil)
		d := s.deployRT(t, c)
		if d.Deployment.State != "failed" || !strings.Contains(d.Deployment.Error, "cannot start: missing DATABASE_URL") {
			t.Fatalf("failed start: %+v\n%s", d.Deployment, d.text())
		}
		if after := s.origin(t); after.ID != before.ID {
			t.Fatalf("a failed deploy changed what serves: %s -> %s", before.ID, after.ID)
		}
		mustGet(t, before.Origin+"/env?k=SERVICE_PROJECT_ID", s.project)
	})
	t.Run("static replaces the app", func(t *testing.T) {
		before := s.origin(t)
		c := s.pushFiles(t, map[string]string{"index.html": "<h1>static</h1>"}, nil)
		if d := s.deployRT(t, c); d.Deployment.State != "live" {
			t.Fatalf("static: %+v", d.Deployment)
		}
		if _, err := env.eng.Supervisor().Status(before.ID); !errors.Is(err, supervise.ErrNotFound) {
			t.Fatalf("the replaced app still runs: %v", err)
		}
	})
}

// TestServedNeverExposesAppFiles: the files kept for an app are not a
// static site: the edge snapshot lists none and edges may fetch none.
func TestServedNeverExposesAppFiles(t *testing.T) {
	bin, _ := artifacts(t)
	env := newRuntimeEnv(t, "")
	s := newSite(t, env.Env, "Secretive")
	c := s.pushFiles(t, map[string]string{"platform.json": `{"kind":"app","run":["./server"]}`, "config/secret.txt": "s3cret"},
		map[string][]byte{"server": bin})
	if d := s.deployRT(t, c); d.Deployment.State != "live" {
		t.Fatalf("%+v\n%s", d.Deployment, d.text())
	}
	var files struct {
		Files []struct{ Path, SHA256 string }
	}
	env.Owner.Must(200, "GET", "/api/deployments/"+s.origin(t).ID, nil).JSON(t, &files)
	if len(files.Files) != 3 {
		t.Fatalf("kept files: %+v", files.Files)
	}
	for _, f := range files.Files {
		ok, err := deploys.Served(context.Background(), env.CP.DB, f.SHA256)
		if err != nil || ok {
			t.Fatalf("%s is served to edges (%v)", f.Path, err)
		}
	}
}

// TestWorkerProgram: a worker runs with its variables, has no address
// (the edge does not list its host) and its output is in the deployment.
func TestWorkerProgram(t *testing.T) {
	bin, _ := artifacts(t)
	env := newRuntimeEnv(t, "")
	s := newSite(t, env.Env, "Queue")
	c := s.pushFiles(t, map[string]string{"platform.json": `{"kind":"worker","run":["./server","worker"]}`}, map[string][]byte{"server": bin})
	d := s.deployRT(t, c)
	if d.Deployment.State != "live" || d.Deployment.Kind != "worker" {
		t.Fatalf("worker: %+v\n%s", d.Deployment, d.text())
	}
	if o := s.origin(t); o != nil {
		t.Fatalf("a worker program is on the edge: %+v", o)
	}
	waitState(t, env.eng.Supervisor(), d.Deployment.ID, func(st supervise.Status) bool { return st.State == supervise.StateHealthy })
	deadline := time.After(20 * time.Second)
	for {
		// Take the change signal before looking, so a line written
		// between the look and the wait still wakes the loop.
		changed := env.eng.Supervisor().Changed()
		if strings.Contains(s.detail(t, d.Deployment.ID).text(), "stdout: worker started for "+s.project) {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("worker output missing:\n%s", s.detail(t, d.Deployment.ID).text())
		}
	}
	if !strings.Contains(d.text(), "rules pinned to this worker program") {
		t.Fatalf("log: %s", d.text())
	}
}

// TestFunctionModule: a WASI function deployed from a commit answers
// through its front with the pinned variables; one that loops forever is
// stopped at its limit with 504.
func TestFunctionModule(t *testing.T) {
	_, mod := artifacts(t)
	env := newRuntimeEnv(t, "")
	s := newSite(t, env.Env, "Fn")
	setVar(t, env.Env, s.project, "GREETING", "hi")
	c := s.pushFiles(t, map[string]string{"platform.json": `{"kind":"function","module":"build/fn.wasm"}`}, map[string][]byte{"build/fn.wasm": mod})
	d := s.deployRT(t, c)
	if d.Deployment.State != "live" || d.Deployment.Module != "build/fn.wasm" {
		t.Fatalf("function: %+v\n%s", d.Deployment, d.text())
	}
	o := s.origin(t)
	if o == nil || !o.Managed || o.Kind != snapshot.KindFunction || o.Shield == nil {
		t.Fatalf("edge entry: %+v", o)
	}
	mustGet(t, o.Origin+"/hello", "hello from "+s.project+"\n")
	mustGet(t, o.Origin+"/env?k=GREETING", "hi")
	if code, _ := get(t, o.Origin+"/loop"); code != http.StatusGatewayTimeout {
		t.Fatalf("a looping function: %d, want 504", code)
	}
	if code, _ := get(t, o.Origin+"/log"); code != 200 {
		t.Fatal("/log")
	}
	out := s.detail(t, d.Deployment.ID).text()
	if !strings.Contains(out, "stderr: a line for the deployment log") || !strings.Contains(out, "504") {
		t.Fatalf("function output:\n%s", out)
	}
	if behind := setVar(t, env.Env, s.project, "GREETING", "hey"); len(behind) != 1 {
		t.Fatalf("functions_behind: %v", behind)
	}
	mustGet(t, o.Origin+"/env?k=GREETING", "hi")
	d2 := s.deployRT(t, c)
	o2 := s.origin(t)
	if d2.Deployment.State != "live" || o2.Origin == o.Origin {
		t.Fatalf("redeploy: %+v %+v", d2.Deployment, o2)
	}
	mustGet(t, o2.Origin+"/env?k=GREETING", "hey")
	env.Clock.Advance(testDrain + time.Second)
	env.eng.Reap(context.Background())
	if _, err := client.Get(o.Origin + "/hello"); err == nil {
		t.Fatal("the replaced function's front still answers after the drain")
	}
}

// TestResumeAfterRestart: after a restart of the platform the serving app
// is restored asleep on a new address, published to the edge, and the
// first request wakes it.
func TestResumeAfterRestart(t *testing.T) {
	bin, mod := artifacts(t)
	data := t.TempDir()
	env := newRuntimeEnv(t, data)
	app := newSite(t, env.Env, "Survivor")
	fn := newSite(t, env.Env, "FnSurvivor")
	ca := app.pushFiles(t, map[string]string{"platform.json": `{"kind":"app","run":["./server"],"health":"/health"}`}, map[string][]byte{"server": bin})
	cf := fn.pushFiles(t, map[string]string{"platform.json": `{"kind":"function","module":"fn.wasm"}`}, map[string][]byte{"fn.wasm": mod})
	da, df := app.deployRT(t, ca), fn.deployRT(t, cf)
	if da.Deployment.State != "live" || df.Deployment.State != "live" {
		t.Fatalf("%+v %+v", da.Deployment, df.Deployment)
	}
	before := app.origin(t).Origin
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	if err := env.eng.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	env2 := newRuntimeEnv(t, data)
	app.env, fn.env = env2.Env, env2.Env
	o := app.origin(t)
	if o == nil || o.ID != da.Deployment.ID || o.Origin == "" || o.Origin == before {
		t.Fatalf("after the restart the edge has %+v (before: %s)", o, before)
	}
	if st, err := env2.eng.Supervisor().Status(o.ID); err != nil || st.State != supervise.StateIdle {
		t.Fatalf("restored app: %+v %v, want asleep", st, err)
	}
	mustGet(t, o.Origin+"/env?k=SERVICE_PROJECT_ID", app.project)
	of := fn.origin(t)
	mustGet(t, of.Origin+"/hello", "hello from "+fn.project+"\n")
	if !strings.Contains(app.detail(t, o.ID).text(), "restored after a restart") {
		t.Fatalf("log: %s", app.detail(t, o.ID).text())
	}
}

// TestRuntimeRefusals: what cannot run is refused at the deploy request
// and nothing is stored.
func TestRuntimeRefusals(t *testing.T) {
	plain := newCP(t)
	s := newSite(t, plain, "NoRuntime")
	c := s.push(t, map[string]string{"platform.json": `{"kind":"app","run":["node","server.js"]}`, "server.js": "x"})
	r := plain.Owner.Do("POST", "/api/repos/"+s.repo+"/deploy", map[string]any{"projectId": s.project, "commit": c})
	if r.Status != 503 || r.ErrorCode() != "runtime_unavailable" {
		t.Fatalf("without a runtime: %d %s", r.Status, r.Body)
	}

	env := newRuntimeEnv(t, "")
	s = newSite(t, env.Env, "Refused")
	for _, tc := range []struct{ name, manifest, want string }{
		{"program not in commit", `{"kind":"app","run":["./missing"]}`, `run[0] "./missing" is not a file of this commit`},
		{"module not in commit", `{"kind":"function","module":"fn.wasm"}`, `module "fn.wasm" is not a file of this commit`},
		{"worker with health", `{"kind":"worker","run":["./x"],"health":"/h"}`, "health applies to apps only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := s.push(t, map[string]string{"platform.json": tc.manifest, "index.html": "x"})
			r := env.Owner.Do("POST", "/api/repos/"+s.repo+"/deploy", map[string]any{"projectId": s.project, "commit": c})
			var e struct{ Error struct{ Message string } }
			r.JSON(t, &e)
			if r.Status != 400 || r.ErrorCode() != "invalid_manifest" || !strings.Contains(e.Error.Message, tc.want) {
				t.Fatalf("%d %s, want 400 invalid_manifest with %q", r.Status, r.Body, tc.want)
			}
		})
	}
	t.Run("module that is not wasm fails the deploy", func(t *testing.T) {
		c := s.push(t, map[string]string{"platform.json": `{"kind":"function","module":"fn.wasm"}`, "fn.wasm": "not wasm"})
		d := s.deployRT(t, c)
		if d.Deployment.State != "failed" || !strings.Contains(d.Deployment.Error, "invalid module") {
			t.Fatalf("%+v", d.Deployment)
		}
	})
	var list deploys.ProjectDeployments
	env.Owner.Must(200, "GET", "/api/projects/"+s.project+"/deployments", nil).JSON(t, &list)
	if len(list.Deployments) != 1 {
		t.Fatalf("refused deploys stored deployments: %+v", list.Deployments)
	}
}

// TestSandboxedAppIsolation is issue 17's isolation proof end to end: an
// app deployed under bubblewrap cannot read the platform's data directory
// nor connect to the control plane's port. It needs root, bwrap and
// prlimit, and skips saying so without them.
func TestSandboxedAppIsolation(t *testing.T) {
	box := &sandbox.Bwrap{}
	if err := box.Provision(); err != nil {
		t.Skipf("bubblewrap sandbox unavailable here: %v", err)
	}
	bin, _ := artifacts(t)
	// Every directory above an app's must be o+x for its uid.
	base, err := os.MkdirTemp("", "deploys-bwrap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(base, "data")
	box.Hide = []string{data}
	env := newRuntimeEnvIn(t, data, box, filepath.Join(base, "runtime"))
	s := newSite(t, env.Env, "Boxed")
	c := s.pushFiles(t, map[string]string{"platform.json": `{"kind":"app","run":["./server"],"health":"/health"}`}, map[string][]byte{"server": bin})
	if d := s.deployRT(t, c); d.Deployment.State != "live" {
		t.Fatalf("%+v\n%s", d.Deployment, d.text())
	}
	o := s.origin(t)
	mustGet(t, o.Origin+"/env?k=SERVICE_PROJECT_ID", s.project)
	cpAddr := strings.TrimPrefix(env.Server.URL, "http://")
	for _, tc := range []struct{ name, path string }{
		{"data directory", "/read?path=" + filepath.Join(data, "platform.db")},
		{"seal key", "/read?path=" + filepath.Join(data, "keys", "seal.key")},
		{"control plane port", "/dial?addr=" + cpAddr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := get(t, o.Origin+tc.path); code != 403 || !strings.HasPrefix(body, "refused") {
				t.Fatalf("%s: %d %q, want refused", tc.path, code, body)
			}
		})
	}
}
