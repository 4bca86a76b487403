package h2

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCurl asks with curl (libcurl's nghttp2) over cleartext HTTP/2 with
// prior knowledge, when curl is installed.
func TestCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed (Debian: apt-get install curl)")
	}
	h := newTestHandler()
	addr := startServer(t, &Server{Handler: h.serve})
	for _, tc := range []struct {
		name, path string
		opts       []string
		body       string
	}{
		{"get", "/", nil, "hello"},
		{"post", "/echo", []string{"--data-binary", "@-"}, "from stdin"},
		{"head", "/big?n=10", []string{"-I"}, ""},
		{"streamed", "/stream?n=3", nil, "\x00\a\x0e"},
		{"trailer", "/trailer", nil, "body before the trailer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "body")
			args := append([]string{"-sS", "--http2-prior-knowledge", "-w", "%{http_version} %{http_code}", "-o", out}, tc.opts...)
			cmd := exec.Command(curl, append(args, "http://"+addr+tc.path)...)
			cmd.Stdin = strings.NewReader("from stdin")
			status, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("curl: %v: %s", err, status)
			}
			body, _ := os.ReadFile(out)
			if tc.name == "head" {
				body = nil // -I writes the header there
			}
			if string(status) != "2 200" || string(body) != tc.body {
				t.Fatalf("curl: %q %q, want \"2 200\" %q", status, body, tc.body)
			}
		})
	}
}
