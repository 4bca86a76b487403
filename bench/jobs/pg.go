package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgServer is the PostgreSQL both libraries run on: one the command
// started (Debian's postgresql, default settings: fsync and
// synchronous_commit on) or one named by -pg-dsn.
type pgServer struct {
	admin   *pgx.Conn
	cfg     *pgx.ConnConfig
	version string
	cmd     *exec.Cmd
	done    chan struct{}
	dir     string // removed by stop
}

// startPostgres connects to dsn, or starts a server in a new temporary
// directory (removed by stop) when dsn is "".
func startPostgres(ctx context.Context, dsn string) (*pgServer, error) {
	s := &pgServer{}
	if dsn == "" {
		dir, err := os.MkdirTemp("", "bench-jobs-pg-")
		if err != nil {
			return nil, err
		}
		s.dir = dir
		if dsn, err = s.launch(ctx, filepath.Join(dir, "pg")); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("-pg-dsn is not a PostgreSQL address")
	}
	s.cfg = cfg
	deadline := time.Now().Add(60 * time.Second)
	for {
		s.admin, err = pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("postgres not ready after 60s: %w", err)
		}
		time.Sleep(50 * time.Millisecond) // readiness poll of a process we started
	}
	if err := s.admin.QueryRow(ctx, `SHOW server_version`).Scan(&s.version); err != nil {
		s.stop()
		return nil, err
	}
	s.version = "PostgreSQL " + s.version
	return s, nil
}

// launch runs initdb and postgres (as the postgres user when root) in dir
// on a free loopback port and returns the admin address.
func (s *pgServer) launch(ctx context.Context, dir string) (string, error) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		if p, err := exec.LookPath("initdb"); err == nil {
			bins = []string{p}
		}
	}
	if len(bins) == 0 {
		return "", errors.New("no initdb: install Debian's postgresql (make testdeps) or pass -pg-dsn")
	}
	sort.Strings(bins)
	bin := filepath.Dir(bins[len(bins)-1])
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return "", fmt.Errorf("running as root and no postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		os.Chown(filepath.Dir(dir), uid, gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return "", err
		}
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return "", fmt.Errorf("initdb: %w\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	logf, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		return "", err
	}
	defer logf.Close()
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir,
		"-c", "max_connections=200", "-c", "log_min_messages=warning")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return "", fmt.Errorf("start postgres: %w", err)
	}
	s.done = make(chan struct{})
	go func() { s.cmd.Wait(); close(s.done) }()
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), nil
}

// createDB makes a fresh, empty database (byte-order collation, as the
// platform's store requires) and returns its address.
func (s *pgServer) createDB(ctx context.Context, name string) (string, error) {
	if _, err := s.admin.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
		return "", err
	}
	if _, err := s.admin.Exec(ctx, `CREATE DATABASE `+name+` TEMPLATE template0 LOCALE 'C'`); err != nil {
		return "", err
	}
	u := url.URL{Scheme: "postgres", Host: net.JoinHostPort(s.cfg.Host, strconv.Itoa(int(s.cfg.Port))), Path: "/" + name, RawQuery: "sslmode=disable"}
	if s.cfg.Password != "" {
		u.User = url.UserPassword(s.cfg.User, s.cfg.Password)
	} else {
		u.User = url.User(s.cfg.User)
	}
	return u.String(), nil
}

func (s *pgServer) stop() {
	if s.admin != nil {
		s.admin.Close(context.Background())
		s.admin = nil
	}
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
		s.cmd = nil
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
		s.dir = ""
	}
}
