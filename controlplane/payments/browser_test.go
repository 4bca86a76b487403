package payments

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds a Chromium to drive (Debian's chromium, or $CHROMIUM).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("controlplane/payments: no chromium installed (apt-get install chromium); skipping the hosted page browser test")
	return ""
}

// The hosted page in a real headless Chromium: a success card, a declined
// card, reuse of a paid link and an expired link.
func TestHostedPageInBrowser(t *testing.T) {
	bin := chromium(t)
	e := newEnv(t)
	_, account := e.enable("shop")
	opts := append([]chromedp.ExecAllocatorOption{},
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true), chromedp.Flag("disable-sync", true), chromedp.Flag("mute-audio", true),
		chromedp.UserDataDir(t.TempDir()))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	fill := func(card string) []chromedp.Action[chromedp.Void] {
		return []chromedp.Action[chromedp.Void]{
			chromedp.WaitVisible(chromedp.ID("cardnumber")),
			chromedp.SendKeys(chromedp.ID("email"), "buyer@example.com"),
			chromedp.SendKeys(chromedp.ID("cardnumber"), card),
			chromedp.SendKeys(chromedp.ID("exp"), "12/34"),
			chromedp.SendKeys(chromedp.ID("cvc"), "123"),
			chromedp.Click(chromedp.ID("pay")),
		}
	}
	// visit opens a page and reads the text of one element once visible.
	visit := func(url string, steps []chromedp.Action[chromedp.Void], id string) string {
		t.Helper()
		all := append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(url)}, steps...)
		all = append(all, chromedp.WaitVisible(chromedp.ID(id)))
		if err := chromedp.Do(ctx, all...); err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID(id)))
		if err != nil {
			t.Fatalf("%s: text of #%s: %v", url, id, err)
		}
		return text
	}

	paid := e.checkout(account, 2599, map[string]any{"description": "A mug"})
	if banner := visit(paid.URL, nil, "test-mode"); !strings.Contains(banner, "Test mode") {
		t.Fatalf("banner %q", banner)
	}
	if title := visit(paid.URL, fill("4242 4242 4242 4242"), "title"); title != "Thank you" {
		t.Fatalf("after paying: %q", title)
	}
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || loc != paid.URL+"/done" {
		t.Fatalf("landed on %q %v", loc, err)
	}

	declined := e.checkout(account, 1000, nil)
	if msg := visit(declined.URL, fill("4000 0000 0000 0002"), "error"); !strings.Contains(msg, "declined") {
		t.Fatalf("declined card: %q", msg)
	}
	if title := visit(paid.URL, nil, "title"); title != "Already paid" {
		t.Fatalf("paid link again: %q", title)
	}
	e.clk.Advance(25 * time.Hour)
	if title := visit(declined.URL, nil, "title"); title != "Link expired" {
		t.Fatalf("expired link: %q", title)
	}
	var n int
	e.db.QueryRow(`SELECT count(*) FROM payment_payments`).Scan(&n)
	if n != 1 {
		t.Fatalf("%d payments", n)
	}
}
