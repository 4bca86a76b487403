// Package rtmp runs the live ingest server: Debian's nginx with
// libnginx-mod-rtmp, configured in the platform's data directory and
// supervised as a child process (restarted with backoff when it dies).
// Every publish is checked by an HTTP callback to the control plane
// (on_publish), which may rename the stream; on_update re-checks running
// publishers so ending a stream cuts them. Streams are written as HLS.
package rtmp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrMissing means nginx or its RTMP module is not installed.
var ErrMissing = errors.New("rtmp: live ingest needs Debian packages nginx and libnginx-mod-rtmp")

// DefaultModule is where Debian installs the RTMP module.
const DefaultModule = "/usr/lib/nginx/modules/ngx_rtmp_module.so"

// App is the RTMP application publishers use: rtmp://host:port/App/<key>.
const App = "live"

// HLSApp is the internal application accepted streams are relayed to,
// named by channel id, and written as HLS.
const HLSApp = "hls"

// Config is the ingest server's configuration.
type Config struct {
	// Nginx is the nginx binary ("nginx" on PATH, then /usr/sbin/nginx, when empty).
	Nginx string
	// Module is the RTMP module (DefaultModule when empty).
	Module string
	// Dir holds nginx.conf, its logs and pid, and the HLS output (Dir/hls).
	Dir string
	// Listen is the RTMP address, e.g. 127.0.0.1:1935.
	Listen string
	// Notify is the base URL of the callbacks: Notify+"/publish",
	// "/update", "/done" (carrying a secret path segment).
	Notify string
	// FragmentSeconds is the live HLS fragment length (2 when 0).
	FragmentSeconds int
	// UpdateSeconds is how often running publishers are re-checked (2 when 0).
	UpdateSeconds int
	// Logger receives the supervisor's news.
	Logger *slog.Logger
}

// Find resolves nginx and the module, or returns ErrMissing.
func (c *Config) Find() error {
	if c.Nginx == "" {
		if p, err := exec.LookPath("nginx"); err == nil {
			c.Nginx = p
		} else if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
			c.Nginx = "/usr/sbin/nginx"
		} else {
			return fmt.Errorf("%w: nginx not found", ErrMissing)
		}
	}
	if c.Module == "" {
		c.Module = DefaultModule
	}
	if _, err := os.Stat(c.Module); err != nil {
		return fmt.Errorf("%w: %s not found", ErrMissing, c.Module)
	}
	return nil
}

// HLSDir is where streams are written, one directory per stream name.
func (c Config) HLSDir() string { return filepath.Join(c.Dir, "hls") }

