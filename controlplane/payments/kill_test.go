package payments_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/payments"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"github.com/svcplatform/platform/internal/freeport"
)

// TestKill9DuringPaymentBurst is the crash proof of the payments area: a
// real `platform serve` takes a burst of hosted-checkout payments, is
// SIGKILLed in the middle of it and restarted on the same data directory.
// Every payment whose hosted page answered success must be there with its
// ledger rows, the earnings must be the sum of the payments, and every
// webhook event must reach the receiver under its delivery id (redelivery
// of an attempt cut by the kill is allowed; the receiver de-duplicates).
func TestKill9DuringPaymentBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the platform binary")
	}
	const (
		sessions = 48 // links opened before the burst
		killAt   = 16 // successful payments before SIGKILL
		workers  = 8
		cents    = 1500
		key      = "kill9-owner-key-0123456789abcdef"
	)
	bin := filepath.Join(t.TempDir(), "platform")
	build := exec.Command("go", "build", "-o", bin, "github.com/svcplatform/platform/cmd/platform")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	start := time.Now()

	hooks := newReceiver(t)
	data := t.TempDir()
	// The metadata store: SQLite in the data directory, or a PostgreSQL
	// database under PLATFORM_TEST_STORE=postgres (both survive the kill).
	dsn := filepath.Join(data, "platform.db")
	if os.Getenv("PLATFORM_TEST_STORE") == "postgres" {
		dsn = pgtest.MigratedDSN(t)
	}
	p := &platformProc{t: t, bin: bin, data: data, store: dsn, key: key, certFile: hooks.certFile,
		api: freeAddr(t), admin: freeAddr(t), http: freeAddr(t), https: freeAddr(t)}
	p.start()
	api := &apiClient{t: t, base: "http://" + p.api, key: key}

	var prj struct {
		Project struct {
			ID string `json:"id"`
		} `json:"project"`
	}
	api.must(http.StatusCreated, "POST", "/api/projects", map[string]any{"name": "shop"}, &prj)
	var acct payments.AccountAnswer
	api.must(http.StatusOK, "POST", "/api/projects/"+prj.Project.ID+"/payments", nil, &acct)
	account := acct.Account.ID
	var secret payments.WebhookSecret
	api.must(http.StatusOK, "PATCH", "/api/payments/"+account, map[string]any{"action": "set-webhook", "webhookUrl": hooks.srv.URL + "/hooks"}, &secret)
	hooks.setSecret(secret.Secret)

	ids := make([]string, sessions)
	for i := range ids {
		var c payments.Created
		api.must(http.StatusCreated, "POST", "/api/payments/"+account, map[string]any{"amountCents": cents, "reference": fmt.Sprintf("order-%d", i)}, &c)
		ids[i] = c.Session.ID
	}

	// The burst: workers pay the links through the hosted page's form;
	// the killer fires once killAt payments were confirmed.
	type outcome int
	const (
		notTried outcome = iota
		confirmed
		unknown // the request was cut by the kill
	)
	results := make([]outcome, sessions)
	var okCount atomic.Int32
	kill := make(chan struct{})
	var killOnce sync.Once
	next := make(chan int)
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				form := url.Values{"cardnumber": {"4242 4242 4242 4242"}, "exp": {"12/34"}, "cvc": {"123"}, "email": {"buyer@example.com"}, "country": {"us"}}
				res, err := hc.PostForm("http://"+p.api+"/pay/"+ids[i], form)
				if err != nil {
					results[i] = unknown
					continue
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusSeeOther {
					results[i] = unknown // a 5xx while dying counts as not confirmed
					continue
				}
				results[i] = confirmed
				if okCount.Add(1) == killAt {
					killOnce.Do(func() { close(kill) })
				}
			}
		}()
	}
	go func() {
		<-kill
		p.kill()
	}()
	for i := range ids {
		select {
		case next <- i:
		case <-kill:
		}
		if p.dead() {
			break
		}
	}
	close(next)
	wg.Wait()
	killOnce.Do(func() { close(kill) }) // the whole burst ran before the killer fired
	p.wait()

	// Restart on the same data directory.
	p.start()
	var paid []payments.Payment
	var sumAmount, sumFee, sumNet int64
	var confirmedN, recovered int
	for i, id := range ids {
		var l payments.Lookup
		api.must(http.StatusOK, "GET", "/api/payments/"+account+"/sessions/"+id, nil, &l)
		switch {
		case results[i] == confirmed && (!l.Paid || l.Payment == nil):
			t.Errorf("session %s: the hosted page confirmed the payment, after the restart it is not paid: %+v", id, l)
		case results[i] == notTried && l.Paid:
			t.Errorf("session %s paid without being paid", id)
		}
		if results[i] == confirmed {
			confirmedN++
		}
		if l.Paid && l.Payment != nil {
			if results[i] == unknown {
				recovered++
			}
			paid = append(paid, *l.Payment)
			sumAmount += l.Payment.AmountCents
			sumFee += l.Payment.FeeCents
			sumNet += l.Payment.NetCents
		}
	}
	if confirmedN < killAt {
		t.Fatalf("only %d payments confirmed before the kill", confirmedN)
	}
	var list struct {
		Data []payments.Payment `json:"data"`
	}
	api.must(http.StatusOK, "GET", "/api/payments/"+account+"/payments?limit=100", nil, &list)
	if len(list.Data) != len(paid) {
		t.Errorf("the payments list has %d payments, the sessions %d", len(list.Data), len(paid))
	}
	var d payments.Detail
	api.must(http.StatusOK, "GET", "/api/projects/"+prj.Project.ID+"/payments", nil, &d)
	if e := d.Earnings; e.Gross != sumAmount || e.Fees != sumFee || e.Balance != sumNet || e.Held != sumNet {
		t.Errorf("earnings %+v, want gross %d fees %d balance=held %d", e, sumAmount, sumFee, sumNet)
	}

	// Every event is delivered: poll the store (the restarted process runs
	// the queue; an attempt cut by the kill is retried once its lease
	// expires, which is the job's timeout plus the runner's grace).
	db, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var open int
		if err := db.QueryRow(`SELECT count(*) FROM payment_events WHERE delivery_status <> 'delivered'`).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open == 0 && hooks.count() >= len(paid) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events not delivered, %d received of %d payments", open, hooks.count(), len(paid))
		}
		hooks.waitChange(200 * time.Millisecond)
	}
	rows, err := db.Query(`SELECT id, type, payment_id FROM payment_events WHERE account_id = ?`, account)
	if err != nil {
		t.Fatal(err)
	}
	events := map[string]string{}
	for rows.Next() {
		var id, typ, pay string
		if err := rows.Scan(&id, &typ, &pay); err != nil {
			t.Fatal(err)
		}
		if typ != payments.EventSucceeded {
			t.Errorf("event %s of type %s", id, typ)
		}
		events[id] = pay
	}
	rows.Close()
	got := hooks.received()
	if len(events) != len(paid) || len(got) != len(events) {
		t.Errorf("%d events stored, %d distinct deliveries received, %d payments", len(events), len(got), len(paid))
	}
	for id, pay := range events {
		if got[id] != pay {
			t.Errorf("delivery %s: received for payment %q, stored for %q", id, got[id], pay)
		}
	}
	if bad := hooks.badSignatures(); bad != 0 {
		t.Errorf("%d deliveries with a bad signature", bad)
	}

	// The ledger: each payment has its sale and fee rows, the buckets sum
	// to zero.
	for _, pm := range paid {
		var net, fee int64
		if err := db.QueryRow(`SELECT COALESCE(SUM(CASE WHEN credit = 'held' THEN amount_cents END), 0), COALESCE(SUM(CASE WHEN credit = 'fees' THEN amount_cents END), 0)
			FROM payment_ledger WHERE payment_id = ? AND debit = 'buyers'`, pm.ID).Scan(&net, &fee); err != nil {
			t.Fatal(err)
		}
		if net != pm.NetCents || fee != pm.FeeCents {
			t.Errorf("payment %s: ledger net %d fee %d, want %d %d", pm.ID, net, fee, pm.NetCents, pm.FeeCents)
		}
	}
	var sum int64
	if err := db.QueryRow(`SELECT COALESCE(SUM(amount_cents), 0) - (SELECT COALESCE(SUM(amount_cents), 0) FROM payment_ledger WHERE account_id = ?)
		FROM payment_ledger WHERE account_id = ?`, account, account).Scan(&sum); err != nil || sum != 0 {
		t.Errorf("ledger does not balance: %d %v", sum, err)
	}
	t.Logf("%d links, %d confirmed before the kill, %d cut requests recovered as paid, %d webhooks (%d redelivered), %v after the build",
		sessions, confirmedN, recovered, len(got), hooks.duplicates(), time.Since(start).Round(time.Millisecond))
}

