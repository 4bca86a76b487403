package media

import (
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/internal/areatest"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/runtime/sandbox"
)

const ownerKey = areatest.OwnerKey

// env is the core services and the media area on a real socket.
type env struct {
	*areatest.Core
	t       *testing.T
	svc     *Service
	stop    func() // ends the service's Run and waits for it
	jobs    *jobs.Runner
	srv     *httptest.Server
	project string
	cfg     Config
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
	e := &env{Core: areatest.NewCore(t, plan), t: t, cfg: cfg, sandbox: box}
	e.project = e.NewProject("app")
	var err error
	if e.jobs, err = jobs.New(jobs.Config{}, jobs.Deps{DB: e.DB, Clock: e.Clock}); err != nil {
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
	cfg.Dir = filepath.Join(e.Dir, "media")
	cfg.PublicBaseURL = base
	if cfg.Live != nil {
		l := *cfg.Live
		l.NotifyBaseURL = base
		cfg.Live = &l
	}
	logger := areatest.Discard()
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	e.Projects.SetLogger(logger)
	svc, err := New(cfg, Deps{DB: e.DB, Clock: e.Clock, Audit: e.Audit, Meter: e.Meter,
		Projects: e.Projects, Plans: e.Accounts, Sealer: e.Sealer, Jobs: e.jobs, Logger: logger, Sandbox: e.sandbox})
	if err != nil {
		e.t.Fatal(err)
	}
	e.Projects.AddDependent(svc)
	e.Projects.AddCounter(svc)
	mux := http.NewServeMux()
	prj := projects.Handlers{S: e.Projects}
	api.Mount(mux, append(Routes(Handlers{S: svc}),
		api.Route{Method: http.MethodGet, Path: "/api/projects/{id}", Op: auth.OpProjectRead, ProjectParam: "id", Handler: prj.Read},
		api.Route{Method: http.MethodDelete, Path: "/api/projects/{id}", Op: auth.OpProjectDelete, ProjectParam: "id", Handler: prj.Delete},
	), api.MountOptions{Authn: e.Accounts, Log: logger})
	ln.Config.Handler = mux
	ln.Start()
	stop := areatest.Start(e.t, svc.Run)
	e.svc, e.stop, e.srv = svc, stop, ln
	e.t.Cleanup(func() {
		ln.Close()
		stop()
		svc.Close()
	})
}

// response is an answer of the test server.
type response = areatest.Response

// do sends a request as key, a body as JSON with its Content-Type; a URL
// starting with http is used as it is.
func (e *env) do(key, method, path string, body any) response {
	e.t.Helper()
	return areatest.Call(e.t, e.srv, key, method, path, body, jsonType(body)...)
}

func (e *env) must(want int, key, method, path string, body any) response {
	e.t.Helper()
	return areatest.Must(e.t, want, e.srv, key, method, path, body, jsonType(body)...)
}

// jsonType is the Content-Type header of a JSON body.
func jsonType(body any) []string {
	if body == nil {
		return nil
	}
	return []string{"Content-Type", "application/json"}
}

func (e *env) send(req *http.Request) response {
	e.t.Helper()
	return areatest.Send(e.t, e.srv.Client(), req)
}

// createVideo makes a video and returns its id and upload URL.
func (e *env) createVideo(name string) (string, string) {
	e.t.Helper()
	var c Created
	e.must(201, ownerKey, "POST", "/api/projects/"+e.project+"/media", map[string]any{"name": name, "kind": "video"}).Decode(e.t, &c)
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
	e.must(200, ownerKey, "GET", "/api/media/"+id, nil).Decode(e.t, &a)
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
