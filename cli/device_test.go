package cli_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/cli"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/devicelogin"
)

// TestDeviceLogin logs a machine in with a code another, logged-in
// machine approves.
func TestDeviceLogin(t *testing.T) {
	env := cptest.New(t)
	cp := env.CP
	dl, err := devicelogin.New(devicelogin.Config{Interval: time.Second}, devicelogin.Deps{DB: cp.DB, Sealer: cp.Sealer, Keys: cp.Accounts,
		ProjectExists: cp.Projects.Exists})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	api.Mount(mux, devicelogin.Routes(devicelogin.Handlers{S: dl}), api.MountOptions{Authn: cp.Accounts})
	top := http.NewServeMux()
	top.Handle("/api/device/", mux)
	top.Handle("/", cp.Handler())
	srv := httptest.NewServer(top)
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	newConfig := filepath.Join(t.TempDir(), "new")
	stderr := &lockedBuffer{wrote: make(chan struct{}, 1)}
	var stdout bytes.Buffer
	done := make(chan int, 1)
	go func() {
		e := &cli.Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: stderr, ConfigDir: newConfig, Dir: t.TempDir()}
		done <- cli.Run(ctx, e, []string{"login", "--device", "--api", srv.URL})
	}()
	codeRE := regexp.MustCompile(`approve the code ([A-Z]{4}-[A-Z]{4})`)
	var code string
	for code == "" {
		select {
		case <-stderr.wrote:
			if m := codeRE.FindStringSubmatch(stderr.String()); m != nil {
				code = m[1]
			}
		case <-ctx.Done():
			t.Fatalf("login --device printed %q", stderr.String())
		}
	}
	// The other machine: logged in with a key, approves the code.
	oldConfig := filepath.Join(t.TempDir(), "old")
	run := func(config string, args ...string) (int, string) {
		var out, errb bytes.Buffer
		e := &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, ConfigDir: config, Dir: t.TempDir()}
		code := cli.Run(ctx, e, args)
		return code, out.String() + errb.String()
	}
	if c, out := run(oldConfig, "login", "--api", srv.URL, "--key", cptest.OwnerKey); c != 0 {
		t.Fatalf("login: %s", out)
	}
	if c, out := run(oldConfig, "login", "--approve", "BBBB-BBBB"); c != 1 || !strings.Contains(out, "no device login waits for this code") {
		t.Fatalf("approve an unknown code: %d %s", c, out)
	}
	if c, out := run(oldConfig, "login", "--approve", code); c != 0 || !strings.Contains(out, "Approved "+code) {
		t.Fatalf("approve: %d %s", c, out)
	}
	select {
	case c := <-done:
		if c != 0 || !strings.Contains(stdout.String(), "Logged in to workspace") {
			t.Fatalf("login --device ended %d: %s %s", c, stdout.String(), stderr.String())
		}
	case <-ctx.Done():
		t.Fatalf("login --device did not end: %s", stderr.String())
	}
	// The new machine's stored key works.
	if c, out := run(newConfig, "logs", "--project", "nope"); c != 1 || strings.Contains(out, "not logged in") {
		t.Fatalf("the new machine is not logged in: %d %s", c, out)
	}
	if c, out := run(newConfig, "login", "--device", "--key", "x"); c != 2 || !strings.Contains(out, "exclude each other") {
		t.Fatalf("--device --key: %d %s", c, out)
	}
}
