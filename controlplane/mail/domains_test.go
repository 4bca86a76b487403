package mail

import (
	"context"
	"crypto/x509"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"github.com/svcplatform/platform/controlplane/usage"
	"github.com/svcplatform/platform/internal/dnstest"
)

// record returns the domain's record of purpose.
func (d Domain) record(purpose string) Record {
	for _, r := range d.Records {
		if r.Purpose == purpose {
			return r
		}
	}
	return Record{}
}

// addDomain adds name to prj_a as dev.
func (f *fixture) addDomain(name string) Domain {
	f.t.Helper()
	var a DomainAnswer
	f.must(http.StatusCreated, "dev", "POST", "/api/projects/prj_a/mail/domains", map[string]any{"name": name}).Decode(f.t, &a)
	return a.Domain
}

func (f *fixture) verify(id string) Domain {
	f.t.Helper()
	var a DomainAnswer
	f.must(http.StatusOK, "dev", "POST", "/api/mail/domains/"+id+"/verify", nil).Decode(f.t, &a)
	return a.Domain
}

// publish puts the domain's SPF and DKIM records in dns.
func publish(dns *dnstest.Server, d Domain) {
	dns.TXT(d.record("spf").Name, d.record("spf").Value)
	dns.TXT(d.record("dkim").Name, d.record("dkim").Value)
}

// TestDomainVerification walks a sending domain through what its DNS
// shows: nothing, DKIM only, an SPF record without the include, two SPF
// records, both right (verified), and later the DKIM record gone (failed
// on the periodic re-check).
func TestDomainVerification(t *testing.T) { eachEngine(t, testDomainVerification) }

func testDomainVerification(t *testing.T, e pgtest.Engine) {
	dns := dnstest.Start(t)
	f := newFixture(t, e, Config{DNSResolver: dns.Addr, SPFInclude: "spf.relay.test"})
	d := f.addDomain("Mail.Shop.Example.")
	if d.Name != "mail.shop.example" || d.State != DomainPending || len(d.Records) != 3 {
		t.Fatalf("added = %+v", d)
	}
	spf, dk := d.record("spf"), d.record("dkim")
	if spf.Name != "mail.shop.example" || spf.Value != "v=spf1 include:spf.relay.test ~all" || !spf.Required ||
		!strings.HasSuffix(dk.Name, "._domainkey.mail.shop.example") || !strings.HasPrefix(dk.Value, "v=DKIM1; k=rsa; p=MI") || !dk.Required {
		t.Fatalf("records = %+v", d.Records)
	}
	if dm := d.record("dmarc"); dm.Name != "_dmarc.mail.shop.example" || dm.Required || dm.Status != StatusRecommended {
		t.Fatalf("dmarc = %+v", dm)
	}
	for _, c := range []struct {
		name      string
		spf, dkim []string
		state     string
		spfStatus string
		dkimStat  string
		problem   string
	}{
		{"nothing published", nil, nil, DomainPending, StatusMissing, StatusMissing, "no DKIM record"},
		{"DKIM only", nil, []string{dk.Value}, DomainPending, StatusMissing, StatusVerified, "no SPF record"},
		{"SPF without the include", []string{"v=spf1 include:other.test -all"}, []string{dk.Value}, DomainPending, StatusMismatch, StatusVerified, "does not include:spf.relay.test"},
		{"two SPF records", []string{"v=spf1 include:spf.relay.test ~all", "v=spf1 mx -all"}, []string{dk.Value}, DomainPending, StatusMismatch, StatusVerified, "more than one SPF record"},
		{"another DKIM key", []string{spf.Value}, []string{"v=DKIM1; k=rsa; p=AAAA"}, DomainPending, StatusVerified, StatusMismatch, "carries another key"},
		{"both right, SPF merged, key split by the DNS host", []string{"google-site-verification=x", "v=spf1 mx +include:SPF.relay.test. ~all"},
			[]string{strings.ReplaceAll(dk.Value, "p=", "p= ")}, DomainVerified, StatusVerified, StatusVerified, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dns.TXT(spf.Name, c.spf...)
			dns.TXT(dk.Name, c.dkim...)
			got := f.verify(d.ID)
			if got.State != c.state || got.record("spf").Status != c.spfStatus || got.record("dkim").Status != c.dkimStat ||
				!strings.Contains(got.Problem, c.problem) || got.CheckedAt == nil {
				t.Fatalf("verify = %+v (problem %q)", got, got.Problem)
			}
		})
	}
	var a DomainAnswer
	f.must(200, "viewer", "GET", "/api/mail/domains/"+d.ID, nil).Decode(t, &a)
	if a.Domain.State != DomainVerified || a.Domain.VerifiedAt == nil || !a.Domain.VerifiedAt.Equal(t0) {
		t.Fatalf("read = %+v", a.Domain)
	}
	// The DKIM record goes away: the daily re-check fails the domain, and
	// the attention list says so.
	dns.TXT(dk.Name)
	f.clk.Advance(25 * time.Hour)
	f.runDue()
	f.must(200, "viewer", "GET", "/api/mail/domains/"+d.ID, nil).Decode(t, &a)
	if a.Domain.State != DomainFailed || !strings.Contains(a.Domain.Problem, "no DKIM record") {
		t.Fatalf("after the re-check = %+v", a.Domain)
	}
	items, err := f.svc.Attention(context.Background(), "ws_a")
	if err != nil || len(items) != 1 || items[0].Kind != KindSendingDomain || items[0].Severity != usage.Warning || items[0].ProjectID != "prj_a" {
		t.Fatalf("attention = %+v, %v", items, err)
	}
	// DNS that cannot answer changes nothing and says to retry.
	dns.Failing(dk.Name, true)
	if r := f.call("dev", "POST", "/api/mail/domains/"+d.ID+"/verify", nil); r.Status != 503 || r.Code() != "dns_unavailable" {
		t.Fatalf("SERVFAIL: %d %s", r.Status, r.Body)
	}
	f.must(200, "viewer", "GET", "/api/mail/domains/"+d.ID, nil).Decode(t, &a)
	if a.Domain.State != DomainFailed {
		t.Fatalf("state after SERVFAIL = %s", a.Domain.State)
	}
	var l DomainList
	f.must(200, "viewer", "GET", "/api/projects/prj_a/mail/domains", nil).Decode(t, &l)
	if len(l.Domains) != 1 || l.Domains[0].ID != d.ID {
		t.Fatalf("list = %+v", l)
	}
	f.must(200, "dev", "DELETE", "/api/mail/domains/"+d.ID, nil)
	if r := f.call("viewer", "GET", "/api/mail/domains/"+d.ID, nil); r.Status != 404 {
		t.Fatalf("after delete: %d", r.Status)
	}
}

