package deploys

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/repos"
	"github.com/svcplatform/platform/runtime/engine"
)

// Builder runs build steps in the runtime's sandbox (engine.Engine).
type Builder interface {
	Build(ctx context.Context, b engine.Build) (*engine.BuildResult, error)
}

var _ Builder = (*engine.Engine)(nil)

// Build limits (Config fields' defaults).
const (
	// DefaultBuildTimeout bounds a build's steps together.
	DefaultBuildTimeout = 10 * time.Minute
	// DefaultBuildMaxFiles bounds the files a build's output keeps.
	DefaultBuildMaxFiles = 20000
	// DefaultBuildMaxBytes bounds the bytes a build's output keeps.
	DefaultBuildMaxBytes = 512 << 20
	// maxLinkDepth bounds the symbolic links to directories followed
	// within a build's output (link loops end there).
	maxLinkDepth = 4
	// cacheDirName is the build cache inside the build directory
	// (engine's), never part of the output.
	cacheDirName = ".platform-cache"
	// buildLogBatch is how many build lines are written to the stored
	// deploy log at once (the project log gets each line at once).
	buildLogBatch = 50
)

// builder returns the runtime's Builder, nil without one.
func (s *Service) builder() Builder {
	b, _ := s.runtime().(Builder)
	return b
}

// planBuild decides the build of a deploy request: platform.json's, else
// the detected one (only when the platform can run builds: a platform
// without a runtime serves such commits as they are, as before).
func (s *Service) planBuild(m Manifest, files []repos.File) (*BuildSpec, error) {
	if m.Build != nil {
		if !m.Build.Steps() {
			return nil, nil
		}
		if s.builder() == nil {
			return nil, ErrRuntimeUnavailable
		}
		return m.Build, nil
	}
	if s.builder() == nil {
		return nil, nil
	}
	byPath := make(map[string]repos.File, len(files))
	for _, f := range files {
		byPath[f.Path] = f
	}
	return DetectBuild(m, func(p string) ([]byte, bool) {
		f, ok := byPath[p]
		if !ok || f.SHA256 == "" {
			return nil, false
		}
		data, err := s.cfg.Repos.Blob(f.SHA256)
		return data, err == nil
	})
}

// buildLog writes build output to the project log at once and to the
// stored deploy log in batches (each line prefixed "build | ").
type buildLog struct {
	b       builder
	mu      sync.Mutex
	pending []string
}

func (l *buildLog) line(stream, text string) {
	s, d := l.b.s, l.b.d
	s.logs.add(d.ProjectID, ProjectLogLine{DeploymentID: d.ID, Source: SourceBuild, Stream: stream, Line: text})
	l.mu.Lock()
	l.pending = append(l.pending, buildPrefix+text)
	full := len(l.pending) >= buildLogBatch
	l.mu.Unlock()
	if full {
		l.flush()
	}
}

