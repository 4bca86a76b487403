// Package blobstest starts a real S3 server for tests: versitygw
// (github.com/versity/versitygw) serving a temporary directory through its
// posix backend, so the S3 blob backend is tested against the protocol
// rather than a fake.
package blobstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/internal/freeport"
)

// Install is the command that installs the server the tests need.
const Install = "go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// Server is a running versitygw.
type Server struct {
	// Endpoint is the server's URL, http://127.0.0.1:PORT.
	Endpoint string
	// AccessKey and SecretKey are its root credentials, random per server.
	AccessKey, SecretKey string
	// Dir is the directory it serves; each bucket is a subdirectory.
	Dir string
	// CAFile is the PEM of the CA that signed the server's certificate,
	// when it serves HTTPS (StartS3TLS).
	CAFile string

	certFile, keyFile string
	client            *http.Client
}

// Binary returns the versitygw executable: $VERSITYGW, else versitygw on
// PATH, else in $GOBIN or $GOPATH/bin (where go install puts it), else "".
func Binary() string {
	if p := os.Getenv("VERSITYGW"); p != "" {
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	if d := os.Getenv("GOPATH"); d != "" {
		dirs = append(dirs, filepath.Join(filepath.SplitList(d)[0], "bin"))
	}
	if h, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(h, "go", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "versitygw")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// StartS3 starts versitygw on a free loopback port over a temporary
// directory and stops it when the test ends. Without the binary the test
// is skipped with the command that installs it, except under CI (CI set),
// where it fails: there the S3 half must run.
func StartS3(t testing.TB) *Server {
	t.Helper()
	return startS3(t, false)
}

// StartS3TLS is StartS3 serving HTTPS with a certificate for 127.0.0.1
// signed by a CA of its own, written to Server.CAFile.
func StartS3TLS(t testing.TB) *Server {
	t.Helper()
	return startS3(t, true)
}

func startS3(t testing.TB, withTLS bool) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("versitygw not found (PATH, $VERSITYGW, $GOPATH/bin); install it: %s", Install)
		}
		t.Skipf("S3 half skipped: versitygw not found (PATH, $VERSITYGW, $GOPATH/bin); install it: %s", Install)
	}
	tmp := t.TempDir()
	s := &Server{AccessKey: "test" + randHex(8), SecretKey: randHex(20), Dir: filepath.Join(tmp, "root")}
	for _, d := range []string{s.Dir, filepath.Join(tmp, "meta")} {
		if err := os.Mkdir(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	s.client = &http.Client{Timeout: 5 * time.Second}
	if withTLS {
		if err := s.makeCerts(tmp); err != nil {
			t.Fatal(err)
		}
	}
	var lastErr error
	for range 3 { // a port picked free can be taken before versitygw binds it
		addr, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if lastErr = s.start(t, bin, addr); lastErr == nil {
			return s
		}
	}
	t.Fatalf("blobstest: versitygw did not start: %v", lastErr)
	return nil
}

func (s *Server) start(t testing.TB, bin, addr string) error {
	var out syncBuffer
	// The sidecar keeps object metadata beside, not in, extended
	// attributes, which tmpfs and overlay directories may lack.
	args := []string{"--access", s.AccessKey, "--secret", s.SecretKey, "--port", addr, "--quiet"}
	s.Endpoint = "http://" + addr
	if s.certFile != "" {
		args = append(args, "--cert", s.certFile, "--key", s.keyFile)
		s.Endpoint = "https://" + addr
	}
	args = append(args, "posix", "--sidecar", filepath.Join(filepath.Dir(s.Dir), "meta"), s.Dir)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	// Ready when it answers HTTP (an unsigned request gets a 403).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+"/", nil)
		if resp, err := s.client.Do(req); err == nil {
			resp.Body.Close()
			t.Cleanup(func() {
				stop()
				if t.Failed() {
					t.Logf("versitygw output:\n%s", out.String())
				}
			})
			return nil
		}
		select {
		case err := <-exited:
			exited <- err
			stop()
			return fmt.Errorf("exited (%v): %s", err, out.String())
		case <-ctx.Done():
			stop()
			return fmt.Errorf("not answering on %s: %s", addr, out.String())
		case <-tick.C:
		}
	}
}

// Config returns an S3Config for bucket (created when missing) under
// prefix on this server.
func (s *Server) Config(bucket, prefix string) blobs.S3Config {
	return blobs.S3Config{
		Endpoint: s.Endpoint, Bucket: bucket, Prefix: prefix, Region: "us-east-1", PathStyle: true,
		AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey, CreateBucket: true, CAFile: s.CAFile,
	}
}

// Backend opens an S3 backend on a new bucket of this server.
func (s *Server) Backend(t testing.TB, prefix string) *blobs.S3 {
	t.Helper()
	cfg := s.Config("blobs-"+randHex(6), prefix)
	cfg.SpoolDir = t.TempDir()
	b, err := blobs.NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func freePort() (string, error) {
	a, err := freeport.Addr()
	if err != nil {
		return "", fmt.Errorf("blobstest: free port: %w", err)
	}
	return a, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// syncBuffer collects a process's output from its copying goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
