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
	"strings"
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
	// Offline keeps the program off the network even when the sandbox
	// gives programs outbound network (Bwrap: loopback only; None cannot
	// enforce it).
	Offline bool
	// Bridges are services of the host the program reaches at a fixed
	// address of its own (the platform's API): see Bridge.
	Bridges []Bridge
}

// Bridge makes one service of the host reachable from inside the sandbox,
// and nothing else of the host: Bwrap listens on 127.0.0.1:Port inside
// the program's network namespace (before the program starts) and hands
// each accepted connection's listener to Serve; None, which shares the
// host's network, lets the program reach HostAddr directly. Either way
// each variable of Env is set to "http://" + the address the program
// uses (replacing a value of the same name in App.Env).
type Bridge struct {
	// Port is the loopback port inside the namespace (Bwrap).
	Port int
	// Env names the variables holding the address, e.g. PLATFORM_API_URL.
	Env []string
	// HostAddr is host:port of the service on the host (None).
	HostAddr func() string
	// Serve serves the connections of the listener inside the namespace
	// until it is closed (Bwrap).
	Serve func(net.Listener)
}

// bridgeEnv returns env without the variables the bridges set, then those
// variables set to the address addr(bridge) gives.
func bridgeEnv(env []string, bridges []Bridge, addr func(Bridge) string) []string {
	if len(bridges) == 0 {
		return env
	}
	drop := map[string]bool{}
	for _, b := range bridges {
		for _, k := range b.Env {
			drop[k] = true
		}
	}
	out := make([]string, 0, len(env)+len(drop))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			out = append(out, kv)
		}
	}
	for _, b := range bridges {
		a := addr(b)
		if a == "" {
			continue
		}
		for _, k := range b.Env {
			out = append(out, k+"=http://"+a)
		}
	}
	return out
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