func (l *buildLog) flush() {
	l.mu.Lock()
	lines := l.pending
	l.pending = nil
	l.mu.Unlock()
	if len(lines) == 0 {
		return
	}
	s, d := l.b.s, l.b.d
	ctx, now := s.ctx, s.cfg.Clock.Now()
	err := s.cfg.DB.Tx(ctx, func(tx *sql.Tx) error {
		for _, line := range lines {
			if err := appendLog(ctx, tx, d.ID, now, line); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.cfg.Logger.Warn("deploy log", "deployment", d.ID, "err", err)
	}
}

// runBuild runs the build of src in the sandbox and replaces src's files
// with its output, stored as blobs: a static site's output directory
// (re-rooted: it is the site root), or the whole built directory for an
// app, worker program or function. A failed build fails the deploy; what
// served before keeps serving.
func (s *Service) runBuild(ctx context.Context, b builder, p string, src *source) error {
	spec := src.build
	bl := s.builder()
	if bl == nil {
		return ErrRuntimeUnavailable
	}
	env, err := s.cfg.Projects.DeployEnv(ctx, p)
	if err != nil {
		return fmt.Errorf("environment variables: %w", err)
	}
	var steps []engine.BuildStep
	if spec.Install != "" {
		steps = append(steps, engine.BuildStep{Name: "install", Command: spec.Install})
	}
	if spec.Command != "" {
		steps = append(steps, engine.BuildStep{Name: "build", Command: spec.Command})
	}
	what := "build"
	if spec.Framework != "" {
		what = "build (detected: " + spec.Framework + ")"
	}
	b.logf("%s: %d step(s) in the sandbox, %s time limit, %s", what, len(steps), s.cfg.BuildTimeout, networkNote(s.cfg.BuildOffline))
	in := make([]fileOut, 0, len(src.files))
	for _, f := range src.files {
		if f.SHA256 == "" {
			continue // environment files are never stored
		}
		in = append(in, fileOut{path: f.Path, sha: f.SHA256, size: f.Size})
	}
	bl2 := &buildLog{b: b}
	res, err := bl.Build(ctx, engine.Build{ID: b.d.ID, Project: p, Files: s.engineFiles(src.manifest, in), Steps: steps, Env: env,
		Timeout: s.cfg.BuildTimeout, LogBytes: s.cfg.BuildLogBytes, Network: !s.cfg.BuildOffline, Output: bl2.line})
	bl2.flush()
	if err != nil {
		if errors.Is(err, engine.ErrBuildFailed) {
			return fmt.Errorf("%v; what served before keeps serving", err)
		}
		return fmt.Errorf("build: %w", err)
	}
	defer res.Release()
	root := res.Dir
	prefix := ""
	static := src.manifest.Kind == "" || src.manifest.Kind == snapshot.KindStatic
	if static {
		out := spec.Output
		if out == "" {
			for _, c := range DefaultOutputs {
				if fi, err := os.Stat(filepath.Join(res.Dir, c)); err == nil && fi.IsDir() {
					out = c
					break
				}
			}
			if out == "" {
				return fmt.Errorf("the build made none of the directories %s: name the one it writes in platform.json, {\"build\": {\"output\": \"...\"}}", strings.Join(DefaultOutputs, ", "))
			}
		}
		fi, err := os.Lstat(filepath.Join(res.Dir, filepath.FromSlash(out)))
		if err != nil || !fi.IsDir() {
			return fmt.Errorf("the build did not make its output directory %s: check build.output in platform.json or the build script", out)
		}
		prefix = out + "/"
		b.logf("build: serving %s", out)
	}
	files, err := s.storeBuilt(ctx, root, prefix)
	if err != nil {
		return err
	}
	var size int64
	for _, f := range files {
		size += f.Size
	}
	b.logf("build: output of %d file(s), %d bytes", len(files), size)
	src.files, src.types = files, map[string]string{}
	if static {
		src.manifest.Root = ""
	}
	return nil
}

func networkNote(offline bool) string {
	if offline {
		return "no network"
	}
	return "network as the sandbox allows"
}

// storeBuilt stores the regular files of a built directory (those under
// prefix, re-rooted, when prefix is set) as blobs. Symbolic links are
// followed only within the directory (os.Root); other special files, the
// build cache and what escapes the directory are left out. The files and
// bytes are bounded by Config.BuildMaxFiles and BuildMaxBytes.
func (s *Service) storeBuilt(ctx context.Context, dir, prefix string) ([]repos.File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("build output: %w", err)
	}
	defer root.Close()
	var paths []string
	fsys := root.FS()
	// walk lists the files under dir; a symbolic link to a directory
	// within the build (npm links file: dependencies into node_modules)
	// is walked as the directory, at most maxLinkDepth links deep.
	var walk func(dir string, links int) error
	walk = func(dir string, links int) error {
		return fs.WalkDir(fsys, dir, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p == cacheDirName || p == ".git" {
				return fs.SkipDir
			}
			if de.Type()&fs.ModeSymlink != 0 {
				fi, err := fs.Stat(fsys, p) // within the directory only
				if err != nil {
					return nil // a link leaving the directory, or dangling
				}
				if fi.IsDir() {
					if links >= maxLinkDepth {
						return nil
					}
					return walk(p, links+1)
				}
			} else if de.IsDir() {
				return nil
			}
			if !strings.HasPrefix(p, prefix) {
				return nil
			}
			paths = append(paths, p)
			if len(paths) > s.cfg.BuildMaxFiles {
				return fmt.Errorf("the build's output has more than %d files: keep fewer (an app's node_modules counts), or ask the operator for a higher limit", s.cfg.BuildMaxFiles)
			}
			return nil
		})
	}
	if err := walk(".", 0); err != nil {
		return nil, fmt.Errorf("build output: %w", err)
	}
	sort.Strings(paths)
	var out []repos.File
	var total int64
	for _, p := range paths {
		f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			continue // a link leaving the directory, or gone
		}
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			f.Close()
			continue
		}
		total += fi.Size()
		if total > s.cfg.BuildMaxBytes {
			f.Close()
			return nil, fmt.Errorf("the build's output is larger than %d MiB: keep less in it, or ask the operator for a higher limit", s.cfg.BuildMaxBytes>>20)
		}
		info, _, err := s.cfg.Blobs.PutReader(ctx, io.LimitReader(f, fi.Size()))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("build output %s: %w", p, err)
		}
		rel := path.Clean(strings.TrimPrefix(p, prefix))
		out = append(out, repos.File{Path: rel, Size: info.Size, SHA256: info.Sum})
	}
	return out, nil
}
