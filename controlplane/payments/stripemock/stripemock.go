// Package stripemock starts Stripe's own mock server, stripe-mock
// (github.com/stripe/stripe-mock), for tests of the Stripe adapter.
package stripemock

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Install is how stripe-mock is installed (.ci/run does it).
const Install = "go install github.com/stripe/stripe-mock@v0.203.0"

// Start runs stripe-mock (on PATH, or at $STRIPE_MOCK) on free loopback
// ports for HTTP and HTTPS, stops it when the test ends, and returns its
// HTTP base URL. Without stripe-mock the test skips naming how to install
// it, or fails when CI is set (CI must run it).
func Start(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("STRIPE_MOCK")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("stripe-mock"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("stripe-mock is not installed (%s)", Install)
			}
			t.Skipf("stripe-mock is not installed (%s); skipping the Stripe adapter tests", Install)
		}
	}
	// Both listeners on free ports: two test binaries may run at once.
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, a, ok := strings.Cut(sc.Text(), "Listening for HTTP at address: "); ok {
				addr <- strings.TrimSpace(a)
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("stripe-mock did not start")
	}
	return ""
}
