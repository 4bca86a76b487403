package payments

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/payments/processor"
	"github.com/svcplatform/platform/controlplane/plans"
)

func TestCreateCheckoutRefusals(t *testing.T) {
	e := newEnv(t)
	_, account := e.enable("shop")
	meta := func(n int, prefix string) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("%s%d", prefix, i)] = "v"
		}
		return m
	}
	for _, c := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"no amount", map[string]any{}, 400, "invalid_request"},
		{"empty body", "", 400, "invalid_request"},
		{"49 cents", map[string]any{"amountCents": 49}, 400, "amount_out_of_range"},
		{"over a million dollars", map[string]any{"amountCents": 100_000_001}, 400, "amount_out_of_range"},
		{"fraction", map[string]any{"amountCents": 50.5}, 400, "invalid_request"},
		{"amount as text", map[string]any{"amountCents": "100"}, 400, "invalid_request"},
		{"euro", map[string]any{"amountCents": 100, "currency": "eur"}, 400, "currency_unsupported"},
		{"bad email", map[string]any{"amountCents": 100, "customerEmail": "nope"}, 400, "invalid_request"},
		{"long reference", map[string]any{"amountCents": 100, "reference": strings.Repeat("r", 201)}, 400, "invalid_request"},
		{"21 metadata keys", map[string]any{"amountCents": 100, "metadata": meta(21, "k")}, 400, "invalid_request"},
		{"svc_ metadata key", map[string]any{"amountCents": 100, "metadata": map[string]string{"svc_x": "1"}}, 400, "reserved_metadata_key"},
		{"SVC_ metadata key", map[string]any{"amountCents": 100, "metadata": map[string]string{"SVC_x": "1"}}, 400, "reserved_metadata_key"},
		{"metadata number", map[string]any{"amountCents": 100, "metadata": map[string]any{"n": 1}}, 400, "invalid_request"},
		{"ftp success url", map[string]any{"amountCents": 100, "successUrl": "ftp://x.test/"}, 400, "invalid_request"},
		{"relative cancel url", map[string]any{"amountCents": 100, "cancelUrl": "/back"}, 400, "invalid_request"},
		{"unknown field", map[string]any{"amountCents": 100, "subscription": true}, 400, "unknown_field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.owner.do("POST", "/api/payments/"+account, c.body)
			if r.status != c.status || r.code() != c.code {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, c.status, c.code)
			}
		})
	}
	// Nothing was stored by the refusals.
	var n int
	e.db.QueryRow(`SELECT count(*) FROM payment_sessions`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d sessions stored", n)
	}
	// The limits themselves pass.
	e.checkout(account, 50, map[string]any{"reference": strings.Repeat("r", 200), "metadata": meta(20, "k")})
	e.checkout(account, 100_000_000, map[string]any{"currency": "USD"})
}

func TestSuccessURLPlaceholder(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{"https://shop.test/ok", "https://shop.test/ok?session_id={CHECKOUT_SESSION_ID}"},
		{"https://shop.test/ok?a=1", "https://shop.test/ok?a=1&session_id={CHECKOUT_SESSION_ID}"},
		{"https://shop.test/ok?a=1#top", "https://shop.test/ok?a=1&session_id={CHECKOUT_SESSION_ID}#top"},
		{"https://shop.test/ok/{CHECKOUT_SESSION_ID}", "https://shop.test/ok/{CHECKOUT_SESSION_ID}"},
		{"", ""},
	} {
		if got := withPlaceholder(c.in); got != c.out {
			t.Errorf("withPlaceholder(%q) = %q, want %q", c.in, got, c.out)
		}
	}
	e := newEnv(t)
	_, account := e.enable("shop")
	c := e.checkout(account, 100, map[string]any{"successUrl": "https://shop.test/ok?a=1"})
	r := e.pay(c.Session.ID, "4242424242424242")
	if want := "https://shop.test/ok?a=1&session_id=" + c.Session.ID; r.status != 303 || r.header.Get("Location") != want {
		t.Fatalf("%d %q, want %q", r.status, r.header.Get("Location"), want)
	}
}

