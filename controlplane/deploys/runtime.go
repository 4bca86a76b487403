package deploys

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/repos"
	"github.com/svcplatform/platform/runtime/engine"
	"github.com/svcplatform/platform/runtime/supervise"
)

// Runtime runs what users deploy: apps and worker programs as supervised
// processes, functions as WASI modules (engine.Engine). Each call that
// starts something returns the loopback origin address the edge forwards
// to ("" for a worker program).
type Runtime interface {
	// StartApp starts an app or worker and returns once it is healthy
	// and its project's current deployment.
	StartApp(ctx context.Context, a engine.App) (string, error)
	// RestoreApp registers an app asleep (woken by the first connection)
	// or starts a worker without waiting: after a restart of the platform.
	RestoreApp(ctx context.Context, a engine.App) (string, error)
	// LoadFunction loads a function and serves it on a front of its own.
	LoadFunction(ctx context.Context, f engine.Function) (string, error)
	// Stop stops a deployment for good.
	Stop(ctx context.Context, id string) error
	// StopProject stops every deployment of a project.
	StopProject(ctx context.Context, project string) error
	// Output is the deployment's captured output, oldest first.
	Output(id string) []supervise.LogLine
	// State is the deployment's state (supervise.State values); false
	// when it does not run.
	State(id string) (string, bool)
	// TakeRunTime reports, once, how long each app and worker program
	// ran since the previous call (metered as app_run_seconds).
	TakeRunTime() []supervise.RunTime
}

var _ Runtime = (*engine.Engine)(nil)

// ErrRuntimeUnavailable is the refusal of a deploy the platform would run
// itself (run or module) when it was started without a runtime.
var ErrRuntimeUnavailable = api.E(api.KindUnavailable, "runtime_unavailable",
	"this platform does not run apps, worker programs or functions itself (started without a runtime): deploy them with an origin instead, or ask the operator to enable the runtime (--app-sandbox)")

// runSpec is what a deployment the platform runs keeps of its manifest.
// It is stored as JSON in the root column (root is static-only), and such
// deployments store kind app for a worker (the kind column holds what the
// edge knows: static, app, function).
type runSpec struct {
	Kind   string   `json:"kind"`
	Run    []string `json:"run,omitempty"`
	Health string   `json:"health,omitempty"`
	Module string   `json:"module,omitempty"`
}

func specOf(m Manifest) runSpec {
	return runSpec{Kind: m.Kind, Run: m.Run, Health: m.Health, Module: m.Module}
}

// storedColumns returns the kind and root columns of a deployment.
func storedColumns(m Manifest) (kind, root string) {
	if !m.Managed() {
		return m.Kind, m.Root
	}
	raw, _ := json.Marshal(specOf(m))
	kind = m.Kind
	if kind == KindWorker {
		kind = snapshot.KindApp
	}
	return kind, string(raw)
}

// decodeSpec reads the run spec of a non-static deployment's root column.
func decodeSpec(kind, root string) (runSpec, bool) {
	var sp runSpec
	if kind == snapshot.KindStatic || !strings.HasPrefix(root, "{") {
		return sp, false
	}
	if err := json.Unmarshal([]byte(root), &sp); err != nil || sp.Kind == "" {
		return sp, false
	}
	return sp, true
}

func (sp runSpec) manifest() Manifest {
	return Manifest{Kind: sp.Kind, Run: sp.Run, Health: sp.Health, Module: sp.Module}
}

// checkRunnable refuses, at the deploy request, a manifest the platform
// must run when it has no runtime, or whose program or module is not a
// file of the commit (unless built: the build may make it, and the check
// runs again on the build's output).
func (s *Service) checkRunnable(m Manifest, files []fileRef, built bool) error {
	if !m.Managed() {
		return nil
	}
	if s.runtime() == nil {
		return ErrRuntimeUnavailable
	}
	if built {
		return nil
	}
	has := func(p string) bool {
		for _, f := range files {
			if f.path == p && f.sha != "" {
				return true
			}
		}
		return false
	}
	if p, ok := m.Program(); ok && !has(p) {
		return fmt.Errorf("%s: run[0] %q is not a file of this commit", ManifestFile, m.Run[0])
	}
	if m.Module != "" && !has(m.Module) {
		return fmt.Errorf("%s: module %q is not a file of this commit", ManifestFile, m.Module)
	}
	return nil
}

// fileRef is a file of a source by path and blob.
type fileRef struct{ path, sha string }

func refsOf(files []repos.File) []fileRef {
	refs := make([]fileRef, 0, len(files))
	for _, f := range files {
		refs = append(refs, fileRef{f.Path, f.SHA256})
	}
	return refs
}

