package domains

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestRecheckJob: the periodic job looks every domain up again: a pending
// domain whose records appeared is claimed, a verified one whose routing
// went away becomes misconfigured (and stays served).
func TestRecheckJob(t *testing.T) {
	eachEngine(t, func(t *testing.T, e pgtest.Engine) {
		f := newFixture(t, e, Config{RecheckEvery: time.Hour})
		a := f.add("prj_a", "shop.example", "")
		b := f.add("prj_b", "blog.example", "")
		f.publish(b)
		f.verify("dev", b.ID, http.StatusOK)
		f.publish(a)
		f.dns.Addrs("blog.example", "203.0.113.1")
		f.clk.Advance(time.Hour)
		f.runDue()
		var got CustomDomainAnswer
		f.must(http.StatusOK, "dev", "GET", "/api/domains/"+a.ID, nil).Decode(t, &got)
		if got.Domain.State != StateVerified || !got.Domain.CheckedAt.Equal(f.clk.Now()) {
			t.Fatalf("pending after the job: %+v", got.Domain)
		}
		f.must(http.StatusOK, "dev", "GET", "/api/domains/"+b.ID, nil).Decode(t, &got)
		if got.Domain.State != StateMisconfigured || !strings.Contains(got.Domain.Problem, "203.0.113.1") {
			t.Fatalf("moved away after the job: %+v", got.Domain)
		}
		if h := f.edgeHosts(); !slices.Equal(h, []string{"blog.example", "shop.example"}) {
			t.Fatalf("served %v", h)
		}
	})
}

// fakeCerts tells certificate expiries by host.
type fakeCerts map[string]time.Time

func (c fakeCerts) Expiry(_ context.Context, host string) (time.Time, bool, error) {
	t, ok := c[host]
	return t, ok, nil
}

// TestAttention: unverified a day after adding (info), misconfigured
// (warning), certificates missing a day after verification under ACME or
// close to expiry (warning); the security counter counts the unverified.
func TestAttention(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{ACME: true})
	certs := fakeCerts{}
	f.svc.d.Certs = certs
	f.add("prj_a", "pending.example", "")
	mis := f.add("prj_a", "mis.example", "")
	f.dns.TXT(mis.Records[0].Name, mis.Records[0].Value)
	f.verify("dev", mis.ID, http.StatusOK)
	ok := f.add("prj_b", "ok.example", RedirectWWW)
	f.publish(ok)
	f.verify("dev", ok.ID, http.StatusOK)
	certs["ok.example"] = f.clk.Now().Add(90 * 24 * time.Hour)
	certs["www.ok.example"] = f.clk.Now().Add(10 * 24 * time.Hour)

	kinds := func() []string {
		t.Helper()
		items, err := f.svc.Attention(context.Background(), "ws_a")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range items {
			out = append(out, it.Kind+" "+string(it.Severity)+" "+it.Reason)
		}
		slices.SortFunc(out, func(a, b string) int { return -strings.Compare(a, b) })
		return out
	}
	got := kinds()
	if len(got) != 2 || !strings.HasPrefix(got[0], "domain_misconfigured warning custom domain mis.example does not point") ||
		!strings.HasPrefix(got[1], "domain_certificate warning the certificate of www.ok.example expires") {
		t.Fatalf("now: %q", got)
	}
	f.clk.Advance(PendingAfter)
	delete(certs, "www.ok.example")
	got = kinds()
	want := []string{"domain_unverified info custom domain pending.example is not verified",
		"domain_misconfigured warning", "domain_certificate warning no certificate was issued for www.ok.example"}
	if len(got) != 3 {
		t.Fatalf("a day later: %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("a day later: %q, want prefixes %q", got, want)
		}
	}
	if n, err := f.svc.Unverified(context.Background(), "ws_a"); err != nil || n != 2 {
		t.Fatalf("unverified %d %v", n, err)
	}
	if items, err := f.svc.Attention(context.Background(), "ws_b"); err != nil || len(items) != 0 {
		t.Fatalf("another workspace: %v %v", items, err)
	}
}

// TestTeardown: deleting a project removes its domain connections and
// the edges stop serving them; calling it again is fine.
func TestTeardown(t *testing.T) {
	eachEngine(t, func(t *testing.T, e pgtest.Engine) {
		f := newFixture(t, e, Config{})
		d := f.add("prj_a", "shop.example", RedirectWWW)
		f.publish(d)
		f.verify("dev", d.ID, http.StatusOK)
		o := f.add("prj_b", "blog.example", "")
		f.publish(o)
		f.verify("dev", o.ID, http.StatusOK)
		v := f.sync.Version()
		for range 2 {
			if err := f.svc.Remove(context.Background(), "prj_a"); err != nil {
				t.Fatal(err)
			}
		}
		if f.sync.Version() <= v {
			t.Fatal("teardown did not publish a new snapshot")
		}
		if h := f.edgeHosts(); !slices.Equal(h, []string{"blog.example"}) {
			t.Fatalf("served %v", h)
		}
		f.must(http.StatusNotFound, "dev", "GET", "/api/domains/"+d.ID, nil)
		// The name is free again.
		f.must(http.StatusCreated, "stranger", "POST", "/api/projects/prj_c/domains", map[string]any{"name": "shop.example"})
	})
}
