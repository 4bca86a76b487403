package media

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/internal/passhash"
	"github.com/svcplatform/platform/runtime/sandbox"
)

const ownerKey = "test-owner-key-0123456789abcdef"

// env is the core services and the media area on a real socket.
type env struct {
	t        *testing.T
	dir      string
	db       *store.DB
	clock    *clock.Fake
	accounts *accounts.Service
	projects *projects.Service
	meter    *metering.Meter
	audit    *audit.Log
	sealer   *seal.Sealer
	svc      *Service
	stop     func() // ends the service's Run and waits for it
	jobs     *jobs.Runner
	srv      *httptest.Server
	owner    *auth.Principal
	project  string
	cfg      Config
	// sandbox runs ffprobe and ffmpeg (nil: directly).
	sandbox sandbox.Sandbox
}

func newEnv(t *testing.T, plan plans.Name, cfg Config) *env {
	t.Helper()
	return newEnvWith(t, plan, cfg, nil)
}

// newEnvWith is newEnv processing videos in box.
func newEnvWith(t *testing.T, plan plans.Name, cfg Config, box sandbox.Sandbox) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{t: t, dir: t.TempDir(), clock: clock.NewFake(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)), cfg: cfg, sandbox: box}
	var err error
	if e.db, err = store.Open(ctx, storeDSN(t, filepath.Join(e.dir, "platform.db"))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.db.Close() })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.audit = audit.New(e.db, e.clock)
	e.meter = metering.New(e.db, e.clock)
	if e.accounts, err = accounts.New(ctx, accounts.Config{}, accounts.Deps{DB: e.db, Clock: e.clock, Audit: e.audit, Logger: logger}); err != nil {
		t.Fatal(err)
	}
	e.accounts.SetHashParams(passhash.Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32})
	if e.sealer, err = seal.LoadOrCreate(filepath.Join(e.dir, "seal.key")); err != nil {
		t.Fatal(err)
	}
	if e.projects, err = projects.New(projects.Config{AppsDomain: "apps.test"}, projects.Deps{DB: e.db, Clock: e.clock, Audit: e.audit, Meter: e.meter, Sealer: e.sealer}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.accounts.EnsureBootstrap(ctx, accounts.BootstrapConfig{WorkspaceName: "Test", OwnerEmail: "owner@example.com", Plan: plan, Key: ownerKey}); err != nil {
		t.Fatal(err)
	}
	e.owner = e.principal(ownerKey)
	e.project = e.newProject("app")
	if e.jobs, err = jobs.New(jobs.Config{}, jobs.Deps{DB: e.db, Clock: e.clock}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.jobs.Close() })
	e.start()
	return e
}

// start builds the service, runs it and serves it (the listener first, so
// the configuration can name the server's own URL).
func (e *env) start() {
	e.t.Helper()
	ln := httptest.NewUnstartedServer(nil)
	base := "http://" + ln.Listener.Addr().String()
	cfg := e.cfg
	cfg.Dir = filepath.Join(e.dir, "media")
	cfg.PublicBaseURL = base
	if cfg.Live != nil {
		l := *cfg.Live
		l.NotifyBaseURL = base
		cfg.Live = &l
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	e.projects.SetLogger(logger)
	svc, err := New(cfg, Deps{DB: e.db, Clock: e.clock, Audit: e.audit, Meter: e.meter,
		Projects: e.projects, Plans: e.accounts, Sealer: e.sealer, Jobs: e.jobs, Logger: logger, Sandbox: e.sandbox})
	if err != nil {
		e.t.Fatal(err)
	}
	e.projects.AddDependent(svc)
	e.projects.AddCounter(svc)
	mux := http.NewServeMux()
	prj := projects.Handlers{S: e.projects}
	api.Mount(mux, append(Routes(Handlers{S: svc}),
		api.Route{Method: http.MethodGet, Path: "/api/projects/{id}", Op: auth.OpProjectRead, ProjectParam: "id", Handler: prj.Read},
		api.Route{Method: http.MethodDelete, Path: "/api/projects/{id}", Op: auth.OpProjectDelete, ProjectParam: "id", Handler: prj.Delete},
	), api.MountOptions{Authn: e.accounts, Log: logger})
	ln.Config.Handler = mux
	ln.Start()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- svc.Run(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-ran; err != nil {
			e.t.Error(err)
		}
	})
	e.svc, e.stop, e.srv = svc, stop, ln
	e.t.Cleanup(func() {
		ln.Close()
		stop()
		svc.Close()
	})
}