// runtimeFiles are the files a deployment the platform runs keeps: every
// file of the commit with content (environment files are never stored),
// platform.json included. They are materialised as the app's directory and
// never served by the edge.
func (s *Service) runtimeFiles(b builder, src source) ([]fileOut, error) {
	var out []fileOut
	var size int64
	for _, f := range src.files {
		if f.SHA256 == "" {
			b.logf("%s: not stored by the repo (environment file): not materialised; use the project's variables", f.Path)
			continue
		}
		if !s.cfg.Blobs.Has(f.SHA256) {
			return nil, fmt.Errorf("file %s is missing from storage", f.Path)
		}
		ctype := src.types[f.Path]
		if ctype == "" {
			ctype = contentType(f.Path, func() []byte {
				head, _ := s.cfg.Blobs.Head(f.SHA256, 512)
				return head
			})
		}
		out = append(out, fileOut{path: f.Path, sha: f.SHA256, ctype: ctype, size: f.Size})
		size += f.Size
	}
	b.logf("%d file(s), %d bytes, kept for the runtime (never served as files)", len(out), size)
	return out, nil
}

// engineFiles turns kept files into files to materialise: the program run
// names, and files that start as ELF binaries or scripts (#!), are made
// executable (repos keep no file modes).
func (s *Service) engineFiles(m Manifest, files []fileOut) []engine.File {
	prog, _ := m.Program()
	out := make([]engine.File, 0, len(files))
	for _, f := range files {
		sha := f.sha
		head, _ := s.cfg.Blobs.Head(sha, 4)
		exec := f.path == prog || bytes.HasPrefix(head, []byte("\x7fELF")) || bytes.HasPrefix(head, []byte("#!"))
		out = append(out, engine.File{Path: f.path, Exec: exec, Open: func() (io.ReadCloser, error) { return s.cfg.Blobs.Get(context.Background(), sha) }})
	}
	return out
}

// activate runs a deployment the platform runs and returns its origin
// ("http://127.0.0.1:port"; "" for a worker program).
func (s *Service) activate(ctx context.Context, b builder, d *Deployment, m Manifest, files []fileOut, env map[string]string, restore bool) (string, error) {
	rt := s.runtime()
	if rt == nil {
		return "", ErrRuntimeUnavailable
	}
	var addr string
	var err error
	switch m.Kind {
	case snapshot.KindFunction:
		var module []byte
		for _, f := range files {
			if f.path == m.Module {
				module, err = s.cfg.Blobs.Read(f.sha)
				if err != nil {
					return "", fmt.Errorf("module %s: %w", m.Module, err)
				}
			}
		}
		if module == nil {
			return "", fmt.Errorf("module %s is not among the deployment's files", m.Module)
		}
		b.logf("function: loading module %s (%d bytes) into the WebAssembly host", m.Module, len(module))
		addr, err = rt.LoadFunction(ctx, engine.Function{ID: d.ID, Project: d.ProjectID, Module: module, Env: env})
		if err != nil {
			return "", fmt.Errorf("function module %s: %w", m.Module, err)
		}
		b.logf("function: module compiled and loaded; each request runs it in a fresh instance")
	default:
		s.noteRun(d.ID, d.workspaceID)
		var secret string
		if restore {
			secret, err = s.storedKey(ctx, d.ID)
		} else {
			secret, err = s.mintKey(ctx, b, d)
		}
		if err != nil {
			return "", err
		}
		env = withKey(env, secret)
		a := engine.App{ID: d.ID, Project: d.ProjectID, Worker: m.Kind == KindWorker, Run: m.Run, Health: m.Health, Env: env,
			Files: s.engineFiles(m, files)}
		what := kindName(m.Kind)
		if restore {
			addr, err = rt.RestoreApp(ctx, a)
		} else {
			b.logf("%s: starting %q with PORT and %d variable(s)%s", what, strings.Join(m.Run, " "), len(env), healthNote(m))
			addr, err = rt.StartApp(ctx, a)
		}
		if err != nil {
			return "", fmt.Errorf("%s did not start: %w", what, err)
		}
		if !restore {
			if m.Kind == KindWorker {
				b.logf("worker program: running (no public address)")
			} else {
				b.logf("server app: healthy; traffic switches to it now")
			}
		}
	}
	if addr == "" {
		return "", nil
	}
	return "http://" + addr, nil
}

func healthNote(m Manifest) string {
	switch {
	case m.Kind == KindWorker:
		return ""
	case m.Health != "":
		return "; healthy once GET " + m.Health + " answers 2xx or 3xx"
	}
	return "; healthy once its port accepts connections"
}

// sameSlot reports whether b replaces a in the runtime by itself (the
// supervisor drains an app or worker its project's next app or worker
// replaces; the engine drains a function the next function replaces).
func sameSlot(a, b string) bool {
	fn := func(k string) bool { return k == snapshot.KindFunction }
	return fn(a) == fn(b)
}

// retire stops a replaced deployment the platform ran when what replaced
// it does not take its place in the runtime (an app replaced by a static
// site or an external origin, a function replaced by an app ...).
func (s *Service) retire(prev *Deployment, next Deployment) {
	rt := s.runtime()
	if rt == nil || prev == nil || !prev.managed || (next.managed && sameSlot(prev.Kind, next.Kind)) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rt.Stop(ctx, prev.ID); err != nil && !errors.Is(err, engine.ErrNotFound) {
		s.cfg.Logger.Warn("deploys: stop replaced deployment", "deployment", prev.ID, "err", err)
	}
}

