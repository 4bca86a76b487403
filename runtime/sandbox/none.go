package sandbox

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/svcplatform/platform/internal/freeport"
)

// None runs programs as plain child processes of the platform, with the
// platform's uid and full view of the machine. For development and tests
// only: it isolates nothing.
type None struct{}

var _ Sandbox = None{}

// Name implements Sandbox.
func (None) Name() string { return "none" }

// Prepare implements Sandbox: a free loopback port is picked for PORT.
func (None) Prepare(app App) (*Prepared, error) {
	argv0, err := resolveArgv0(app.Dir, app.Argv[0])
	if err != nil {
		return nil, err
	}
	p := &Prepared{Release: func() {}}
	env := bridgeEnv(app.Env, app.Bridges, func(b Bridge) string {
		if b.HostAddr == nil {
			return ""
		}
		return b.HostAddr()
	})
	if app.Listen {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		p.Port = port
		env = append(env[:len(env):len(env)], "PORT="+strconv.Itoa(port))
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		p.Dial = func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	cmd := exec.Command(argv0, app.Argv[1:]...)
	cmd.Dir = app.Dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.Cmd = cmd
	return p, nil
}

// resolveArgv0 makes a relative path with a slash relative to dir and
// looks a bare name up in the platform's PATH.
func resolveArgv0(dir, argv0 string) (string, error) {
	switch {
	case filepath.IsAbs(argv0):
		return argv0, nil
	case strings.ContainsRune(argv0, '/'):
		if !filepath.IsLocal(argv0) {
			return "", fmt.Errorf("sandbox: run %q leaves the deployment directory", argv0)
		}
		return filepath.Join(dir, argv0), nil
	default:
		p, err := exec.LookPath(argv0)
		if err != nil {
			return "", fmt.Errorf("sandbox: run %q: %w", argv0, err)
		}
		return p, nil
	}
}

// freePort picks a free loopback port, outside the kernel's ephemeral
// range (package freeport), so the edge's own outgoing connections never
// take it before the app binds it. Another process may still take it; the
// app then fails its health check and is restarted on a new port.
func freePort() (int, error) {
	p, err := freeport.Port()
	if err != nil {
		return 0, fmt.Errorf("sandbox: pick a port: %w", err)
	}
	return p, nil
}
