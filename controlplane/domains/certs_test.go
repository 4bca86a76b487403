package domains

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// fakeObtainer records the hosts asked for and fails those in fail.
type fakeObtainer struct {
	mu    sync.Mutex
	calls []string
	fail  map[string]error
	now   func() time.Time
}

func (o *fakeObtainer) ObtainCert(_ context.Context, host string) (time.Time, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, host)
	if err := o.fail[host]; err != nil {
		return time.Time{}, false, err
	}
	return o.now().Add(90 * 24 * time.Hour), true, nil
}

func (o *fakeObtainer) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.calls
	o.calls = nil
	return c
}

func (o *fakeObtainer) setFail(host string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fail[host] = err
}

// TestProactiveCertificates: a domain that verifies has its certificate
// obtained by the next job run, before any visitor (the ACME order itself
// is TestObtainAhead in controlplane/certs, against Pebble); the periodic
// job asks again for every verified host (renewal within 30 days of
// expiry); a failure is recorded with an attention item and retried with
// backoff, and a success clears it.
func TestProactiveCertificates(t *testing.T) {
	obt := &fakeObtainer{fail: map[string]error{}}
	f := newFixtureWith(t, pgtest.Engines()[0], Config{ACME: true}, obt)
	obt.now = f.clk.Now
	f.svc.d.Certs = fakeCerts{}
	ok := f.add("prj_a", "ok.example", "")
	bad := f.add("prj_b", "bad.example", "")
	obt.setFail("bad.example", errors.New("acme: urn:ietf:params:acme:error:caa: CAA record forbids issuance"))
	f.publish(ok)
	f.publish(bad)
	f.verify("dev", ok.ID, http.StatusOK)
	f.verify("dev", bad.ID, http.StatusOK)
	f.runDue()
	if got := strings.Join(sortedCopy(obt.take()), ","); got != "bad.example,ok.example" {
		t.Fatalf("obtained after verification: %q", got)
	}
	st, found, err := getCertState(context.Background(), f.db, "ok.example")
	if err != nil || !found || st.Failures != 0 || st.NotAfter.IsZero() {
		t.Fatalf("ok.example: %+v %v %v", st, found, err)
	}
	st, _, _ = getCertState(context.Background(), f.db, "bad.example")
	if st.Failures != 1 || !strings.Contains(st.LastError, "CAA") || !st.NextTry.Equal(f.clk.Now().Add(CertBackoff[0])) {
		t.Fatalf("bad.example: %+v", st)
	}
	items, err := f.svc.Attention(context.Background(), "ws_a")
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, it := range items {
		reasons = append(reasons, it.Kind+": "+it.Reason)
	}
	if len(items) != 1 || items[0].Kind != KindDomainCertificate || !strings.Contains(items[0].Reason, "bad.example could not be obtained") {
		t.Fatalf("attention: %q", reasons)
	}

	var got CustomDomainAnswer
	f.must(http.StatusOK, "viewer", "GET", "/api/domains/"+bad.ID, nil).Decode(t, &got)
	if c := got.Domain.Certificates; len(c) != 1 || c[0].Failures != 1 || !strings.Contains(c[0].Error, "CAA") || c[0].NextAttempt == nil || c[0].NotAfter != nil {
		t.Fatalf("certificates of bad.example: %+v", c)
	}
	got = CustomDomainAnswer{}
	f.must(http.StatusOK, "viewer", "GET", "/api/domains/"+ok.ID, nil).Decode(t, &got)
	if c := got.Domain.Certificates; len(c) != 1 || c[0].Host != "ok.example" || c[0].NotAfter == nil || c[0].Error != "" {
		t.Fatalf("certificates of ok.example: %+v", c)
	}
	// The periodic run within the backoff asks only for ok.example.
	if err := f.svc.certsJob(context.Background(), jobsJob()); err != nil {
		t.Fatal(err)
	}
	if got := obt.take(); len(got) != 1 || got[0] != "ok.example" {
		t.Fatalf("within the backoff: %q", got)
	}
	// After it, bad.example is tried again; still failing, the wait grows.
	f.clk.Advance(CertBackoff[0])
	f.svc.certsJob(context.Background(), jobsJob())
	st, _, _ = getCertState(context.Background(), f.db, "bad.example")
	if st.Failures != 2 || !st.NextTry.Equal(f.clk.Now().Add(CertBackoff[1])) {
		t.Fatalf("second failure: %+v", st)
	}
	obt.take()
	// Fixed: the next attempt succeeds and the item goes.
	obt.setFail("bad.example", nil)
	f.clk.Advance(CertBackoff[1])
	f.svc.certsJob(context.Background(), jobsJob())
	st, _, _ = getCertState(context.Background(), f.db, "bad.example")
	if st.Failures != 0 || st.LastError != "" {
		t.Fatalf("after success: %+v", st)
	}
	if items, _ := f.svc.Attention(context.Background(), "ws_a"); len(items) != 0 {
		t.Fatalf("attention after success: %+v", items)
	}
	// Deleting the domain forgets its certificate state.
	f.must(http.StatusOK, "dev", "DELETE", "/api/domains/"+bad.ID, nil)
	if _, found, _ := getCertState(context.Background(), f.db, "bad.example"); found {
		t.Fatal("certificate state kept after the domain was deleted")
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	slices.Sort(out)
	return out
}

func jobsJob() jobs.Job { return jobs.Job{} }
