// Package pgtest runs a real PostgreSQL server for tests: Debian's
// postgresql package's initdb and postgres, in a temporary directory, on a
// free port, no containers. One server per test binary, started by the
// first test that asks; each test gets a fresh database of its own,
// dropped when it ends.
//
// Without initdb the PostgreSQL half of a test skips with a message that
// names the package; under CI (CI set in the environment) it fails
// instead, so CI cannot pass without running it.
//
// A package that uses pgtest stops the server cleanly with
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// and without it the server is killed when the test binary exits (parent
// death signal), its directory swept by the next run.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/svcplatform/platform/controlplane/store"
)

// Package is the Debian package that provides initdb and postgres.
const Package = "postgresql"

// template is the database migrated once and copied for each test.
const template = "platform_template"

// Server is a running PostgreSQL.
type Server struct {
	dir  string // temporary directory: data/, the log
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when postgres exits

	mu    sync.Mutex // guards admin
	admin *pgx.Conn
	seq   atomic.Int64
}

var (
	once    sync.Once
	current *Server
	errMiss error // initdb not installed
	errRun  error // installed but would not start
)

// ErrNotInstalled is the skip reason when initdb cannot be found.
var ErrNotInstalled = errors.New("pgtest: PostgreSQL is not installed (no initdb on PATH or under /usr/lib/postgresql): install Debian's " + Package + " package (apt-get install " + Package + ") to run the PostgreSQL tests")

// Main runs the package's tests and then stops the server, if one started.
func Main(m *testing.M) {
	code := m.Run()
	if current != nil {
		current.Stop()
	}
	os.Exit(code)
}

// Get returns the binary's server, starting it on first use. It skips t
// when PostgreSQL is not installed (fails under CI) and fails t when the
// server does not start.
func Get(t testing.TB) *Server {
	t.Helper()
	once.Do(func() { current, errMiss, errRun = start() })
	switch {
	case errMiss != nil && os.Getenv("CI") != "":
		t.Fatalf("%v (CI must run the PostgreSQL half)", errMiss)
	case errMiss != nil:
		t.Skip(errMiss.Error())
	case errRun != nil:
		t.Fatal(errRun)
	}
	return current
}

// DSN returns the address of a fresh, empty database that is dropped when
// t ends.
func DSN(t testing.TB) string {
	t.Helper()
	return Get(t).createDB(t, "template0")
}

// MigratedDSN returns the address of a fresh database that already holds
// every migration (a copy of a template migrated once), dropped when t
// ends. Two stores opened on it are two replicas sharing one database.
func MigratedDSN(t testing.TB) string {
	t.Helper()
	return Get(t).createDB(t, template)
}

// Open returns a store on MigratedDSN, closed when t ends.
func Open(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), MigratedDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// SQLitePath returns the path of a new SQLite database file in t's
// temporary directory.
func SQLitePath(t testing.TB) string { return filepath.Join(t.TempDir(), "platform.db") }

// OpenSQLite returns a migrated SQLite store in t's temporary directory.
func OpenSQLite(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), SQLitePath(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Engine is one database engine a store test runs against.
type Engine struct {
	Name string                       // "sqlite" or "postgres", the subtest name
	Open func(t testing.TB) *store.DB // a fresh migrated store for t
	// DSN names a fresh database for store.Open, to open it more than
	// once (replicas, restarts).
	DSN func(t testing.TB) string
}

// Engines lists SQLite and PostgreSQL, for table-driven store tests.
func Engines() []Engine {
	return []Engine{{"sqlite", OpenSQLite, SQLitePath}, {"postgres", Open, MigratedDSN}}
}

// Run runs fn as one subtest per engine, each with a fresh store.
func Run(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	t.Helper()
	for _, e := range Engines() {
		t.Run(e.Name, func(t *testing.T) { fn(t, e.Open(t)) })
	}
}

// DSNFor returns the address of database name on s.
func (s *Server) DSNFor(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, name)
}

