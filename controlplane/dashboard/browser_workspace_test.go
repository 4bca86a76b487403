package dashboard_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Workspaces and plans, custom domains and device login approval, each
// driven as a person would, checked by axe-core and saved as a screenshot.
// They run inside TestDashboardInChromium.

// domainsPage: the project's custom domains at the address the attention
// list links to: one added (its records to publish), looked up (the DNS
// has nothing, so it stays pending with the problem in words), its www
// redirect and removal offered.
func domainsPage(t *testing.T, e *env, b *browser, prj string) {
	t.Helper()
	b.open("/projects/" + prj + "/domains")
	b.waitText("main h2", "Custom domains")
	if p := b.path(); p != "/projects/"+prj+"/domains" {
		t.Fatalf("/projects/{id}/domains opened %s", p)
	}
	b.waitText("main", "None yet")
	b.set("input[name=domain]", "shop.example.test")
	b.clickText("main form button[type=submit]", "Add domain")
	b.waitText("main article h3", "shop.example.test")
	b.waitText("main article", "pending")
	b.waitText("main article table", "TXT")
	b.waitText("main article", "Copy")
	b.check("domains")
	b.clickText("main article button", "Verify shop.example.test now")
	b.waitText("main article", "checked")
	b.waitJS("the failed look-up said in words", `!!document.querySelector("main article .note") && document.querySelector("main article .note").textContent.length > 10`)
	b.check("domains-verified")
	var list struct {
		Domains []struct {
			State   string `json:"state"`
			Problem string `json:"problem"`
		} `json:"domains"`
	}
	e.owner("GET", "/api/projects/"+prj+"/domains", nil, &list)
	if len(list.Domains) != 1 || list.Domains[0].State != "pending" || !b.has("main article .note", list.Domains[0].Problem) {
		t.Fatalf("the domain after the look-up: %+v", list.Domains)
	}
	b.clickText("main article button", "Remove")
	b.clickText("main article button", "Remove shop.example.test")
	b.waitText("main", "None yet")
}

// devicePage: a command line starts a device login through the public API;
// the signed-in owner opens /device?code=..., sees what asks and approves;
// the command line's poll then gets a key that works.
func devicePage(t *testing.T, e *env, b *browser) {
	t.Helper()
	var code struct {
		DeviceCode      string `json:"deviceCode"`
		UserCode        string `json:"userCode"`
		VerificationURI string `json:"verificationUri"`
	}
	if st := e.call(nil, "", "", "POST", "/api/device/code", map[string]any{"clientName": "platform CLI on build-box"}, &code); st != http.StatusCreated {
		t.Fatalf("start a device login: %d", st)
	}
	var pending struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if st := e.call(nil, "", "", "POST", "/api/device/token", map[string]any{"deviceCode": code.DeviceCode}, &pending); st != http.StatusBadRequest {
		t.Fatalf("the poll before approval: %d", st)
	}
	b.open("/device?code=" + code.UserCode)
	b.waitText("main dl", "platform CLI on build-box")
	b.waitText("main dl", "pending")
	b.waitText("main details.curl", "platform login --approve "+code.UserCode)
	b.check("device")
	b.clickText("main button", "Approve "+code.UserCode)
	b.waitText("main [role=status]", "Approved")
	b.check("device-approved")
	// The command line's next poll, after the interval it was given.
	e.clk.Advance(10 * time.Second)
	var tok struct {
		Key string `json:"key"`
	}
	if st := e.call(nil, "", "", "POST", "/api/device/token", map[string]any{"deviceCode": code.DeviceCode}, &tok); st != http.StatusOK || tok.Key == "" {
		t.Fatalf("the poll after approval: %d %q", st, tok.Key)
	}
	if st := e.call(nil, tok.Key, "", "GET", "/api/workspace", nil, nil); st != http.StatusOK {
		t.Fatalf("the device's key: %d", st)
	}
	// Typed rather than linked: an unknown code says so.
	b.open("/device")
	b.set("input[name=code]", "BCDF-GHJK")
	b.clickText("main button", "Look up")
	b.waitText("[role=alert]", "")
}

