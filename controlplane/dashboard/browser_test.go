package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/dashboard"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/internal/freeport"
	"github.com/svcplatform/platform/internal/passhash"
)

const (
	ownerEmail    = "owner@example.com"
	ownerPassword = "owner password 1"
	ownerKey      = "dashboard-test-owner-key-0123456789"
)

// need skips a test that lacks something a developer installs, naming
// it; in CI (CI set) it fails instead, as .ci/run installs everything.
func need(t *testing.T, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("controlplane/dashboard: %s (CI must run the browser tests)", what)
	}
	t.Skipf("controlplane/dashboard: %s; skipping the browser test", what)
}

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
	need(t, false, "no chromium installed (apt-get install chromium)")
	return ""
}

// axeSource is axe-core from the dashboard's lockfile.
func axeSource(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "web", "dashboard", "node_modules", "axe-core", "axe.min.js"))
	need(t, err == nil, "axe-core is not installed (make build runs npm ci in web/dashboard)")
	return string(b)
}

// screenshotDir is where the page screenshots go: $PLATFORM_TEST_ARTIFACTS/dashboard,
// else a folder of the system's temporary directory, kept after the test.
func screenshotDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("PLATFORM_TEST_ARTIFACTS")
	if base == "" {
		base = filepath.Join(os.TempDir(), "platform-test-artifacts")
	}
	dir := filepath.Join(base, "dashboard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// env is a control plane on a loopback port with the dashboard built in.
type env struct {
	t    *testing.T
	cp   *controlplane.ControlPlane
	clk  *clock.Fake
	base string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	// Near real time: the browser keeps the session cookie until its
	// expiry, which the control plane's clock sets.
	clk := clock.NewFake(time.Now().Truncate(time.Second))
	cp, err := controlplane.New(context.Background(), controlplane.Config{
		DataDir: t.TempDir(), AppsDomain: "apps.test", Clock: clk, APIBaseURL: "http://" + addr,
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		Bootstrap:        accounts.BootstrapConfig{WorkspaceName: "Acme", OwnerEmail: ownerEmail, Plan: plans.Pro, Key: ownerKey},
		OriginProbeEvery: -1, AllowPrivateNetworks: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	cp.Accounts.SetHashParams(passhash.Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		cp.Close()
		t.Fatal(err)
	}
	srv := &http.Server{Handler: cp.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		cp.Close()
	})
	return &env{t: t, cp: cp, clk: clk, base: "http://" + addr}
}

// call makes an API call with a key (or a client's cookie jar) and decodes
// the answer into out when given.
func (e *env) call(c *http.Client, key, csrf, method, path string, body any, out any) int {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.base+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if csrf != "" {
		req.Header.Set("X-CSRF-Token", csrf)
	}
	if c == nil {
		c = http.DefaultClient
	}
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return res.StatusCode
}

func (e *env) owner(method, path string, body, out any) int {
	e.t.Helper()
	return e.call(nil, ownerKey, "", method, path, body, out)
}

func (e *env) code(secret string) string {
	e.t.Helper()
	c, err := auth.TOTPCode(secret, auth.TOTPStep(e.clk.Now()))
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// waitDeployed waits for a deployment to leave the deploying state.
func (e *env) waitDeployed(id string) string {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var d struct {
			Deployment struct {
				State string `json:"state"`
			} `json:"deployment"`
		}
		e.owner("GET", "/api/deployments/"+id, nil, &d)
		if d.Deployment.State != "deploying" || time.Now().After(deadline) {
			return d.Deployment.State
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// newBrowser starts a headless Chromium of its own (its own profile, so
// its own cookies) and returns its tab.
func newBrowser(t *testing.T, bin, base, axe, shots string) *browser {
	t.Helper()
	opts := append([]chromedp.ExecAllocatorOption{},
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-extensions", true), chromedp.Flag("disable-sync", true), chromedp.Flag("mute-audio", true),
		chromedp.WindowSize(1280, 860), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser, without a deadline
		t.Fatal(err)
	}
	return &browser{t: t, ctx: ctx, base: base, axe: axe, shot: shots}
}

// browser drives one Chromium tab (one browser context: its own cookies).
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	axe  string
	shot string // screenshot folder
}

// bounded is the tab's context with a deadline for one step; it ends with
// the test.
func (b *browser) bounded() context.Context {
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	b.t.Cleanup(cancel)
	return ctx
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// open loads a page and waits for its heading; the log says how long the
// page took to show it (a figure, not a limit: the test may run under the
// race detector).
func (b *browser) open(path string) {
	b.t.Helper()
	began := time.Now()
	b.do("open "+path, chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS("main h1")))
	b.t.Logf("%s: usable in %d ms", path, time.Since(began).Milliseconds())
}

// waitText waits until the element's text contains want.
func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	js := fmt.Sprintf(`[...document.querySelectorAll(%q)].some(e => e.textContent.includes(%q))`, sel, want)
	deadline := time.Now().Add(30 * time.Second)
	for {
		// The page polls itself; a navigation ends that poll, and the next
		// one runs in the new document.
		ctx, cancel := context.WithTimeout(b.ctx, time.Until(deadline))
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(time.Until(deadline))))
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			text, _ := chromedp.Run(b.bounded(), chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
			b.t.Fatalf("waiting for %q in %s: %v\npage: %s", want, sel, err, text)
		}
	}
}

func (b *browser) has(sel, text string) bool {
	b.t.Helper()
	js := fmt.Sprintf(`[...document.querySelectorAll(%q)].some(e => e.textContent.includes(%q))`, sel, text)
	v, err := chromedp.Run(b.bounded(), chromedp.Evaluate[bool](js))
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

// clickText clicks the first element matching sel whose text contains text.
func (b *browser) clickText(sel, text string) {
	b.t.Helper()
	js := fmt.Sprintf(`(() => { const e = [...document.querySelectorAll(%q)].find(e => e.textContent.includes(%q)); if (!e) return false; e.click(); return true })()`, sel, text)
	ok, err := chromedp.Run(b.bounded(), chromedp.Evaluate[bool](js))
	if err != nil || !ok {
		b.t.Fatalf("no %s with text %q to click (%v)", sel, text, err)
	}
}

// set gives a form field a value the way typing does (input events).
func (b *browser) set(sel, value string) {
	b.t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false;
		Object.getOwnPropertyDescriptor(Object.getPrototypeOf(e), "value").set.call(e, %q);
		e.dispatchEvent(new Event(e.tagName === "SELECT" ? "change" : "input", {bubbles: true})); return true })()`, sel, value)
	ok, err := chromedp.Run(b.bounded(), chromedp.Evaluate[bool](js))
	if err != nil || !ok {
		b.t.Fatalf("no field %s (%v)", sel, err)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func (b *browser) path() string {
	b.t.Helper()
	loc, err := chromedp.Run(b.bounded(), chromedp.Location())
	if err != nil {
		b.t.Fatal(err)
	}
	return strings.TrimPrefix(loc, b.base)
}

type violation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// violations runs axe-core on the page and returns its serious and
// critical violations.
func (b *browser) violations() []violation {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof axe !== "undefined"`))
	if err == nil && !loaded {
		// Evaluated by the browser's devtools, which the page's CSP does not
		// govern.
		_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](b.axe+"\n;true"))
	}
	if err != nil {
		b.t.Fatalf("inject axe-core: %v", err)
	}
	vs, err := chromedp.Run(ctx, chromedp.Evaluate[[]violation](`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations
		.filter(v => v.impact === "serious" || v.impact === "critical")
		.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(" "))})))`, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("axe: %v", err)
	}
	return vs
}

