package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/rules"
)

// The pages beyond the first flow, each driven as a person would and each
// checked by axe-core and saved as a screenshot. They run inside
// TestDashboardInChromium, on its control plane and signed-in owner.

// accountPage turns two-factor on from the account page (the QR code and
// the secret, then a code), shows the API's refusal in place for a wrong
// current password, sends the verification e-mail, and returns the secret.
func accountPage(t *testing.T, e *env, b *browser) string {
	t.Helper()
	b.open("/account")
	b.waitText("main h1", "Your account")
	b.check("account")
	b.clickText("main button", "Set up two-factor")
	b.waitText("main", "Scan this code")
	if !b.has("main svg.qr path", "") || !b.has("main svg.qr[aria-label]", "") {
		t.Fatal("no QR code on the enrolment form")
	}
	secret := strings.TrimSpace(b.text("#totp-secret"))
	b.check("account-totp")
	b.set("form[aria-label='Confirm two-factor'] input[name=code]", e.code(secret))
	b.clickText("main button", "Turn two-factor on")
	b.waitText("main", "Two-factor is on")
	// A code works once: the next sign-in uses the next one.
	e.clk.Advance(30 * time.Second)

	b.set("input[name=currentPassword]", "not the password")
	b.set("input[name=newPassword]", "a new password 2")
	b.set("input[name=newPassword2]", "a new password 2")
	b.clickText("main button", "Change password")
	b.waitText("[role=alert]", "currentPassword is wrong")

	b.clickText("main button", "Send the verification e-mail")
	b.waitText("main [role=status]", "Sent to "+ownerEmail)
	return secret
}

// reposPages: the repo list, its commits, the file tree and a file, and a
// deploy of a commit from the repo page.
func reposPages(t *testing.T, e *env, b *browser, prj, repo string) {
	t.Helper()
	b.open("/repos")
	b.waitText("main table", "site")
	b.check("repos")
	b.clickText("main table a", "site")
	b.waitText("main h1", "Repo site")
	b.waitText("main table", "Deploy commit 2")
	b.check("repo")
	b.clickText("main table a", "#1")
	b.waitText("main h1", "Files at commit 1")
	b.clickText("main .tree a", "index.html")
	b.waitText("main pre.file", "<h1>v1</h1>")
	b.check("repo-files")
	b.open("/repos/" + repo)
	b.waitText("main label", "Deploy to project")
	b.waitText("main table", "Deploy commit 2")
	b.set("select[name=project]", prj)
	b.clickText("main table button", "Deploy commit 2")
	b.waitText("main h1", "Deployment dpl_")
	b.waitText("main dd", "live")
	b.waitText("main", "commit 2")
}

// waitJS waits until js evaluates to true in the page.
func (b *browser) waitJS(what, js string) {
	b.t.Helper()
	ok, err := chromedp.Run(b.bounded(), chromedp.Poll[bool](js, chromedp.WithPollingTimeout(25*time.Second)))
	if err != nil || !ok {
		text, _ := chromedp.Run(b.bounded(), chromedp.Evaluate[string](`location.href + "\n" + document.querySelector("main").innerText`))
		b.t.Fatalf("waiting for %s: %v\npage: %s", what, err, text)
	}
}

var sessionInURL = regexp.MustCompile(`/pay/([A-Za-z0-9_]+)`)