// planAndWorkspaces: the plan table with the current plan marked; an
// upgrade the Balance cannot pay shows what is missing; a downgrade below
// what the workspace holds shows what is over; the workspace's deletion
// lists its blockers; a second workspace is made, switched to from the
// header, cannot be left by its only owner, and is deleted.
func planAndWorkspaces(t *testing.T, e *env, b *browser) {
	t.Helper()
	b.open("/plan")
	b.waitText("main table.plans", "scale")
	b.waitText("main table.plans tr.current", "pro")
	b.check("plans")
	b.clickText("main table button", "Change to scale")
	b.waitText("[role=alert]", "")
	b.waitText("main .note", "short of the change to scale")
	b.check("plan-balance-missing")
	b.clickText("main table button", "Change to hobby")
	b.waitText("main [aria-label='Plan changed']", "Now on hobby")
	b.waitText("main [aria-label='Plan changed']", "Over the new plan's limits")
	b.waitText("main table.plans tr.current", "hobby")
	b.waitText("header", "hobby plan")
	b.check("plan-over-limits")

	b.open("/workspace")
	b.waitText("main h1", "Workspace Acme")
	b.clickText("main button", "Delete workspace")
	b.set("input[name=confirm]", "Acme")
	b.clickText("main button", "Delete Acme for good")
	b.waitText("[aria-label='What blocks the deletion']", "link")
	b.check("workspace-delete-blocked")

	b.open("/workspace")
	b.set("input[name=wsname]", "Side")
	b.clickText("main form button[type=submit]", "Create workspace")
	b.waitText("main [role=status]", "Created Side")
	b.waitText("main table", "Side")
	b.check("workspace")
	b.open("/")
	b.waitText("header", "Side (owner)")
	if got := b.text("#ws-switch"); !strings.Contains(got, "Side") || !strings.Contains(got, "Acme") {
		t.Fatalf("the switcher lists %q", got)
	}
	side := b.optionValue("#ws-switch", "Side")
	b.set("#ws-switch", side)
	b.waitText("header .brand a", "Side")
	b.waitText("main h1", "Projects")
	b.check("workspace-switched")
	b.open("/workspace")
	b.clickText("main button", "Leave workspace")
	b.clickText("main button", "Leave Side")
	b.waitText("[role=alert]", "owner")
	b.clickText("main button", "Delete workspace")
	b.set("input[name=confirm]", "Side")
	b.clickText("main button", "Delete Side for good")
	b.waitText("header .brand a", "Acme")
}

// optionValue is the value of the option of a select whose text contains
// text.
func (b *browser) optionValue(sel, text string) string {
	b.t.Helper()
	b.waitJS("option "+text, `[...document.querySelectorAll("`+sel+` option")].some(o => o.textContent.includes("`+text+`"))`)
	v, err := chromedp.Run(b.bounded(), chromedp.Evaluate[string](`[...document.querySelectorAll("`+sel+` option")].find(o => o.textContent.includes("`+text+`")).value`))
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

// viewerWorkspace: a viewer sees the plans but is offered no change, and
// is not offered the workspace's deletion.
func viewerWorkspace(t *testing.T, b *browser) {
	t.Helper()
	b.open("/plan")
	b.waitText("main", "Only the workspace's owner changes its plan")
	b.waitText("main table.plans", "scale")
	if b.has("main button", "Change to") {
		t.Fatal("a viewer is offered a plan change")
	}
	b.check("plans-viewer")
	b.open("/workspace")
	b.waitText("main", "Deleting the workspace needs its owner")
	if b.has("main button", "Delete workspace") {
		t.Fatal("a viewer is offered the workspace's deletion")
	}
}