// createDB creates a database copied from tmpl, dropped when t ends.
func (s *Server) createDB(t testing.TB, tmpl string) string {
	t.Helper()
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), s.seq.Add(1))
	ctx := context.Background()
	var err error
	for range 50 {
		// A copy needs the template free of connections: one closing an
		// instant ago may still be there (object_in_use): try again.
		err = s.exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, tmpl))
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "55006" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		if err := s.exec(context.Background(), `DROP DATABASE `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return s.DSNFor(name)
}

func (s *Server) exec(ctx context.Context, sql string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.admin.Exec(ctx, sql)
	return err
}

// Stop shuts the server down (fast shutdown) and removes its directory.
func (s *Server) Stop() {
	s.mu.Lock()
	if s.admin != nil {
		s.admin.Close(context.Background())
		s.admin = nil
	}
	s.mu.Unlock()
	if s.cmd.Process != nil {
		s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
	}
	os.RemoveAll(s.dir)
}

// binDir finds the directory of initdb and postgres.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(dirs) == 0 {
		return "", ErrNotInstalled
	}
	return filepath.Dir(dirs[len(dirs)-1]), nil
}

// start runs initdb and postgres. The first error is for "not installed".
func start() (*Server, error, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err, nil
	}
	sweep()
	s, err := launch(bin)
	if err != nil {
		return nil, nil, err
	}
	return s, nil, nil
}

func launch(bin string) (*Server, error) {
	dir, err := os.MkdirTemp("", "platform-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	cred, err := credential(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	var last error
	for range 5 { // another process may take the free port before postgres binds it
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s, err := run(bin, dir, port, cred)
		if err == nil {
			return s, nil
		}
		last = err
	}
	os.RemoveAll(dir)
	return nil, last
}

// run starts postgres on port and waits until it accepts connections.
func run(bin, dir string, port int, cred *syscall.Credential) (*Server, error) {
	logPath := filepath.Join(dir, "postgres.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close()
	if cred != nil {
		os.Chown(logPath, int(cred.Uid), int(cred.Gid))
	}
	s := &Server{dir: dir, port: port, done: make(chan struct{})}
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", filepath.Join(dir, "data"), "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=16MB", "-c", "max_connections=200", "-c", "max_locks_per_transaction=256",
		"-c", "log_min_messages=warning", "-c", "log_min_error_statement=panic")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	// Pdeathsig is per thread: start and wait from one locked thread that
	// lives as long as postgres, so postgres dies with the test binary.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := s.cmd.Start()
		started <- err
		if err == nil {
			s.cmd.Wait()
		}
		close(s.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("pgtest: start postgres: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		c, err := pgx.Connect(ctx, s.DSNFor("postgres"))
		if err == nil {
			s.admin = c
			break
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("pgtest: postgres exited: %s", tail(logPath))
		case <-ctx.Done():
			s.cmd.Process.Kill()
			<-s.done
			return nil, fmt.Errorf("pgtest: postgres not ready after 60s: %v: %s", err, tail(logPath))
		case <-time.After(20 * time.Millisecond): // polling readiness, nothing to wait on
		}
	}
	if err := s.exec(ctx, `CREATE DATABASE `+template+` TEMPLATE template0`); err != nil {
		s.Stop()
		return nil, fmt.Errorf("pgtest: template: %w", err)
	}
	db, err := store.Open(ctx, s.DSNFor(template))
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("pgtest: migrate template: %w", err)
	}
	db.Close()
	return s, nil
}

// credential returns who runs postgres: the postgres user when the tests
// run as root (postgres refuses root), giving it dir; nil otherwise.
func credential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root and no postgres user (Debian's %s package makes it): %w", Package, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// ownerFile holds the pid of the test binary that owns a directory.
const ownerFile = "owner.pid"

// sweep removes the directories of earlier runs whose test binary is gone
// (killed before its cleanup; its postgres died with it).
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "platform-pgtest-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			// Being created right now, or never owned: leave young ones.
			if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > 30*time.Minute {
				os.RemoveAll(d)
			}
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || syscall.Kill(pid, 0) == syscall.ESRCH {
			os.RemoveAll(d)
		}
	}
}
