package payments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"
)

// receiver is a webhook endpoint recording what it got.
type receiver struct {
	mu       sync.Mutex
	srv      *httptest.Server
	got      []received
	failures int // answer 500 this many times first
	seen     map[string]int
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{seen: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if rc.failures > 0 {
			rc.failures--
			w.WriteHeader(500)
			return
		}
		rc.got = append(rc.got, received{header: r.Header.Clone(), body: body})
		rc.seen[r.Header.Get(HeaderDelivery)]++
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/hook", http.StatusTemporaryRedirect)
	})
	rc.srv = httptest.NewTLSServer(mux)
	t.Cleanup(rc.srv.Close)
	return rc
}

func webhookEnv(t *testing.T) (*env, *receiver) {
	rc := newReceiver(t)
	e := newEnv(t, envOptions{deps: func(d *Deps) { d.HTTPClient = rc.srv.Client() }})
	return e, rc
}

// deliverAll runs every pending delivery once, as the jobs runner would.
func (e *env) deliverAll() {
	e.t.Helper()
	ids, err := e.svc.PendingDeliveries(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, id := range ids {
		if err := e.svc.Deliver(context.Background(), id); err != nil && !errors.Is(err, ErrDeliveryFailed) {
			e.t.Fatal(err)
		}
	}
}

// Deliveries carry the spec's headers and body and verify with stripe-go's
// own verifier, unchanged.
func TestWebhookSignedLikeStripe(t *testing.T) {
	e, rc := webhookEnv(t)
	e.clk.Set(time.Now()) // ValidatePayload checks the timestamp against the real clock
	project, account := e.enable("shop")
	var ws WebhookSecret
	e.owner.must(200, "PATCH", "/api/payments/"+account, map[string]any{"action": "set-webhook", "webhookUrl": rc.srv.URL + "/hook"}).decode(t, &ws)
	if !strings.HasPrefix(ws.Secret, SecretPrefix) || ws.Account.WebhookURL != rc.srv.URL+"/hook" {
		t.Fatalf("%+v", ws)
	}
	// Shown once: the account read has only a hint, the row only sealed bytes.
	d := e.detail(project)
	if strings.Contains(string(mustJSON(t, d)), ws.Secret) || d.Account.WebhookSecretHint != ws.Secret[:len(SecretPrefix)+4] {
		t.Fatal("secret visible on read")
	}
	var sealed []byte
	e.db.QueryRow(`SELECT webhook_secret FROM payment_accounts WHERE id = ?`, account).Scan(&sealed)
	if bytes.Contains(sealed, []byte(ws.Secret[len(SecretPrefix):])) {
		t.Fatal("secret stored in the clear")
	}
	p := e.sale(account, 1000, "4242424242424242")
	e.deliverAll()
	if len(rc.got) != 1 {
		t.Fatalf("%d deliveries", len(rc.got))
	}
	g := rc.got[0]
	if err := webhook.ValidatePayload(g.body, g.header.Get(HeaderSignature), ws.Secret); err != nil {
		t.Fatalf("stripe-go rejects our signature: %v", err)
	}
	if err := webhook.ValidatePayload(g.body, g.header.Get(HeaderSignature), "svcwhsec_other"); err == nil {
		t.Fatal("another secret verifies")
	}
	var ev Event
	if err := json.Unmarshal(g.body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != EventSucceeded || g.header.Get(HeaderEvent) != EventSucceeded || g.header.Get(HeaderDelivery) != ev.ID ||
		ev.Data.Payment == nil || ev.Data.Payment.ID != p.ID || ev.Data.Payment.AmountCents != 1000 || ev.Created == 0 {
		t.Fatalf("event %+v headers %v", ev, g.header)
	}
	// Rotation: the next delivery verifies with the new secret only.
	var rot WebhookSecret
	e.owner.must(200, "PATCH", "/api/payments/"+account, map[string]any{"action": "rotate-webhook-secret"}).decode(t, &rot)
	var da DeliveryAnswer
	e.owner.must(200, "PATCH", "/api/payments/"+account, map[string]any{"action": "test-webhook"}).decode(t, &da)
	if da.Delivery.Type != EventPing || da.Delivery.Status != "pending" {
		t.Fatalf("ping %+v", da)
	}
	e.deliverAll()
	g = rc.got[1]
	if err := webhook.ValidatePayload(g.body, g.header.Get(HeaderSignature), rot.Secret); err != nil || g.header.Get(HeaderEvent) != EventPing {
		t.Fatalf("ping: %v %v", err, g.header)
	}
	if webhook.ValidatePayload(g.body, g.header.Get(HeaderSignature), ws.Secret) == nil {
		t.Fatal("old secret still verifies")
	}
	if d := e.detail(project); len(d.Deliveries) != 2 || d.Deliveries[0].Status != "delivered" || d.Deliveries[0].LastStatusCode != 200 {
		t.Fatalf("deliveries %+v", d.Deliveries)
	}
}

// A failing receiver is retried on the schedule 1m, 5m, 30m, 2h, 6h, 12h,
// 24h, 24h and given up after the 9th attempt; a recovering one gets the
// event once.
func TestWebhookRetrySchedule(t *testing.T) {
	e, rc := webhookEnv(t)
	_, account := e.enable("shop")
	e.owner.must(200, "PATCH", "/api/payments/"+account, map[string]any{"action": "set-webhook", "webhookUrl": rc.srv.URL + "/hook"})
	if e.jobs.kind != JobWebhook || e.jobs.maxAttempts != 9 || len(e.jobs.backoff) != 7 || e.jobs.backoff[6] != 24*time.Hour {
		t.Fatalf("registered %+v", e.jobs)
	}
	rc.failures = 100
	e.sale(account, 1000, "4242424242424242")
	ids, _ := e.svc.PendingDeliveries(context.Background())
	if len(ids) != 1 || len(e.jobs.enqueued) != 1 || e.jobs.enqueued[0] != ids[0] {
		t.Fatalf("enqueued %v pending %v", e.jobs.enqueued, ids)
	}
	id := ids[0]
	want := []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 24 * time.Hour}
	for i := range 9 {
		err := e.svc.Deliver(context.Background(), id)
		d, _ := e.svc.Delivery(context.Background(), id)
		if i < 8 {
			if !errors.Is(err, ErrDeliveryFailed) || d.Attempts != i+1 || d.Status != "pending" || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(e.clk.Now().Add(want[i])) {
				t.Fatalf("attempt %d: %v %+v", i+1, err, d)
			}
			e.clk.Advance(want[i])
			continue
		}
		if err != nil || d.Status != "failed" || d.Attempts != 9 || d.LastStatusCode != 500 {
			t.Fatalf("last attempt: %v %+v", err, d)
		}
	}
	// A given-up delivery is not sent again.
	rc.failures = 0
	if err := e.svc.Deliver(context.Background(), id); err != nil || len(rc.got) != 0 {
		t.Fatalf("resent: %v %d", err, len(rc.got))
	}
	// Recovering after two failures: delivered once, then never again.
	rc.failures = 2
	e.sale(account, 1000, "4242424242424242")
	for range 3 {
		e.deliverAll()
	}
	e.deliverAll()
	if len(rc.got) != 1 {
		t.Fatalf("%d deliveries", len(rc.got))
	}
}

func TestWebhookURLRules(t *testing.T) {
	e, rc := webhookEnv(t)
	_, account := e.enable("shop")
	for _, c := range []struct{ url, code string }{
		{"http://hooks.example.com/x", "invalid_webhook_url"},
		{"hooks.example.com", "invalid_webhook_url"},
		{"https://10.0.0.5/hook", "webhook_url_refused"},
		{"https://169.254.169.254/latest", "webhook_url_refused"},
		{"https://user:pw@hooks.example.com/", "invalid_webhook_url"},
	} {
		t.Run(c.url, func(t *testing.T) {
			r := e.owner.do("PATCH", "/api/payments/"+account, map[string]any{"action": "set-webhook", "webhookUrl": c.url})
			if r.status != 400 || r.code() != c.code {
				t.Fatalf("%d %s", r.status, r.body)
			}
		})
	}
	for _, body := range []map[string]any{{"action": "rotate-webhook-secret"}, {"action": "test-webhook"}} {
		if r := e.owner.do("PATCH", "/api/payments/"+account, body); r.status != 409 || r.code() != "webhook_not_set" {
			t.Fatalf("%v: %d %s", body, r.status, r.body)
		}
	}
	if r := e.owner.do("PATCH", "/api/payments/"+account, map[string]any{"action": "set-webhook"}); r.status != 400 {
		t.Fatalf("no url: %d", r.status)
	}
	if r := e.owner.do("PATCH", "/api/payments/"+account, map[string]any{"action": "test-webhook", "webhookUrl": "https://x.test/"}); r.status != 400 {
		t.Fatalf("stray field: %d", r.status)
	}
	// Redirects are not followed: a 307 is a failed attempt.
	e.owner.must(200, "PATCH", "/api/payments/"+account, map[string]any{"action": "set-webhook", "webhookUrl": rc.srv.URL + "/moved"})
	e.owner.must(200, "PATCH", "/api/payments/"+account, map[string]any{"action": "test-webhook"})
	ids, _ := e.svc.PendingDeliveries(context.Background())
	err := e.svc.Deliver(context.Background(), ids[0])
	d, _ := e.svc.Delivery(context.Background(), ids[0])
	if !errors.Is(err, ErrDeliveryFailed) || d.LastStatusCode != 307 || len(rc.got) != 0 || !strings.Contains(d.LastError, "redirect") {
		t.Fatalf("redirect: %v %+v", err, d)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
