// Package sandbox prepares the command that runs one user program (a
// server app or a worker program) and the dialer that reaches the port it
// listens on: None runs it as a plain child process (development, tests),
// Bwrap runs it under bubblewrap with its own unprivileged uid, private
// namespaces (outbound network only, through slirp4netns, or none), only
// its own directory and a bounded /tmp writable, a seccomp filter, and CPU
// and memory limits in a cgroup of its own. See runtime/README.md for what
// each does and does not protect against.
package sandbox

import (
	"context"
	"errors"
	"net"
	"os/exec"
)

// ErrUnavailable: the sandbox cannot run on this machine (a tool or a
// privilege is missing); the error names what.
var ErrUnavailable = errors.New("sandbox: unavailable")

// App is one program to run.
type App struct {
	// ID names the deployment (used for per-app resources and messages).
	ID string
	// Dir is the materialised commit: the working directory, and the only
	// directory the program may write under Bwrap.
	Dir string
	// Argv is the command: an absolute path, a path relative to Dir
	// ("./server", "bin/app") or a name looked up in PATH.
	Argv []string
	// Env is the complete environment, KEY=value.
	Env []string
	// Listen asks for a port: the sandbox picks it and sets PORT in Env.
	Listen bool
}

// Prepared is a command ready to start, and how to reach it.
type Prepared struct {
	// Cmd is not started yet; the caller sets Stdout and Stderr and starts it.
	Cmd *exec.Cmd
	// Port is the port the program is told to listen on (0 without Listen).
	Port int
	// Started runs once after Cmd.Start (e.g. to find the sandboxed child);
	// nil when there is nothing to do.
	Started func() error
	// Dial connects to the program's port (from the host's side).
	Dial func(ctx context.Context) (net.Conn, error)
	// Release frees what Prepare took (uid, namespace handles, cgroup,
	// network helper); call it after the process has exited.
	Release func()
	// Start starts Cmd when the sandbox must do it itself (e.g. to have
	// the process born inside its cgroup); nil: Cmd.Start.
	Start func() error
	// ExitNote explains an exit the exit status does not (e.g. "killed at
	// its memory limit"), read after the process exited and before
	// Release; nil or "" when there is nothing to add.
	ExitNote func() string
	// Stats reads the resource counters of the program's cgroup; nil when
	// it runs in none.
	Stats func() CgroupStats
}

// Sandbox prepares programs to run.
type Sandbox interface {
	// Prepare returns the command for app; nothing runs yet.
	Prepare(app App) (*Prepared, error)
	// Name is a short name for logs and the README's table ("none", "bwrap").
	Name() string
}