func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	_, account := e.enable("shop")
	c := e.client(ownerKey)
	c.header.Set("Idempotency-Key", "order-7")
	var a, b Created
	c.must(201, "POST", "/api/payments/"+account, map[string]any{"amountCents": 700}).decode(t, &a)
	c.must(201, "POST", "/api/payments/"+account, map[string]any{"amountCents": 700}).decode(t, &b)
	if a.Session.ID != b.Session.ID {
		t.Fatalf("two sessions for one key: %s %s", a.Session.ID, b.Session.ID)
	}
	if r := c.do("POST", "/api/payments/"+account, map[string]any{"amountCents": 800}); r.status != 400 || r.code() != "idempotency_key_reused" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestAccountRules(t *testing.T) {
	e := newEnv(t, envOptions{plan: plans.Hobby})
	project, account := e.enable("one")
	// One account per project: enabling again answers the same one.
	var again AccountAnswer
	e.owner.must(200, "POST", "/api/projects/"+project+"/payments", nil).decode(t, &again)
	if again.Account.ID != account {
		t.Fatalf("second account %s", again.Account.ID)
	}
	// Hobby allows one.
	other := e.project("two")
	if r := e.owner.do("POST", "/api/projects/"+other+"/payments", nil); r.status != 402 || r.code() != "plan_limit" || !strings.Contains(string(r.body), `"required_plan":"pro"`) {
		t.Fatalf("second account on hobby: %d %s", r.status, r.body)
	}
	// Disabled: no new links, links already sent still paid and credited.
	sent := e.checkout(account, 1000, nil)
	e.owner.must(200, "DELETE", "/api/payments/"+account, nil)
	if r := e.owner.do("POST", "/api/payments/"+account, map[string]any{"amountCents": 100}); r.status != 409 || r.code() != "payments_disabled" {
		t.Fatalf("disabled: %d %s", r.status, r.body)
	}
	if r := e.pay(sent.Session.ID, "4242424242424242"); r.status != 303 {
		t.Fatalf("link sent before disable: %d %s", r.status, r.body)
	}
	if d := e.detail(project); d.Earnings.Held != 1000-Fee(1000) || d.Account.Status != AccountDisabled {
		t.Fatalf("%+v", d)
	}
	e.owner.must(200, "POST", "/api/projects/"+project+"/payments", nil)
	e.checkout(account, 100, nil)
	// Read-only keys read, never create.
	ro := e.key("read_only", "")
	ro.must(200, "GET", "/api/payments/"+account+"/payments", nil)
	if r := ro.do("POST", "/api/payments/"+account, map[string]any{"amountCents": 100}); r.status != 403 {
		t.Fatalf("read-only create: %d", r.status)
	}
	// A key of another project cannot reach the account.
	if r := e.key("full", other).do("GET", "/api/payments/"+account+"/payments", nil); r.status != 403 || r.code() != "project_key_mismatch" {
		t.Fatalf("other project key: %d %s", r.status, r.body)
	}
}

func TestLiveLinksNeedVerifiedEmail(t *testing.T) {
	e := newEnv(t, envOptions{deps: func(d *Deps) { d.Processor = liveTestProcessor{processor.NewTest(d.DB, d.Clock, "http://127.0.0.1")} }})
	_, account := e.enable("shop")
	if r := e.owner.do("POST", "/api/payments/"+account, map[string]any{"amountCents": 100}); r.status != 403 || r.code() != "email_unverified" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	e.email.verified = true
	var c Created
	e.owner.must(201, "POST", "/api/payments/"+account, map[string]any{"amountCents": 100}).decode(t, &c)
	if c.Session.Mode != "live" || !c.Session.Livemode {
		t.Fatalf("%+v", c.Session)
	}
}