// scriptBudget is the most script a page may load, in bytes on the wire
// (what the dashboard sends, gzip-encoded).
const scriptBudget = 200 << 10

// scriptBytes is how many bytes of script the document has loaded since
// it was opened (each file once, as sent: encodedBodySize).
func (b *browser) scriptBytes() int {
	b.t.Helper()
	n, err := chromedp.Run(b.bounded(), chromedp.Evaluate[int](`(() => { const seen = new Set(); let n = 0;
		for (const e of performance.getEntriesByType("resource")) {
			const u = new URL(e.name); if (!u.pathname.endsWith(".js") || seen.has(u.pathname)) continue;
			seen.add(u.pathname); n += e.encodedBodySize; }
		return n; })()`))
	if err != nil {
		b.t.Fatalf("script bytes: %v", err)
	}
	return n
}

// check fails the test on any serious or critical axe-core violation of
// the page or on a page past the script budget, and saves a full-page
// screenshot as name.png.
func (b *browser) check(name string) {
	b.t.Helper()
	for _, v := range b.violations() {
		b.t.Errorf("axe on %s: %s %s (%s) at %v", name, v.Impact, v.ID, v.Help, v.Nodes)
	}
	if n := b.scriptBytes(); n > scriptBudget {
		b.t.Errorf("%s loaded %d KB of script, past the %d KB budget", name, n>>10, scriptBudget>>10)
	} else {
		b.t.Logf("%s: %d KB of script", name, n>>10)
	}
	png, err := chromedp.Run(b.bounded(), chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot of %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.shot, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// dashboardBuilt: whether this binary embeds a dashboard build.
var dashboardBuilt = dashboard.New().Built()

var projectPath = regexp.MustCompile(`^/projects/(prj_[A-Za-z0-9]+)$`)

// TestDashboardInChromium uses the dashboard as people do, in a real
// headless Chromium against a whole control plane: the owner sets a
// password from the setup link, signs in with a TOTP code, creates a
// project, sets a variable, deploys and rolls back, creates a database and
// runs a query, sees why a project cannot be deleted, invites a viewer
// and makes and revokes a key; the viewer is offered no delete button and
// the server refuses the delete when forced. axe-core checks every page
// and each page is saved as a screenshot.
func TestDashboardInChromium(t *testing.T) {
	if os.Getenv("PLATFORM_TEST_STORE") == "postgres" {
		t.Skip("the dashboard's browser test runs once, in the pass on SQLite")
	}
	bin := chromium(t)
	need(t, dashboardBuilt, "the dashboard is not built into this binary (run make build)")
	axe := axeSource(t)
	e := newEnv(t)
	shots := screenshotDir(t)
	t.Logf("screenshots in %s", shots)

	owner := newBrowser(t, bin, e.base, axe, shots)

	// The setup link that `make run` prints on a new data directory.
	token := e.cp.Bootstrap.SetupToken
	owner.open("/setup?token=" + token)
	if strings.Contains(owner.path(), "svcsetup_") {
		t.Fatalf("the setup token stays in the address bar: %s", owner.path())
	}
	owner.set("input[name=password]", ownerPassword)
	owner.set("input[name=password2]", ownerPassword)
	owner.check("setup")
	owner.do("set the password", chromedp.Click(chromedp.CSS("form button[type=submit]")))
	owner.waitText("main h1", "Projects")

	// Two-factor on from the account page, then sign out and in again
	// with a code.
	secret := accountPage(t, e, owner)
	owner.clickText("header button", "Sign out")
	owner.waitText("main h1", "Sign in")
	owner.do("type e-mail and password",
		chromedp.SendKeys(chromedp.CSS("input[name=email]"), ownerEmail),
		chromedp.SendKeys(chromedp.CSS("input[name=password]"), ownerPassword),
		chromedp.Click(chromedp.CSS("form button[type=submit]")))
	owner.waitText("[role=alert]", "wrong e-mail, password or code")
	owner.check("signin")
	owner.do("type the code",
		chromedp.SendKeys(chromedp.CSS("input[name=code]"), e.code(secret)),
		chromedp.Click(chromedp.CSS("form button[type=submit]")))
	owner.waitText("main h1", "Projects")
	owner.waitText("header", ownerEmail)

	// A project, made on the home page.
	owner.clickText("button", "New project")
	owner.set("input[name=name]", "Shop")
	owner.clickText("form button[type=submit]", "Create project")
	owner.waitText("main h1", "Shop")
	m := projectPath.FindStringSubmatch(owner.path())
	if m == nil {
		t.Fatalf("after creating a project the page is %s", owner.path())
	}
	prj := m[1]
	owner.waitText("main", "not deployed")
	owner.check("project")

	// A variable: hidden until shown.
	owner.clickText("nav[aria-label=Project] a", "Variables")
	owner.waitText("main h2", "Environment variables")
	owner.set("input[name=key]", "API_TOKEN")
	owner.set("input[name=value]", "s3cret-value")
	owner.clickText("form button[type=submit]", "Save variable")
	owner.waitText("main table", "API_TOKEN")
	if owner.has("main table", "s3cret-value") {
		t.Fatal("a variable's value is on screen before Show")
	}
	owner.clickText("main table button", "Show")
	owner.waitText("main table", "s3cret-value")
	owner.clickText("main table button", "Hide")
	owner.check("variables")

	// Deploy: commit 1 is live through the API, commit 2 is deployed with
	// the page's Deploy button, then the page rolls back to commit 1.
	var repo struct {
		Repo struct {
			ID string `json:"id"`
		} `json:"repo"`
	}
	e.owner("POST", "/api/repos", map[string]any{"name": "site"}, &repo)
	for i := 1; i <= 2; i++ {
		if st := e.owner("POST", "/api/repos/"+repo.Repo.ID+"/commits", map[string]any{"message": fmt.Sprintf("v%d", i),
			"files": []map[string]string{{"path": "index.html", "content": fmt.Sprintf("<h1>v%d</h1>", i)}}}, nil); st != 201 {
			t.Fatalf("push commit %d: %d", i, st)
		}
	}
	var dep struct {
		Deployment struct {
			ID string `json:"id"`
		} `json:"deployment"`
	}
	if st := e.owner("POST", "/api/repos/"+repo.Repo.ID+"/deploy", map[string]any{"projectId": prj, "commit": 1}, &dep); st != 202 {
		t.Fatalf("deploy commit 1: %d", st)
	}
	if st := e.waitDeployed(dep.Deployment.ID); st != "live" {
		t.Fatalf("commit 1: %s", st)
	}
	owner.clickText("nav[aria-label=Project] a", "Overview")
	owner.waitText("main", "Deploy will")
	owner.clickText("main button", "Deploy")
	owner.waitText("main h1", "Deployment dpl_")
	owner.waitText("main dd", "live")
	owner.waitText("main", "commit 2")
	owner.check("deployment")
	owner.clickText("main a", "All deployments")
	owner.waitText("main table", "Roll back to commit 1")
	owner.check("deployments")
	owner.clickText("main table button", "Roll back to commit 1")
	owner.waitText("main h1", "Deployment dpl_")
	owner.waitText("main dd", "live")
	owner.waitText("main", "(rollback)")
	var detail struct {
		Serving struct {
			Deployment struct {
				Commit int `json:"commit"`
			} `json:"deployment"`
		} `json:"serving"`
	}
	e.owner("GET", "/api/projects/"+prj, nil, &detail)
	if detail.Serving.Deployment.Commit != 1 {
		t.Fatalf("after the rollback commit %d serves", detail.Serving.Deployment.Commit)
	}
	// A preview of commit 2 (made through the API, as platform deploy
	// --preview does) is listed with its own address and promoted on the
	// page, without a build.
	if st := e.owner("POST", "/api/repos/"+repo.Repo.ID+"/deploy", map[string]any{"projectId": prj, "commit": 2, "preview": true}, &dep); st != 202 {
		t.Fatalf("deploy a preview: %d", st)
	}
	if st := e.waitDeployed(dep.Deployment.ID); st != "preview" {
		t.Fatalf("preview: %s", st)
	}
	owner.open("/projects/" + prj + "/deployments")
	owner.waitText("main table", "Promote to production")
	if row := owner.text("main table tbody tr"); !strings.Contains(row, "preview") || !strings.Contains(row, "4--") {
		t.Fatalf("the preview's row: %q", row)
	}
	owner.check("deployments-preview")
	owner.clickText("main table button", "Promote to production")
	owner.waitText("main table tbody tr:first-child td:nth-child(2)", "live")
	e.owner("GET", "/api/projects/"+prj, nil, &detail)
	if detail.Serving.Deployment.Commit != 2 {
		t.Fatalf("after the promote commit %d serves", detail.Serving.Deployment.Commit)
	}
	reposPages(t, e, owner, prj, repo.Repo.ID)

	// A database and a query with a parameter.
	owner.open("/projects/" + prj + "/databases")
	owner.check("project-databases")
	owner.set("form[aria-labelledby=db-new-h] input[name=name]", "main")
	owner.clickText("form button[type=submit]", "Create database")
	owner.waitText("main h1", "Database main")
	owner.set("textarea[name=sql]", "CREATE TABLE t(v TEXT); INSERT INTO t(v) VALUES (?)")
	owner.set("textarea[name=params]", `["hi from the page"]`)
	owner.clickText("form button[type=submit]", "Run")
	owner.waitText("main", "1 written")
	owner.set("textarea[name=sql]", "SELECT v FROM t")
	owner.set("textarea[name=params]", "")
	owner.clickText("form button[type=submit]", "Run")
	owner.waitText("main table", "hi from the page")
	// An export, followed on the page, then its file.
	owner.clickText("main button", "Export")
	owner.waitText("main [role=status]", "Download the .sql file")
	dump, err := chromedp.Run(owner.bounded(), chromedp.Evaluate[string](`fetch(document.querySelector("a[download]").href).then(r => r.text())`, chromedp.EvalAwaitPromise))
	if err != nil || !strings.Contains(dump, "hi from the page") {
		t.Fatalf("the export's file (%v): %.300s", err, dump)
	}
	owner.check("database")
	owner.open("/projects/" + prj + "/databases")
	owner.waitText("main table", "main")
	owner.check("project-databases-list")
	owner.open("/databases")
	owner.waitText("main table", "main")
	owner.check("databases")

	// Deleting is blocked while a payment link can be paid: the page lists
	// each blocker.
	var acct struct {
		Account struct {
			ID string `json:"id"`
		} `json:"account"`
	}
	if st := e.owner("POST", "/api/projects/"+prj+"/payments", nil, &acct); st != 200 {
		t.Fatalf("enable payments: %d", st)
	}
	if st := e.owner("POST", "/api/payments/"+acct.Account.ID, map[string]any{"amountCents": 1200}, nil); st != 201 {
		t.Fatalf("payment link: %d", st)
	}
	owner.open("/projects/" + prj + "/settings")
	owner.waitText("main button", "Delete project")
	owner.clickText("main button", "Delete project")
	owner.set("input[name=confirm]", "shop")
	owner.clickText("main button", "Delete Shop for good")
	owner.waitText("[aria-label='What blocks the deletion']", "link")
	owner.check("settings")
	paymentsPage(t, e, owner, prj)

	// Members: a viewer invited with a link.
	owner.open("/members")
	owner.set("form input[name=email]", "viewer@example.com")
	owner.set("form select[name=role]", "viewer")
	owner.clickText("form button[type=submit]", "Invite")
	owner.waitText(".secret", "/accept?token=")
	invite := owner.text(".secret .mono")
	owner.waitText("main table", "viewer@example.com")
	owner.check("members")

	// Keys: the secret once, usable, then revoked.
	owner.open("/keys")
	owner.set("form input[name=name]", "ci")
	owner.clickText("form button[type=submit]", "Create key")
	owner.waitText(".secret", "shown only now")
	key := strings.TrimSpace(owner.text("#new-secret"))
	if st := e.call(nil, key, "", "GET", "/api/workspace", nil, nil); st != 200 {
		t.Fatalf("the new key: %d", st)
	}
	owner.check("keys")
	owner.clickText("main table button", "Revoke")
	owner.clickText("main table button", "Revoke ci")
	owner.waitText("main table", "revoked")
	if st := e.call(nil, key, "", "GET", "/api/workspace", nil, nil); st != 401 {
		t.Fatalf("the revoked key: %d", st)
	}

	workspacePages(t, e, owner)
	servicePages(t, e, owner, prj)
	mediaPage(t, e, owner, prj)
	domainsPage(t, e, owner, prj)
	devicePage(t, e, owner)

	owner.open("/nowhere")
	owner.waitText("main h1", "No such page")
	owner.check("not-found")
	// The accessibility check itself: a field without a label is found.
	if _, err := chromedp.Run(owner.bounded(), chromedp.Evaluate[bool](`document.querySelector("main").appendChild(document.createElement("input")) && true`)); err != nil {
		t.Fatal(err)
	}
	if vs := owner.violations(); len(vs) == 0 {
		t.Fatal("axe-core finds nothing wrong with an input that has no label")
	}
	owner.open("/")
	owner.waitText("main table", "Shop")
	owner.waitText("main", "Usage this month")
	owner.check("home")

	// The viewer, in a browser context of their own.
	viewer := newBrowser(t, bin, e.base, axe, shots)
	viewer.do("open the invitation", chromedp.Navigate(invite), chromedp.WaitVisible(chromedp.CSS("main h1")))
	viewer.waitText("main h1", "Accept your invitation")
	viewer.set("input[name=password]", "viewer password 1")
	viewer.set("input[name=password2]", "viewer password 1")
	viewer.check("accept")
	viewer.clickText("form button[type=submit]", "Set password")
	viewer.waitText("header", "viewer@example.com")
	if viewer.has("main button", "New project") {
		t.Fatal("a viewer is offered New project")
	}
	viewer.open("/projects/" + prj + "/settings")
	viewer.waitText("main", "Deleting a project needs an admin")
	if viewer.has("main button", "Delete") {
		t.Fatal("a viewer is offered a delete button")
	}
	viewer.check("settings-viewer")
	viewer.open("/projects/" + prj + "/variables")
	viewer.waitText("main", "Values are shown to developers and above")
	if viewer.has("main", "s3cret-value") {
		t.Fatal("a viewer sees a variable's value")
	}
	viewer.check("variables-viewer")
	viewerPayments(t, e, viewer, prj)
	viewerPages(t, viewer)
	viewerWorkspace(t, viewer)
	// Forced: the same call the owner's button makes, from the viewer's page.
	type answer struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	}
	got, err := chromedp.Run(viewer.bounded(), chromedp.Evaluate[answer](fmt.Sprintf(`fetch("/api/projects/%s", {method: "DELETE",
		headers: {"X-CSRF-Token": localStorage.getItem("platform.csrf")}}).then(async r => ({status: r.status, code: (await r.json()).error?.code ?? ""}))`, prj),
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != http.StatusForbidden {
		t.Fatalf("the viewer's forced delete: %+v", got)
	}
	if st := e.owner("GET", "/api/projects/"+prj, nil, nil); st != 200 {
		t.Fatalf("the project after the viewer's delete: %d", st)
	}
	// Last, as it leaves the workspace on another plan.
	planAndWorkspaces(t, e, owner)
}
