package h2

import (
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestH2spec runs h2spec (github.com/summerwind/h2spec), every test of
// its HTTP/2 and HPACK suites, against a server of this package over
// cleartext HTTP/2. Without h2spec on PATH it is skipped, except in CI
// (CI set), where it fails.
func TestH2spec(t *testing.T) {
	bin, err := exec.LookPath("h2spec")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("h2spec is not on PATH; install it: go install github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible")
		}
		t.Skip("h2spec is not on PATH; install it: go install github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible")
	}
	srv := &Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if ctx.Request.Header.ContentLength() != 0 {
			ctx.Request.Body() // read the body, as a forwarding handler would
		}
		ctx.SetContentType("text/plain")
		ctx.SetBodyString("h2spec\n")
	}, ReadTimeout: 5 * time.Second}
	addr := startServer(t, srv)
	host, port, _ := net.SplitHostPort(addr)
	args := []string{"-h", host, "-p", port, "-o", "2", "--strict", "-j", t.TempDir() + "/h2spec.xml"}
	if testing.Verbose() {
		args = append(args, "-v")
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("h2spec: %v\n%s", err, out)
	}
	if p := os.Getenv("H2SPEC_OUT"); p != "" {
		os.WriteFile(p, out, 0o644)
	}
	t.Logf("%s", lastLines(out, 3))
}

// lastLines returns the last n lines of b.
func lastLines(b []byte, n int) []byte {
	end := len(b)
	for end > 0 && b[end-1] == '\n' {
		end--
	}
	i := end
	for ; i > 0 && n > 0; i-- {
		if b[i-1] == '\n' {
			n--
			if n == 0 {
				break
			}
		}
	}
	return b[i:end]
}
