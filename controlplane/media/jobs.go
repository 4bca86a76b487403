package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/svcplatform/platform/controlplane/media/transcode"
	"github.com/svcplatform/platform/runtime/sandbox"
)

// Names inside an asset's (and a job's) directory.
const (
	sourceFile = "source"
	hlsTmpDir  = "hls.tmp"
	hlsDir     = "hls"
)

// sandboxed tells whether box isolates anything: nil and sandbox.None run
// the programs as children of the platform.
func sandboxed(box sandbox.Sandbox) bool {
	switch box.(type) {
	case nil, sandbox.None, *sandbox.None:
		return false
	}
	return true
}

// JobSandbox derives the sandbox videos are processed in from the apps'
// sandbox: for bubblewrap, the same isolation with no network at all, uids
// of its own (the range after the apps'), and room for an encoder (at
// least 1 GiB of memory and two cores). nil and None give nil: ffmpeg runs
// as a child of the platform. The result is provisioned.
func JobSandbox(apps sandbox.Sandbox) (sandbox.Sandbox, error) {
	a, ok := apps.(*sandbox.Bwrap)
	if !ok {
		if sandboxed(apps) {
			return nil, fmt.Errorf("media: no processing sandbox derives from the %s sandbox", apps.Name())
		}
		return nil, nil
	}
	b := &sandbox.Bwrap{BwrapPath: a.BwrapPath, PrlimitPath: a.PrlimitPath,
		UIDBase: a.UIDBase + a.UIDCount, UIDCount: jobUIDs,
		MemoryBytes: max(a.MemoryBytes, 1<<30), CPUMillis: max(a.CPUMillis, 1000*transcode.DefaultThreads),
		Tasks: a.Tasks, OpenFiles: a.OpenFiles, TmpBytes: a.TmpBytes, Hide: a.Hide, Cgroups: a.Cgroups,
		Outbound: sandbox.ModeOff, NoSeccomp: a.NoSeccomp}
	if err := b.Provision(); err != nil {
		return nil, fmt.Errorf("media: processing sandbox: %w", err)
	}
	return b, nil
}

// jobUIDs is how many programs the processing sandbox runs at once at most.
const jobUIDs = 256

// sandboxRunner runs ffprobe and ffmpeg in a sandbox: each run is an app
// whose directory is the job directory, the only one it can read or write.
type sandboxRunner struct {
	box sandbox.Sandbox
	id  string
}

var _ transcode.Runner = sandboxRunner{}

// Run implements transcode.Runner. Cancelling ctx kills the program's
// process group.
func (r sandboxRunner) Run(ctx context.Context, dir string, argv []string, stdout, stderr io.Writer) error {
	p, err := r.box.Prepare(sandbox.App{ID: "media-" + r.id, Dir: dir, Argv: argv, Env: transcode.Env})
	if err != nil {
		return fmt.Errorf("media: sandbox: %w", err)
	}
	defer p.Release()
	p.Cmd.Stdout, p.Cmd.Stderr = stdout, stderr
	start := p.Start
	if start == nil {
		start = p.Cmd.Start
	}
	if err := start(); err != nil {
		return fmt.Errorf("media: sandbox start: %w", err)
	}
	kill := func() { _ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL) }
	if p.Started != nil {
		if err := p.Started(); err != nil {
			kill()
			_ = p.Cmd.Wait()
			return fmt.Errorf("media: sandbox: %w", err)
		}
	}
	stop := context.AfterFunc(ctx, kill)
	err = p.Cmd.Wait()
	stop()
	if err != nil && p.ExitNote != nil {
		if note := p.ExitNote(); note != "" {
			err = fmt.Errorf("%w (%s)", err, note)
		}
	}
	return err
}