// platformProc runs `platform serve`.
type platformProc struct {
	t                       *testing.T
	bin, data, key          string
	store                   string // the metadata store (--store): SQLite in data, or PostgreSQL
	certFile                string
	api, admin, http, https string
	mu                      sync.Mutex
	cmd                     *exec.Cmd
	done                    chan struct{}
	killed                  atomic.Bool
	log                     bytes.Buffer
}

func (p *platformProc) start() {
	p.t.Helper()
	cmd := exec.Command(p.bin, "serve", "--data", p.data, "--api-addr", p.api, "--admin-addr", p.admin,
		"--http-addr", p.http, "--https-addr", p.https, "--rtmp-addr", "", "--bootstrap-key", p.key, "--plan", "pro",
		"--allow-private-networks", "--log-level", "warn", "--store", p.store)
	// The webhook receiver's certificate is the only root the child trusts.
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+p.certFile, "SSL_CERT_DIR=/nonexistent")
	p.mu.Lock()
	p.log.Reset()
	cmd.Stdout, cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.log}, &lockedWriter{mu: &p.mu, w: &p.log}
	p.mu.Unlock()
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	p.killed.Store(false)
	done := p.done
	go func() {
		cmd.Wait()
		close(done)
	}()
	p.t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get("http://" + p.admin + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				if res, err := http.Get("http://" + p.api + "/api/payments"); err == nil {
					res.Body.Close()
					return
				}
			}
		}
		select {
		case <-done:
			p.mu.Lock()
			defer p.mu.Unlock()
			p.t.Fatalf("platform serve exited: %s", p.log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatal("platform serve did not come up in 30 s")
		}
	}
}

