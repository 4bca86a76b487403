package payments

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestHostedPage(t *testing.T) {
	e := newEnv(t)
	_, account := e.enable("shop")
	c := e.checkout(account, 1234, map[string]any{"description": "Blue <mug>", "cancelUrl": "https://shop.test/back"})
	anon := e.client("")
	r := anon.must(200, "GET", "/pay/"+c.Session.ID, nil)
	page := string(r.body)
	for _, want := range []string{`autocomplete="cc-number"`, `autocomplete="cc-exp"`, `autocomplete="cc-csc"`, `type="submit"`, "Test mode", "$12.34",
		"Blue &lt;mug&gt;", `href="https://shop.test/back"`, `method="post"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(page, "<script") {
		t.Error("page has a script")
	}
	csp := r.header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "form-action 'self'", "style-src 'sha256-"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %s", csp, want)
		}
	}
	if r.header.Get("X-Frame-Options") != "DENY" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Errorf("headers %v", r.header)
	}
	for _, c2 := range []struct {
		name, card string
		status     int
		want       string
	}{
		{"declined", "4000 0000 0000 0002", 402, "declined"},
		{"not a test card", "5555555555554444", 402, "test cards"},
		{"mistyped", "4242424242424241", 400, "card number is incorrect"},
	} {
		t.Run(c2.name, func(t *testing.T) {
			r := e.pay(c.Session.ID, c2.card)
			if r.status != c2.status || !strings.Contains(string(r.body), c2.want) || !strings.Contains(string(r.body), `autocomplete="cc-number"`) {
				t.Fatalf("%d %s", r.status, r.body)
			}
		})
	}
	if r := e.pay(c.Session.ID, "4242424242424242"); r.status != http.StatusSeeOther {
		t.Fatalf("pay: %d", r.status)
	}
	// Single use: the paid link answers 410, on the page and on a second pay.
	if r := anon.do("GET", "/pay/"+c.Session.ID, nil); r.status != 410 || !strings.Contains(string(r.body), "Already paid") {
		t.Fatalf("paid link: %d", r.status)
	}
	if r := e.pay(c.Session.ID, "4242424242424242"); r.status != 410 {
		t.Fatalf("second pay: %d", r.status)
	}
	if r := anon.do("GET", "/pay/"+c.Session.ID+"/done", nil); r.status != 200 || !strings.Contains(string(r.body), "Thank you") {
		t.Fatalf("done: %d", r.status)
	}
	// Expired after 24 hours.
	old := e.checkout(account, 500, nil)
	e.clk.Advance(24*time.Hour + time.Second)
	if r := anon.do("GET", "/pay/"+old.Session.ID, nil); r.status != 410 || !strings.Contains(string(r.body), "expired") {
		t.Fatalf("expired link: %d", r.status)
	}
	if r := e.pay(old.Session.ID, "4242424242424242"); r.status != 410 {
		t.Fatalf("pay expired: %d", r.status)
	}
	if r := anon.do("GET", "/pay/cs_nothere", nil); r.status != 404 {
		t.Fatalf("unknown: %d", r.status)
	}
	var l Lookup
	e.owner.must(200, "GET", "/api/payments/"+account+"/sessions/"+old.Session.ID, nil).decode(t, &l)
	if l.Paid || l.Session.State != SessionExpired {
		t.Fatalf("expired lookup %+v", l)
	}
	var n int
	e.db.QueryRow(`SELECT count(*) FROM payment_payments`).Scan(&n)
	if n != 1 {
		t.Fatalf("%d payments", n)
	}
}