// Render returns nginx.conf for c.
func (c Config) Render() string {
	frag, upd := c.FragmentSeconds, c.UpdateSeconds
	if frag <= 0 {
		frag = 2
	}
	if upd <= 0 {
		upd = 2
	}
	q := func(s string) string { return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"` }
	var b strings.Builder
	fmt.Fprintf(&b, "load_module %s;\n", q(c.Module))
	if os.Geteuid() == 0 {
		// nginx started by root hands connections to workers running as
		// "nobody", who cannot write the platform's private data
		// directory; keep the platform's own identity (run the platform
		// as an unprivileged user in production).
		b.WriteString("user root root;\n")
	}
	fmt.Fprintf(&b, "daemon off;\nmaster_process on;\nworker_processes 1;\npid %s;\nerror_log %s warn;\n",
		q(filepath.Join(c.Dir, "nginx.pid")), q(filepath.Join(c.Dir, "error.log")))
	b.WriteString("events { worker_connections 512; }\n")
	b.WriteString("rtmp {\n  server {\n")
	fmt.Fprintf(&b, "    listen %s;\n    chunk_size 4096;\n", c.Listen)
	fmt.Fprintf(&b, "    notify_method post;\n    notify_update_timeout %ds;\n    notify_update_strict on;\n", upd)
	// Publishers reach the ingest application; an accepted publish is
	// relayed (the callback's redirect) into the HLS application under
	// the channel's id, so no HLS path holds the stream key.
	fmt.Fprintf(&b, "    application %s {\n      live on;\n      record off;\n      deny play all;\n", App)
	fmt.Fprintf(&b, "      on_publish %s;\n      on_update %s;\n      on_publish_done %s;\n    }\n",
		q(c.Notify+"/publish"), q(c.Notify+"/update"), q(c.Notify+"/done"))
	fmt.Fprintf(&b, "    application %s {\n      live on;\n      record off;\n      allow publish 127.0.0.1;\n      deny publish all;\n      deny play all;\n", HLSApp)
	fmt.Fprintf(&b, "      on_publish %s;\n", q(c.Notify+"/relay"))
	// Fragments are named by the system time in milliseconds, not by a
	// sequence that starts again with each stream: a fragment name is
	// never reused for other bytes, so caches (the edge's, players') may
	// keep fragments by name.
	fmt.Fprintf(&b, "      hls on;\n      hls_path %s;\n      hls_nested on;\n      hls_fragment %ds;\n      hls_playlist_length %ds;\n      hls_cleanup on;\n      hls_fragment_naming system;\n",
		q(c.HLSDir()), frag, frag*10)
	b.WriteString("    }\n  }\n}\n")
	return b.String()
}

// Server is a supervised nginx.
type Server struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start writes the configuration, checks it with nginx -t, starts nginx
// and waits until it accepts RTMP connections.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Find(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.HLSDir(), 0o755); err != nil {
		return nil, fmt.Errorf("rtmp: %w", err)
	}
	conf := filepath.Join(cfg.Dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(cfg.Render()), 0o644); err != nil {
		return nil, fmt.Errorf("rtmp: write config: %w", err)
	}
	if out, err := exec.CommandContext(ctx, cfg.Nginx, cfg.args("-t")...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("rtmp: nginx -t: %w: %s", err, strings.TrimSpace(string(out)))
	}
	s := &Server{cfg: cfg, done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	exited, err := s.spawn()
	if err != nil {
		return nil, err
	}
	if err := waitListening(ctx, cfg.Listen, exited); err != nil {
		s.stop()
		return nil, err
	}
	go s.supervise(exited)
	return s, nil
}

func (c Config) args(extra ...string) []string {
	return append([]string{"-p", c.Dir, "-c", filepath.Join(c.Dir, "nginx.conf"), "-e", filepath.Join(c.Dir, "error.log")}, extra...)
}

// spawn starts nginx; the channel closes when it exits.
func (s *Server) spawn() (chan struct{}, error) {
	cmd := exec.Command(s.cfg.Nginx, s.cfg.args()...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("rtmp: start nginx: %w", err)
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	go func() {
		cmd.Wait()
		close(exited)
	}()
	return exited, nil
}

// supervise restarts nginx when it dies, backing off up to 30 s.
func (s *Server) supervise(exited chan struct{}) {
	defer close(s.done)
	backoff := time.Second
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-exited:
		}
		s.cfg.Logger.Error("rtmp: nginx exited; restarting", "in", backoff)
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
		var err error
		if exited, err = s.spawn(); err != nil {
			s.cfg.Logger.Error("rtmp: restart nginx", "err", err)
			exited = make(chan struct{})
			close(exited)
		}
	}
}

// stop ends nginx: SIGQUIT (graceful), then SIGKILL of its group after 5 s.
func (s *Server) stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	pid := cmd.Process.Pid
	syscall.Kill(-pid, syscall.SIGQUIT)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	<-exited
}

// Close stops supervising and ends nginx.
func (s *Server) Close() error {
	s.cancel()
	s.stop()
	<-s.done
	return nil
}

// waitListening waits until addr accepts TCP connections.
func waitListening(ctx context.Context, addr string, exited chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("rtmp: nginx exited at start (see its error.log)")
		case <-ctx.Done():
			return fmt.Errorf("rtmp: nginx not listening on %s: %w", addr, err)
		case <-t.C:
		}
	}
}