func TestListsPageWithCursor(t *testing.T) {
	e := newEnv(t)
	_, account := e.enable("shop")
	for i := range 7 {
		ref := "even"
		if i%2 == 1 {
			ref = "odd"
		}
		e.checkout(account, int64(100+i), map[string]any{"reference": ref})
		e.clk.Advance(time.Second)
	}
	var seen []string
	cursor := ""
	for {
		var p Page[Session]
		e.owner.must(200, "GET", "/api/payments/"+account+"/sessions?limit=3&cursor="+cursor, nil).decode(t, &p)
		for _, s := range p.Data {
			seen = append(seen, s.ID)
		}
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	if len(seen) != 7 {
		t.Fatalf("paged %d sessions", len(seen))
	}
	var odd Page[Session]
	e.owner.must(200, "GET", "/api/payments/"+account+"/sessions?reference=odd&status=open", nil).decode(t, &odd)
	if len(odd.Data) != 3 {
		t.Fatalf("odd %d", len(odd.Data))
	}
	e.clk.Advance(25 * time.Hour)
	var expired Page[Session]
	e.owner.must(200, "GET", "/api/payments/"+account+"/sessions?status=expired", nil).decode(t, &expired)
	if len(expired.Data) != 7 || expired.Data[0].State != SessionExpired {
		t.Fatalf("expired %d", len(expired.Data))
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=x", "cursor=nope", "status=void"} {
		if r := e.owner.do("GET", "/api/payments/"+account+"/sessions?"+q, nil); r.status != 400 {
			t.Errorf("%s: %d", q, r.status)
		}
	}
	e.owner.must(200, "GET", "/api/payments?limit=100", nil)
	if r := e.owner.do("GET", "/api/payments?status=paid", nil); r.status != 400 {
		t.Fatalf("workspace list filter: %d", r.status)
	}
}

func TestProjectDeletionBlockers(t *testing.T) {
	e := newEnv(t)
	project, account := e.enable("shop")
	c := e.checkout(account, 1000, nil)
	r := e.owner.do("DELETE", "/api/projects/"+project, nil)
	if r.status != 409 || r.code() != "deletion_blocked" || !strings.Contains(string(r.body), "payable_link") {
		t.Fatalf("open link: %d %s", r.status, r.body)
	}
	e.pay(c.Session.ID, "4242424242424242")
	r = e.owner.do("DELETE", "/api/projects/"+project, nil)
	if r.status != 409 || !strings.Contains(string(r.body), "unwithdrawn_earnings") {
		t.Fatalf("earnings: %d %s", r.status, r.body)
	}
	owner := e.ownerSession()
	if r := owner.do("DELETE", "/api/payments/"+account+"?permanent=true", nil); r.status != 409 || r.code() != "account_not_settled" {
		t.Fatalf("erase with earnings: %d %s", r.status, r.body)
	}
	owner.must(200, "PATCH", "/api/payments/"+account, map[string]any{"action": "withdraw-setup"})
	e.clk.Advance(15 * 24 * time.Hour)
	owner = e.signInOwner()
	var w WithdrawAnswer
	owner.must(200, "PATCH", "/api/payments/"+account, map[string]any{"action": "withdraw"}).decode(t, &w)
	r = e.owner.do("DELETE", "/api/projects/"+project, nil)
	if r.status != 409 || !strings.Contains(string(r.body), "pending_withdrawal") || strings.Contains(string(r.body), "unwithdrawn_earnings") {
		t.Fatalf("pending withdrawal: %d %s", r.status, r.body)
	}
	e.owner.must(200, "POST", "/api/payments/"+account+"/test-hooks", map[string]any{"action": "withdrawal-confirm", "withdrawalId": w.Withdrawal.ID})
	e.owner.must(200, "DELETE", "/api/projects/"+project, nil)
	var n int
	e.db.QueryRow(`SELECT count(*) FROM payment_accounts`).Scan(&n)
	if n != 0 {
		t.Fatal("account kept after its project was deleted")
	}
}

// liveTestProcessor is the test processor claiming live mode, to exercise
// the e-mail rule without real money.
type liveTestProcessor struct{ processor.Processor }

func (liveTestProcessor) Live() bool   { return true }
func (liveTestProcessor) Name() string { return "stripe" }