// paymentsPage: the project's Payments page: earnings and a link made with
// its form, paid on the hosted page, then refunded by the owner signed in.
func paymentsPage(t *testing.T, e *env, b *browser, prj string) {
	t.Helper()
	b.open("/projects/" + prj + "/payments")
	b.waitText("main h2", "Earnings")
	b.set("input[name=amount]", "15.00")
	b.set("input[name=description]", "T-shirt")
	b.clickText("main button", "Create link")
	b.waitText(".secret", "/pay/")
	m := sessionInURL.FindStringSubmatch(b.text(".secret a"))
	if m == nil {
		t.Fatalf("no checkout link on the page: %q", b.text(".secret"))
	}
	// The buyer pays on the hosted page.
	form := url.Values{"cardnumber": {"4242424242424242"}, "exp": {"12/34"}, "cvc": {"123"}, "email": {"buyer@example.com"}, "country": {"us"}}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.PostForm(e.base+"/pay/"+m[1], form)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("pay the link: %d", res.StatusCode)
	}
	b.open("/projects/" + prj + "/payments")
	b.waitText("main table", "buyer@example.com")
	b.check("payments")
	b.clickText("main table button", "Refund")
	b.clickText("main table button", "Refund 15.00 USD")
	b.waitText("main table", "refunded 15.00 USD")
	// The links filtered by state: the paid T-shirt link leaves the open
	// ones.
	b.waitText("section[aria-labelledby=links-h] table", "T-shirt")
	b.set("select[name=sessionStatus]", "open")
	b.waitJS("only open links", `(() => { const rows = [...document.querySelectorAll("section[aria-labelledby=links-h] tbody tr")];
		return rows.length > 0 && rows.every(r => r.textContent.includes("open") && !r.textContent.includes("T-shirt")) })()`)
}

// workspacePages: usage and billing, the audit log with a filter, the
// security overview and where its checks are fixed, Shield with the API's
// validation message in place, the CDN and AI.
func workspacePages(t *testing.T, e *env, b *browser) {
	t.Helper()
	b.open("/usage")
	b.waitText("main h2", "Day by day")
	b.waitText("main", "Balance")
	b.waitText("main", "plan")
	b.check("usage")
	b.set("select[name=period]", "30d")
	b.waitText("main", "(30 days)")
	if !strings.Contains(b.path(), "period=30d") {
		t.Fatalf("the period is not in the address: %s", b.path())
	}

	b.open("/audit")
	b.waitText("main table", "project.create")
	b.check("audit")
	b.clickText("main table a", "project.create")
	b.waitText("main", "Clear")
	b.waitJS("only project.create rows", `(() => { const a = [...document.querySelectorAll("main table tbody td:nth-child(2) a")];
		return a.length > 0 && a.every(e => e.textContent === "project.create") })()`)

	b.open("/security")
	b.waitText("main h2", "Score")
	b.waitText("main", "Owners and admins with two-factor")
	b.check("security")
	b.clickText("main a", "Your account: two-factor")
	b.waitText("main h1", "Your account")

	b.open("/security/shield")
	b.waitText("main h2", "What the rules caught")
	b.set("textarea[name=denyIps]", "not-an-address")
	b.clickText("main button", "Save rules")
	b.waitText("[role=alert]", "not-an-address")
	b.check("shield")
	// What the rules caught is asked again every 5 s while the page is
	// open: a count an edge reports shows up without a reload.
	var counted struct {
		Project struct {
			ID string `json:"id"`
		} `json:"project"`
	}
	e.owner("POST", "/api/projects", map[string]any{"name": "counted"}, &counted)
	tok, err := e.cp.EdgeSync().EnsureLocalToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	batch, _ := json.Marshal(snapshot.CountBatch{Batch: "dashboard-1", Counts: []rules.Count{{ID: counted.Project.ID, Rule: rules.RuleDenyList,
		Verdict: rules.Refuse, Day: e.clk.Now().UTC().Format("2006-01-02"), N: 7}}})
	req, _ := http.NewRequest("POST", e.base+snapshot.CountsPath, bytes.NewReader(batch))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("report counts as an edge: %v %v", resp, err)
	}
	resp.Body.Close()
	b.waitText("main .stats dd", "7")
	b.waitText("main table", "counted")

	// The attention list's address for Shield opens its page.
	b.open("/shield")
	b.waitText("main h2", "What the rules caught")
	if p := b.path(); p != "/security/shield" {
		t.Fatalf("/shield opened %s", p)
	}

	b.open("/security/cdn")
	b.waitText("main h2", "Caching")
	b.check("cdn")

	b.open("/ai")
	b.waitText("main h2", "Models")
	b.check("ai")
}

