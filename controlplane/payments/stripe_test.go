package payments

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func startStripeMock(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("STRIPE_MOCK")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("stripe-mock"); err != nil {
			t.Skip("controlplane/payments: stripe-mock not installed (go install github.com/stripe/stripe-mock@v0.203.0); skipping the Stripe adapter tests")
		}
	}
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

// The stripe processor is chosen by configuration and opens Stripe
// Checkout Sessions (against stripe-mock).
func TestStripeProcessorSelected(t *testing.T) {
	base := startStripeMock(t)
	e := newEnv(t, envOptions{config: func(c *Config) { c.Processor, c.StripeKey, c.StripeBaseURL = "stripe", "sk_test_123", base }})
	if e.svc.Processor().Name() != "stripe" {
		t.Fatal("processor not selected")
	}
	_, account := e.enable("shop")
	c := e.checkout(account, 1500, nil)
	if strings.HasPrefix(c.URL, e.srv.URL) || c.URL == "" || c.Session.Mode != "test" {
		t.Fatalf("%+v", c)
	}
	r := e.owner.do("GET", "/api/payments/"+account+"/sessions/"+c.Session.ID, nil)
	if r.status != 200 && r.status != 502 {
		t.Fatalf("lookup %d %s", r.status, r.body)
	}
	// The hosted page belongs to the test processor only.
	if r := e.client("").do("GET", "/pay/"+c.Session.ID, nil); r.status != 404 {
		t.Fatalf("hosted page for a stripe session: %d", r.status)
	}
}