// job is where one video is processed: the asset's own directory when the
// programs run as children of the platform, or, in a sandbox, a directory
// of its own under Config.WorkDir holding only the source (the data
// directory is out of a sandboxed program's reach); its output is moved
// back when done.
type job struct {
	s     *Service
	id    string
	dir   string
	tools transcode.Tools
}

// newJob prepares the job directory of video id.
func (s *Service) newJob(id string) (*job, error) {
	j := &job{s: s, id: id, dir: s.assetDir(id), tools: s.tools}
	if !sandboxed(s.d.Sandbox) {
		return j, nil
	}
	j.dir = s.jobDir(id)
	j.tools.Runner = sandboxRunner{box: s.d.Sandbox, id: id}
	if err := os.RemoveAll(j.dir); err != nil {
		return nil, fmt.Errorf("media: job %s: %w", id, err)
	}
	if err := os.MkdirAll(j.dir, 0o700); err != nil {
		return nil, fmt.Errorf("media: job %s: %w", id, err)
	}
	if err := linkOrCopy(filepath.Join(s.assetDir(id), sourceFile), filepath.Join(j.dir, sourceFile)); err != nil {
		j.close()
		return nil, fmt.Errorf("media: job %s: %w", id, err)
	}
	return j, nil
}

// jobDir is where a sandboxed job of video id runs ("" without a sandbox).
func (s *Service) jobDir(id string) string {
	if s.cfg.WorkDir == "" {
		return ""
	}
	return filepath.Join(s.cfg.WorkDir, id)
}

// output returns the asset-directory path of the job's output directory
// name, moving it there from a sandboxed job (owned by the platform again).
func (j *job) output(name string) (string, error) {
	dst := filepath.Join(j.s.assetDir(j.id), name)
	if j.dir == j.s.assetDir(j.id) {
		return dst, nil
	}
	src := filepath.Join(j.dir, name)
	if err := keepPlainFiles(src); err != nil {
		return "", fmt.Errorf("media: job %s: %w", j.id, err)
	}
	if err := restoreOwner(src); err != nil {
		return "", err
	}
	if err := os.RemoveAll(dst); err != nil {
		return "", fmt.Errorf("media: job %s: %w", j.id, err)
	}
	if err := moveDir(src, dst); err != nil {
		return "", fmt.Errorf("media: job %s: %w", j.id, err)
	}
	return dst, nil
}

// close removes a sandboxed job's directory (the source linked into it is
// the platform's again first).
func (j *job) close() {
	if j.dir == j.s.assetDir(j.id) {
		return
	}
	if err := restoreOwner(j.dir); err != nil {
		j.s.d.Logger.Error("media: job ownership", "asset", j.id, "err", err)
	}
	if err := os.RemoveAll(j.dir); err != nil {
		j.s.d.Logger.Error("media: remove job directory", "asset", j.id, "err", err)
	}
}

// keepPlainFiles removes everything under dir that is neither a
// directory nor a regular file: a symlink a sandboxed program made must
// not be served from the platform's side of the sandbox.
func keepPlainFiles(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Type().IsRegular() {
			return nil
		}
		return os.Remove(p)
	})
}

// restoreOwner gives what a sandboxed program's uid was handed back to the
// platform's uid (only root changes owners; otherwise nothing changed).
func restoreOwner(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	uid, gid := os.Getuid(), os.Getgid()
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("media: restore ownership: %w", err)
	}
	return nil
}

// linkOrCopy makes dst the file src: a hard link, or a copy across
// filesystems.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return copyFile(src, dst, 0o644)
}

// moveDir moves the directory tree src to dst: a rename, or a copy across
// filesystems.
func moveDir(src, dst string) error {
	err := os.Rename(src, dst)
	if err == nil || !errors.Is(err, syscall.EXDEV) {
		return err
	}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, to, 0o644)
		}
		return nil
	})
	if err != nil {
		os.RemoveAll(dst)
		return err
	}
	return os.RemoveAll(src)
}

// copyFile copies the regular file src to a new file dst.
func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}