// servicePages: each of a project's services: list, detail and the main
// action.
func servicePages(t *testing.T, e *env, b *browser, prj string) {
	t.Helper()
	// Vectors: a collection made on the page, vectors from the API, a
	// query by vector on the page.
	b.open("/projects/" + prj + "/vectors")
	b.waitText("main h3", "Create a collection")
	b.set("input[name=name]", "docs")
	b.set("select[name=dimensions]", "384")
	b.clickText("main button", "Create collection")
	b.waitText("main h1", "Collection docs")
	col := strings.TrimPrefix(b.path(), "/vectors/")
	unit := func(i int) []float64 { v := make([]float64, 384); v[i] = 1; return v }
	if st := e.owner("POST", "/api/vectors/"+col+"/upsert", map[string]any{"vectors": []map[string]any{
		{"id": "a", "values": unit(0), "metadata": map[string]any{"k": "first"}},
		{"id": "b", "values": unit(1)},
	}}, nil); st != http.StatusAccepted {
		t.Fatalf("upsert: %d", st)
	}
	q, _ := json.Marshal(unit(0))
	b.set("textarea[name=vector]", string(q))
	b.clickText("main form button", "Query")
	b.waitText("main table", "first")
	b.check("vectors")
	// The project's page lists it with its count, and opens it.
	b.open("/projects/" + prj + "/vectors")
	b.waitText("main table", "docs")
	if row := b.text("main table tbody tr"); !strings.Contains(row, "docs") || !strings.Contains(row, "2") || !strings.Contains(row, "384") {
		t.Fatalf("collections row %q", row)
	}
	b.clickText("main table a", "docs")
	b.waitText("main h1", "Collection docs")
	b.open("/projects/" + prj + "/vectors")
	b.waitText("main table", "docs")
	b.check("vectors-list")

	// Mail: a sending domain and its records; the attention list's
	// address for a project's e-mails opens the page.
	b.open("/projects/" + prj + "/emails")
	b.waitText("main h2", "Messages")
	b.waitText("main label", "Domain")
	if p := b.path(); p != "/projects/"+prj+"/mail" {
		t.Fatalf("the e-mails address opened %s", p)
	}
	b.check("mail")
	b.set("input[name=domain]", "mail.example.com")
	b.clickText("main button", "Add domain")
	b.waitText("main h1", "Domain mail.example.com")
	b.waitText("main table", "TXT")
	b.check("mail-domain")

	// Sign-in pools: a pool, a user signed up through the API, disabled
	// on the page.
	b.open("/projects/" + prj + "/auth-pools")
	b.waitText("main label", "Pool name")
	b.set("input[name=name]", "customers")
	b.clickText("main button", "Create pool")
	b.waitText("main h1", "Sign-in pool customers")
	pool := strings.TrimPrefix(b.path(), "/auth-pools/")
	if st := e.call(nil, "", "", "POST", "/api/auth/"+pool+"/signup", map[string]string{"email": "end@example.com", "password": "end user password 1"}, nil); st != 201 {
		t.Fatalf("sign up an end user: %d", st)
	}
	b.open("/auth-pools/" + pool)
	b.waitText("main table", "end@example.com")
	b.clickText("main table button", "Disable")
	b.waitText("main table", "disabled")
	b.check("auth-pool")

	// Memory: a store, a key written and read back on the page.
	b.open("/projects/" + prj + "/memory")
	b.waitText("main label", "Store name")
	b.set("input[name=name]", "cache")
	b.clickText("main button", "Create store")
	b.waitText("main h1", "Memory cache")
	b.set("input[name=key]", "greeting")
	b.set("textarea[name=value]", "hello from memory")
	b.clickText("main button", "Write")
	b.waitText("main table", "greeting")
	b.clickText("main table button", "greeting")
	b.waitText("main pre.file", "hello from memory")
	b.check("memory")

	// Buckets: a bucket, a file uploaded from the page and shared.
	b.open("/projects/" + prj + "/buckets")
	b.waitText("main label", "Bucket name")
	b.set("input[name=name]", "assets")
	b.clickText("main button", "Create bucket")
	b.waitText("main h1", "Bucket assets")
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("bucket contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.do("choose a file", chromedp.SetUploadFiles(chromedp.CSS("#obj-file"), []string{file}))
	b.clickText("main form button", "Upload")
	b.waitText("main table", "notes.txt")
	b.clickText("main table button", "Share")
	b.waitText(".secret", "/storage/")
	b.check("bucket")
	// A file larger than a part goes in parts (a multipart upload) with a
	// progress bar; a larger one is cancelled after its first part, and
	// nothing of it is stored.
	big := filepath.Join(t.TempDir(), "video.bin")
	data := make([]byte, 20<<20+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	b.do("choose a large file", chromedp.SetUploadFiles(chromedp.CSS("#obj-file"), []string{big}))
	b.waitText("main form", "Sent in 3 parts")
	b.clickText("main form button", "Upload")
	b.waitText("main [role=status]", "Uploaded video.bin")
	b.waitText("main table", "video.bin")
	var listed struct {
		Objects []struct {
			Key  string `json:"key"`
			Size int64  `json:"size"`
		} `json:"objects"`
	}
	e.owner("GET", "/api/buckets/"+strings.TrimPrefix(b.path(), "/buckets/")+"/objects?prefix=video", nil, &listed)
	if len(listed.Objects) != 1 || listed.Objects[0].Size != int64(len(data)) {
		t.Fatalf("the multipart upload stored %+v, want %d bytes", listed.Objects, len(data))
	}
	huge := filepath.Join(t.TempDir(), "huge.bin")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(160 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b.do("choose a huge file", chromedp.SetUploadFiles(chromedp.CSS("#obj-file"), []string{huge}))
	b.clickText("main form button", "Upload")
	b.waitJS("the first part sent", `(document.querySelector("#obj-progress")?.value ?? 0) >= 8 * 1024 * 1024`)
	b.clickText("main form button", "Cancel upload")
	b.waitText("main [role=status]", "Upload of huge.bin cancelled: nothing was stored.")
	if b.has("main table", "huge.bin") {
		t.Fatal("a cancelled upload is listed")
	}
	b.check("bucket-uploads")

	// Agents and the project's tabs.
	// Agents: a suggested one made on the page, then paused on its own.
	b.open("/projects/" + prj + "/agents")
	b.waitText("main h2", "Create an agent")
	b.waitText("main h2", "Suggested agents")
	b.waitJS("a suggestion", `document.querySelector("input[name=suggestion]") !== null`)
	b.do("choose a suggestion", chromedp.Click(chromedp.CSS("input[name=suggestion]")))
	b.clickText("main button", "Create the chosen agents")
	b.waitText("main table", "active")
	b.check("agents")
	b.do("open the agent", chromedp.Click(chromedp.CSS("main table a")))
	b.waitText("main h1", "Agent ")
	b.waitText("main button", "Pause")
	b.clickText("main button", "Pause")
	b.waitText("main dd", "paused")
	b.waitText("main", "The agent is paused")
	b.check("agent")
	// Events and chat: events on (the secret shown once), chat refused
	// while events are on (one start mode at a time), events off, chat on
	// with its origins and daily limit.
	if !b.has("main dd", "none") { // a suggestion may come with a schedule
		b.clickText("main form[aria-label=Schedule] button", "Remove schedule")
		b.waitJS("no schedule", `[...document.querySelectorAll("main dt")].some(dt => dt.textContent === "Schedule" && dt.nextElementSibling.textContent === "none")`)
	}
	b.clickText("main button", "Turn events on")
	b.waitText("main .secret", "svcwhsec_")
	b.set("textarea[name=allowedOrigins]", "https://shop.example")
	b.set("input[name=dailyLimit]", "50")
	b.clickText("main button", "Turn chat on")
	b.waitText("[role=alert]", "only one of schedule, events and chat is active at a time")
	b.clickText("main button", "Turn events off")
	b.waitText("main button", "Turn events on")
	b.clickText("main button", "Turn chat on")
	b.waitText("main", "Chat id svcchat_")
	b.check("agent-chat")
}

// mediaPage uploads a video on the page with its progress bar, has it
// processed, and plays it with hls.js in the page's player.
func mediaPage(t *testing.T, e *env, b *browser, prj string) {
	t.Helper()
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		_, err := exec.LookPath(tool)
		need(t, err == nil, "no "+tool+" installed (apt-get install ffmpeg) for the video test")
	}
	dir := t.TempDir()
	clip := filepath.Join(dir, "clip.mp4")
	out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=256x144:rate=10:duration=4",
		"-f", "lavfi", "-i", "sine=frequency=440:duration=4", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
		"-c:a", "aac", "-shortest", clip).CombinedOutput()
	if err != nil {
		t.Fatalf("make a clip: %v: %s", err, out)
	}
	b.open("/projects/" + prj + "/media")
	b.waitText("main h2", "Add a video")
	b.set("input[name=name]", "Intro")
	b.clickText("main button", "Add video")
	b.waitText("main h1", "Video Intro")
	id := strings.TrimPrefix(b.path(), "/media/")
	b.do("choose the video", chromedp.SetUploadFiles(chromedp.CSS("#video-file"), []string{clip}))
	b.clickText("main form button", "Upload")
	b.waitText("main", "Processing")
	b.check("media-processing")
	// The control plane here runs no job workers: process it as they do.
	if err := e.cp.Media().Process(context.Background(), id); err != nil {
		t.Fatalf("process the video: %v", err)
	}
	b.waitText("main dd", "ready")
	b.do("play", chromedp.WaitVisible(chromedp.CSS("video.player")))
	played, err := chromedp.Run(b.bounded(), chromedp.Poll[bool](`(() => { const v = document.querySelector("video.player");
		if (v.paused) v.play().catch(() => {}); return v.currentTime > 0.5 && v.videoWidth > 0 })()`, chromedp.WithPollingTimeout(25*time.Second)))
	if err != nil || !played {
		text, _ := chromedp.Run(b.bounded(), chromedp.Evaluate[string](`document.querySelector("main").innerText`))
		t.Fatalf("the video does not play (%v): %s", err, text)
	}
	b.check("media")
	b.open("/projects/" + prj + "/media")
	b.waitText("main table", "Intro")
	b.check("media-list")
}

// viewerPayments: a viewer sees why refunds are not offered, and the
// refund forced from the viewer's page is refused.
func viewerPayments(t *testing.T, e *env, b *browser, prj string) {
	t.Helper()
	b.open("/projects/" + prj + "/payments")
	b.waitText("main", "Withdrawals and refunds need the owner signed in")
	if b.has("main button", "Refund") {
		t.Fatal("a viewer is offered Refund")
	}
	b.check("payments-viewer")
	var d struct {
		Account struct {
			ID string `json:"id"`
		} `json:"account"`
		Payments []struct {
			ID string `json:"id"`
		} `json:"payments"`
	}
	e.owner("GET", "/api/projects/"+prj+"/payments", nil, &d)
	if len(d.Payments) == 0 {
		t.Fatal("no payment to refund")
	}
	type answer struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	}
	got, err := chromedp.Run(b.bounded(), chromedp.Evaluate[answer](fmt.Sprintf(`fetch("/api/payments/%s", {method: "PATCH",
		headers: {"X-CSRF-Token": localStorage.getItem("platform.csrf"), "Content-Type": "application/json"},
		body: JSON.stringify({action: "refund", paymentId: %q})}).then(async r => ({status: r.status, code: (await r.json()).error?.code ?? ""}))`,
		d.Account.ID, d.Payments[0].ID), chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != http.StatusForbidden {
		t.Fatalf("the viewer's forced refund: %+v", got)
	}
}

// viewerPages: pages a viewer reads, with what they may not do said in
// place of the controls.
func viewerPages(t *testing.T, b *browser) {
	t.Helper()
	b.open("/usage")
	b.waitText("main", "Billing (balance and spending limit) is for admins")
	b.check("usage-viewer")
	b.open("/security/shield")
	b.waitText("main", "Changing Shield needs an admin")
	if b.has("main button", "Save rules") {
		t.Fatal("a viewer is offered Save rules")
	}
	b.check("shield-viewer")
	if b.has("header nav", "Audit log") {
		t.Fatal("a viewer is offered the audit log")
	}
}