// TestDomainKeySealed: a sending domain's DKIM private key is stored
// sealed (the row alone does not reveal it) and bound to its row.
func TestDomainKeySealed(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{})
	d := f.addDomain("shop.example")
	row, err := getDomain(context.Background(), f.db, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x509.ParsePKCS8PrivateKey(row.Sealed); err == nil {
		t.Fatal("the stored key parses as a private key: it is not sealed")
	}
	if _, err := f.svc.privateKey(row); err != nil {
		t.Fatalf("open: %v", err)
	}
	row.ID = "md_other" // moved to another row, it does not open
	if _, err := f.svc.privateKey(row); err == nil {
		t.Fatal("a key moved to another row opened")
	}
}

// TestDomainRefusals: names that are not domains, the platform's own
// domains, duplicates, the per-project limit and callers without the right
// are refused, and nothing is stored.
func TestDomainRefusals(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{DomainsPerProject: 3, ReservedDomains: []string{"apps.test"}})
	first := f.addDomain("shop.example")
	f.addDomain("news.shop.example")
	for _, c := range []struct {
		name, key, project string
		body               any
		status             int
		code               string
	}{
		{"empty", "dev", "prj_a", map[string]any{"name": ""}, 400, "invalid_request"},
		{"no dot", "dev", "prj_a", map[string]any{"name": "localhost"}, 400, "invalid_request"},
		{"an IP address", "dev", "prj_a", map[string]any{"name": "192.0.2.1"}, 400, "invalid_request"},
		{"an address", "dev", "prj_a", map[string]any{"name": "ada@shop.example"}, 400, "invalid_request"},
		{"a URL", "dev", "prj_a", map[string]any{"name": "https://shop.example"}, 400, "invalid_request"},
		{"underscore", "dev", "prj_a", map[string]any{"name": "my_shop.example"}, 400, "invalid_request"},
		{"the platform's mail domain", "dev", "prj_a", map[string]any{"name": "platform.test"}, 400, "reserved_domain"},
		{"under the apps domain", "dev", "prj_a", map[string]any{"name": "shop.apps.test"}, 400, "reserved_domain"},
		{"unknown field", "dev", "prj_a", map[string]any{"name": "a.example", "selector": "x"}, 400, "unknown_field"},
		{"duplicate", "dev", "prj_a", map[string]any{"name": "SHOP.example"}, 409, "domain_exists"},
		{"viewer", "viewer", "prj_a", map[string]any{"name": "blog.example"}, 403, "insufficient_role"},
		{"read-only key", "readonly", "prj_a", map[string]any{"name": "blog.example"}, 403, "read_only_key"},
		{"key of another project", "otherprj", "prj_a", map[string]any{"name": "blog.example"}, 403, "project_key_mismatch"},
		{"another workspace", "stranger", "prj_a", map[string]any{"name": "blog.example"}, 404, "not_found"},
		{"project in teardown", "dev", "prj_dead", map[string]any{"name": "blog.example"}, 409, "project_teardown_failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.call(c.key, "POST", "/api/projects/"+c.project+"/mail/domains", c.body)
			if r.Status != c.status || r.Code() != c.code {
				t.Fatalf("%d %s, want %d %s: %s", r.Status, r.Code(), c.status, c.code, r.Body)
			}
		})
	}
	if n := f.count("mail_domains"); n != 2 {
		t.Fatalf("domains stored = %d", n)
	}
	f.addDomain("blog.example")
	if r := f.call("dev", "POST", "/api/projects/prj_a/mail/domains", map[string]any{"name": "four.example"}); r.Status != 409 || r.Code() != "domain_limit" {
		t.Fatalf("past the limit: %d %s", r.Status, r.Code())
	}
	// The routes that name a domain check its project and workspace.
	for _, c := range []struct {
		key, method, path string
		status            int
	}{
		{"viewer", "GET", "/api/mail/domains/" + first.ID, 200},
		{"prjkey", "GET", "/api/mail/domains/" + first.ID, 200},
		{"otherprj", "GET", "/api/mail/domains/" + first.ID, 403},
		{"stranger", "GET", "/api/mail/domains/" + first.ID, 404},
		{"dev", "GET", "/api/mail/domains/md_unknown", 404},
		{"viewer", "POST", "/api/mail/domains/" + first.ID + "/verify", 403},
		{"otherprj", "POST", "/api/mail/domains/" + first.ID + "/verify", 403},
		{"stranger", "POST", "/api/mail/domains/" + first.ID + "/verify", 404},
		{"viewer", "DELETE", "/api/mail/domains/" + first.ID, 403},
		{"readonly", "DELETE", "/api/mail/domains/" + first.ID, 403},
		{"otherprj", "DELETE", "/api/mail/domains/" + first.ID, 403},
		{"stranger", "DELETE", "/api/mail/domains/" + first.ID, 404},
		{"prjkey", "DELETE", "/api/mail/domains/" + first.ID, 200},
		{"dev", "DELETE", "/api/mail/domains/" + first.ID, 404},
	} {
		if r := f.call(c.key, c.method, c.path, nil); r.Status != c.status {
			t.Errorf("%s %s as %s: %d, want %d: %s", c.method, c.path, c.key, r.Status, c.status, r.Body)
		}
	}
}

// TestPendingDomainAttention: a sending domain still unverified an hour
// after it was added is an info item of the attention list.
func TestPendingDomainAttention(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{})
	f.addDomain("shop.example")
	if items, err := f.svc.Attention(context.Background(), "ws_a"); err != nil || len(items) != 0 {
		t.Fatalf("at once: %+v, %v", items, err)
	}
	f.clk.Advance(PendingAfter)
	items, err := f.svc.Attention(context.Background(), "ws_a")
	if err != nil || len(items) != 1 || items[0].Severity != usage.Info || !strings.Contains(items[0].Reason, "shop.example is not verified") {
		t.Fatalf("after an hour: %+v, %v", items, err)
	}
	if items, _ := f.svc.Attention(context.Background(), "ws_b"); len(items) != 0 {
		t.Fatalf("another workspace sees %+v", items)
	}
}