func (e *env) principal(key string) *auth.Principal {
	e.t.Helper()
	r, _ := http.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer "+key)
	p, err := e.accounts.Authenticate(r)
	if err != nil || p == nil {
		e.t.Fatalf("authenticate: %v", err)
	}
	return p
}

func (e *env) newProject(name string) string {
	e.t.Helper()
	p, err := e.projects.Create(context.Background(), e.owner, projects.CreateRequest{Name: name})
	if err != nil {
		e.t.Fatal(err)
	}
	return p.ID
}

// key makes a key: access full or read_only, limited to project when set.
func (e *env) key(access, project string) string {
	e.t.Helper()
	k, err := e.accounts.CreateKey(context.Background(), e.owner, accounts.CreateKeyRequest{Name: "test", Access: access, ProjectID: project}, e.projects.Exists)
	if err != nil {
		e.t.Fatal(err)
	}
	return k.Secret
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) code() string {
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(r.body, &b)
	return b.Error.Code
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// do sends a request; a URL starting with http is used as it is.
func (e *env) do(key, method, path string, body any) response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	url := path
	if len(path) > 0 && path[0] == '/' {
		url = e.srv.URL + path
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return e.send(req)
}

func (e *env) send(req *http.Request) response {
	e.t.Helper()
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (e *env) must(want int, key, method, path string, body any) response {
	e.t.Helper()
	r := e.do(key, method, path, body)
	if r.status != want {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}

// createVideo makes a video and returns its id and upload URL.
func (e *env) createVideo(name string) (string, string) {
	e.t.Helper()
	var c Created
	e.must(201, ownerKey, "POST", "/api/projects/"+e.project+"/media", map[string]any{"name": name, "kind": "video"}).json(e.t, &c)
	if c.UploadURL == "" || c.Asset.Status != StatusPendingUpload {
		e.t.Fatalf("create: %+v", c)
	}
	return c.Asset.ID, c.UploadURL
}

// upload streams the file at path to url as multipart field (file).
func (e *env) upload(url, field, path string) response {
	e.t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		defer f.Close()
		part, err := mw.CreateFormFile(field, filepath.Base(path))
		if err == nil {
			_, err = io.Copy(part, f)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest("POST", url, pr)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return e.send(req)
}

func (e *env) asset(id string) Asset {
	e.t.Helper()
	var a AssetAnswer
	e.must(200, ownerKey, "GET", "/api/media/"+id, nil).json(e.t, &a)
	return a.Asset
}

// needTools skips a test when a program is absent, naming its Debian
// package; under CI (CI set) it fails instead.
func needTools(t *testing.T, progs ...string) {
	t.Helper()
	pkg := map[string]string{"ffmpeg": "ffmpeg", "ffprobe": "ffmpeg", "nginx": "nginx", "chromium": "chromium",
		"bwrap": "bubblewrap", "prlimit": "util-linux"}
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI: %s not installed: apt-get install %s", p, pkg[p])
			}
			t.Skipf("%s not installed: apt-get install %s", p, pkg[p])
		}
	}
}

// media generates a file with ffmpeg into dir (cached by name).
func genMedia(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	cmd := exec.Command("ffmpeg", append(append([]string{"-hide_banner", "-loglevel", "error", "-nostdin", "-y"}, args...), out)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v: %s", args, err, b)
	}
	return out
}

// clip is a 6-second 256x400 test pattern with a tone (ladder 360p, 400p).
func clip(t *testing.T, dir string) string {
	return genMedia(t, dir, "clip.mp4", "-f", "lavfi", "-i", "testsrc=size=256x400:rate=10:duration=6",
		"-f", "lavfi", "-i", "sine=frequency=440:duration=6", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
		"-c:a", "aac", "-shortest")
}