// kill sends SIGKILL.
func (p *platformProc) kill() {
	p.killed.Store(true)
	p.cmd.Process.Signal(syscall.SIGKILL)
}

func (p *platformProc) dead() bool { return p.killed.Load() }

func (p *platformProc) wait() {
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.t.Fatal("platform did not exit after SIGKILL")
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	a, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// apiClient calls the API with a bearer key.
type apiClient struct {
	t         *testing.T
	base, key string
}

func (c *apiClient) must(want int, method, path string, body, out any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		c.t.Fatalf("%s %s: %d, want %d: %s", method, path, res.StatusCode, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
}

// receiver is an HTTPS webhook endpoint on loopback that keeps one entry
// per Service-Delivery id and counts redeliveries.
type receiver struct {
	srv      *httptest.Server
	certFile string
	mu       sync.Mutex
	secret   string
	got      map[string]string // delivery id -> payment id
	dups     int
	badSig   int
	changed  chan struct{}
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{got: map[string]string{}, changed: make(chan struct{})}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	r.certFile = filepath.Join(t.TempDir(), "receiver.pem")
	cert := r.srv.Certificate()
	if err := os.WriteFile(r.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *receiver) setSecret(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = s
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var ev struct {
		ID   string `json:"id"`
		Data struct {
			Payment struct {
				ID string `json:"id"`
			} `json:"payment"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !validSignature(req.Header.Get("Service-Signature"), body, r.secret) || req.Header.Get("Service-Delivery") != ev.ID {
		r.badSig++
	}
	id := req.Header.Get("Service-Delivery")
	if _, ok := r.got[id]; ok {
		r.dups++
	} else {
		r.got[id] = ev.Data.Payment.ID
	}
	close(r.changed)
	r.changed = make(chan struct{})
	w.WriteHeader(http.StatusNoContent)
}

// validSignature checks t=...,v1=<hex HMAC-SHA256 of "t.body">.
func validSignature(header string, body []byte, secret string) bool {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	want, err := hex.DecodeString(sig)
	return err == nil && ts != "" && hmac.Equal(m.Sum(nil), want)
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func (r *receiver) received() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(r.got))
	for k, v := range r.got {
		out[k] = v
	}
	return out
}

func (r *receiver) duplicates() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dups
}

func (r *receiver) badSignatures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.badSig
}

// waitChange waits for the next delivery or at most d (the store side is
// polled: it has no signal).
func (r *receiver) waitChange(d time.Duration) {
	r.mu.Lock()
	ch := r.changed
	r.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(d):
	}
}