// Resume runs again, after a restart of the platform, every serving
// deployment the platform runs: apps are registered asleep on a new front
// address (the first request wakes them), worker programs are started and
// functions loaded; the new addresses are published to the edges in one
// change. A deployment that cannot be resumed is taken off the edges and
// its log says why (deploy again). New calls it when Config.Runtime is set.
func (s *Service) Resume(ctx context.Context) error {
	if s.runtime() == nil {
		return nil
	}
	ds, err := queryDeployments(ctx, s.cfg.DB, 0, `s.project_id IS NOT NULL AND d.kind <> ?`, snapshot.KindStatic)
	if err != nil {
		return err
	}
	type update struct{ id, origin, line string }
	var ups []update
	var projectOf []string
	for _, d := range ds {
		if !d.managed {
			continue
		}
		projectOf = append(projectOf, d.ProjectID)
		origin, err := s.resumeOne(ctx, d)
		line := "restored after a restart of the platform"
		if err != nil {
			line = fmt.Sprintf("could not be restored after a restart of the platform: %v; visitors get no answer from it until it is deployed again", err)
			s.cfg.Logger.Warn("deploys: resume", "deployment", d.ID, "err", err)
		}
		ups = append(ups, update{d.ID, origin, line})
	}
	if len(ups) == 0 {
		return nil
	}
	now := s.cfg.Clock.Now()
	err = s.cfg.Pub.Change(ctx, func(tx *sql.Tx) error {
		for _, u := range ups {
			if _, err := tx.ExecContext(ctx, `UPDATE deployments SET origin = ? WHERE id = ?`, u.origin, u.id); err != nil {
				return fmt.Errorf("deploys: resume: %w", err)
			}
			if err := appendLog(ctx, tx, u.id, now, u.line); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, u := range ups {
		s.logDeploy(projectOf[i], u.id, now, u.line)
	}
	return nil
}

func (s *Service) resumeOne(ctx context.Context, d Deployment) (string, error) {
	env, err := s.Env(ctx, d.ID)
	if err != nil {
		return "", err
	}
	kept, err := readFiles(ctx, s.cfg.DB, d.ID)
	if err != nil {
		return "", err
	}
	files := make([]fileOut, 0, len(kept))
	for _, f := range kept {
		files = append(files, fileOut{path: f.Path, sha: f.SHA256, ctype: f.ContentType, size: f.Size})
	}
	b := builder{s: s, d: &d}
	return s.activate(ctx, b, &d, d.spec.manifest(), files, env, true)
}

// OutputLine is a line a running deployment printed (stdout, stderr) or
// the runtime's note about it (stream platform: started, exited, idle,
// woken ...).
type OutputLine struct {
	At     time.Time `json:"at"`
	Stream string    `json:"stream"`
	Line   string    `json:"line"`
}

// output returns a deployment's captured output (empty when it does not
// run here).
func (s *Service) output(id string) []OutputLine {
	out := []OutputLine{}
	rt := s.runtime()
	if rt == nil {
		return out
	}
	for _, l := range rt.Output(id) {
		out = append(out, OutputLine{At: l.Time, Stream: l.Stream, Line: l.Text})
	}
	return out
}

// runtimeDown reports whether a deployment the platform runs is crashed
// or not running at all.
func (s *Service) runtimeDown(id string) bool {
	rt := s.runtime()
	if rt == nil {
		return true
	}
	st, ok := rt.State(id)
	return !ok || st == string(supervise.StateCrashed) || st == string(supervise.StateStopped)
}

func (s *Service) runtime() Runtime {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rt
}

// SetRuntime installs the runtime after New (an assembly that builds it
// later, tests) and resumes the serving deployments it should run (see
// Resume). The caller keeps closing the runtime it built.
func (s *Service) SetRuntime(ctx context.Context, rt Runtime) error {
	s.mu.Lock()
	s.rt = rt
	s.mu.Unlock()
	s.sinkRuntime(rt)
	return s.Resume(ctx)
}

// SetKeys installs what mints the deployments' keys after New (an
// assembly that builds it later, tests); deployments started before run
// without one.
func (s *Service) SetKeys(k Keys) {
	s.mu.Lock()
	s.cfg.Keys = k
	s.mu.Unlock()
}

// outputSink is a runtime that hands over its output lines as they come
// (engine.Engine).
type outputSink interface {
	SetSink(engine.Sink)
}

// sinkRuntime sends the runtime's output into the project logs.
func (s *Service) sinkRuntime(rt Runtime) {
	os, ok := rt.(outputSink)
	if !ok {
		return
	}
	os.SetSink(func(deployment, project, kind string, l supervise.LogLine) {
		src := SourceApp
		if kind == "function" {
			src = SourceFunction
		}
		s.logs.add(project, ProjectLogLine{At: l.Time, DeploymentID: deployment, Source: src, Stream: l.Stream, Line: l.Text})
	})
}
