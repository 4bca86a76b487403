package domains

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestLifecycle: an apex with its www name and a subdomain go from pending
// (records asked for, nothing served) through misconfigured (TXT found:
// the name is the project's and served; routing wrong, said in words) to
// verified, and a removed domain leaves the snapshot.
func TestLifecycle(t *testing.T) {
	eachEngine(t, func(t *testing.T, e pgtest.Engine) {
		f := newFixture(t, e, Config{})
		d := f.add("prj_a", "Shop.Example.", RedirectWWW)
		if d.Name != "shop.example" || !d.Apex || d.State != StatePending || d.Redirect == nil || *d.Redirect != "www" ||
			!slices.Equal(d.Hosts, []string{"shop.example", "www.shop.example"}) || d.CheckedAt != nil {
			t.Fatalf("added: %+v", d)
		}
		var kinds []string
		for _, r := range d.Records {
			kinds = append(kinds, r.Type+" "+r.Name+" "+r.Status)
			if r.Type == "TXT" && (!strings.HasPrefix(r.Value, TokenPrefix) || len(r.Value) < len(TokenPrefix)+26) {
				t.Fatalf("TXT value %q", r.Value)
			}
			if r.Type == "CNAME" && r.Value != "shop.apps.test" || r.Type == "A" && r.Value != edgeAddr {
				t.Fatalf("record %+v", r)
			}
		}
		if want := []string{"TXT _platform-challenge.shop.example pending", "A shop.example pending", "CNAME www.shop.example pending"}; !slices.Equal(kinds, want) {
			t.Fatalf("records %q, want %q", kinds, want)
		}

		// Nothing published: pending, not served.
		got := f.verify("dev", d.ID, http.StatusOK)
		if got.State != StatePending || !strings.Contains(got.Problem, "no TXT record at _platform-challenge.shop.example") ||
			got.Records[0].Status != StatusMissing || got.CheckedAt == nil || got.VerifiedAt != nil {
			t.Fatalf("unpublished: %+v", got)
		}
		if h := f.edgeHosts(); len(h) != 0 {
			t.Fatalf("pending domain served: %v", h)
		}
		// A TXT record of another token is wrong, still pending.
		f.dns.TXT("_platform-challenge.shop.example", TokenPrefix+"someoneelse")
		if got = f.verify("dev", d.ID, http.StatusOK); got.State != StatePending || got.Records[0].Status != StatusWrong ||
			!strings.Contains(got.Problem, "holds another value") {
			t.Fatalf("wrong TXT: %+v", got)
		}

		// The TXT record: claimed and served, misconfigured without routing.
		f.dns.TXT(d.Records[0].Name, d.Records[0].Value)
		got = f.verify("dev", d.ID, http.StatusOK)
		if got.State != StateMisconfigured || got.VerifiedAt == nil || !strings.Contains(got.Problem, "shop.example has no A or AAAA record") ||
			!strings.Contains(got.Problem, "no CNAME record at www.shop.example") {
			t.Fatalf("TXT only: %+v", got)
		}
		if h := f.edgeHosts(); !slices.Equal(h, []string{"shop.example>www.shop.example", "www.shop.example"}) {
			t.Fatalf("served %v", h)
		}
		// A stray address and a CNAME elsewhere: said in words.
		f.dns.Addrs("shop.example", edgeAddr, "203.0.113.7")
		f.dns.CNAME("www.shop.example", "elsewhere.example")
		f.dns.Addrs("elsewhere.example", "203.0.113.8")
		got = f.verify("dev", d.ID, http.StatusOK)
		if got.State != StateMisconfigured || !strings.Contains(got.Problem, "also resolves to 203.0.113.7, which is not an edge") ||
			!strings.Contains(got.Problem, "www.shop.example points at elsewhere.example, not at shop.apps.test") {
			t.Fatalf("misrouted: %+v", got)
		}
		if r := got.Records[2]; r.Status != StatusWrong || !slices.Equal(r.Found, []string{"elsewhere.example"}) {
			t.Fatalf("CNAME record %+v", r)
		}
		// Right: verified. The TXT record may go once verified.
		f.dns.Addrs("shop.example", edgeAddr)
		f.dns.CNAME("www.shop.example", "shop.apps.test")
		f.dns.TXT("_platform-challenge.shop.example")
		got = f.verify("dev", d.ID, http.StatusOK)
		if got.State != StateVerified || got.Problem != "" || got.Records[1].Status != StatusOK || got.Records[2].Status != StatusOK {
			t.Fatalf("verified: %+v", got)
		}

		// A subdomain of another project: a flattened record (the edge's
		// address) routes as well as the CNAME.
		sub := f.add("prj_b", "blog.shop.example", "")
		if sub.Apex || len(sub.Records) != 2 || sub.Records[1].Type != "CNAME" || sub.Records[1].Value != "blog.apps.test" {
			t.Fatalf("subdomain: %+v", sub)
		}
		f.dns.TXT(sub.Records[0].Name, sub.Records[0].Value)
		f.dns.Addrs("blog.shop.example", edgeAddr)
		if got := f.verify("dev", sub.ID, http.StatusOK); got.State != StateVerified {
			t.Fatalf("flattened: %+v", got)
		}
		if h := f.edgeHosts(); !slices.Equal(h, []string{"blog.shop.example", "shop.example>www.shop.example", "www.shop.example"}) {
			t.Fatalf("served %v", h)
		}

		// Reading: list, one, as a viewer and the project's key.
		var l CustomDomainList
		f.must(http.StatusOK, "viewer", "GET", "/api/projects/prj_a/domains", nil).Decode(t, &l)
		if len(l.Domains) != 1 || l.Domains[0].ID != d.ID || l.Domains[0].State != StateVerified {
			t.Fatalf("list: %+v", l)
		}
		var a CustomDomainAnswer
		f.must(http.StatusOK, "prjkey", "GET", "/api/domains/"+d.ID, nil).Decode(t, &a)
		if a.Domain.Name != "shop.example" || a.Domain.Records[0].Status != StatusMissing {
			t.Fatalf("get: %+v", a.Domain)
		}
		if n, err := f.svc.Unverified(context.Background(), "ws_a"); err != nil || n != 0 {
			t.Fatalf("unverified %d %v", n, err)
		}

		// Removal: no longer served; the name can be added elsewhere.
		f.must(http.StatusOK, "prjkey", "DELETE", "/api/domains/"+d.ID, nil)
		if h := f.edgeHosts(); !slices.Equal(h, []string{"blog.shop.example"}) {
			t.Fatalf("served after delete: %v", h)
		}
		f.must(http.StatusNotFound, "dev", "GET", "/api/domains/"+d.ID, nil)
		f.add("prj_b", "shop.example", "")
	})
}

// TestApexWithoutEdgeAddresses: without configured edge addresses an
// apex is asked for an ALIAS to the site and verified when it resolves to
// the site's addresses.
func TestApexWithoutEdgeAddresses(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{EdgeAddresses: []string{}})
	d := f.add("prj_a", "shop.example", RedirectApex)
	if len(d.Records) != 3 || d.Records[1].Type != "ALIAS" || d.Records[1].Value != "shop.apps.test" {
		t.Fatalf("records %+v", d.Records)
	}
	f.dns.TXT(d.Records[0].Name, d.Records[0].Value)
	f.dns.Addrs("shop.example", edgeAddr)
	f.dns.CNAME("www.shop.example", "shop.apps.test")
	if got := f.verify("dev", d.ID, http.StatusOK); got.State != StateVerified || got.Records[1].Status != StatusOK {
		t.Fatalf("alias: %+v", got)
	}
	if h := f.edgeHosts(); !slices.Equal(h, []string{"shop.example", "www.shop.example>shop.example"}) {
		t.Fatalf("served %v", h)
	}
	f.dns.Addrs("shop.example", "203.0.113.9")
	if got := f.verify("dev", d.ID, http.StatusOK); got.State != StateMisconfigured || got.Records[1].Status != StatusWrong ||
		!slices.Equal(got.Records[1].Found, []string{"203.0.113.9"}) {
		t.Fatalf("alias elsewhere: %+v", got)
	}
}

// TestTaken: a name claimed by one workspace is refused to another (409
// domain_taken) when added and, for a pending duplicate added before the
// claim, when verified; within the workspace it is domain_in_use.
func TestTaken(t *testing.T) {
	eachEngine(t, func(t *testing.T, e pgtest.Engine) {
		f := newFixture(t, e, Config{})
		// ws_b adds the name first; both are pending.
		var early CustomDomainAnswer
		f.must(http.StatusCreated, "stranger", "POST", "/api/projects/prj_c/domains", map[string]any{"name": "shop.example"}).Decode(t, &early)
		d := f.add("prj_a", "shop.example", RedirectWWW)
		f.publish(d)
		if got := f.verify("dev", d.ID, http.StatusOK); got.State != StateVerified {
			t.Fatalf("verify: %+v", got)
		}
		// The other workspace publishes its own token: still refused.
		f.dns.TXT(early.Domain.Records[0].Name, early.Domain.Records[0].Value)
		if r := f.must(http.StatusConflict, "stranger", "POST", "/api/domains/"+early.Domain.ID+"/verify", nil); r.Code() != "domain_taken" ||
			strings.Contains(string(r.Body), "prj_a") {
			t.Fatalf("verify taken: %s", r.Body)
		}
		var a CustomDomainAnswer
		f.must(http.StatusOK, "stranger", "GET", "/api/domains/"+early.Domain.ID, nil).Decode(t, &a)
		if a.Domain.State != StatePending || !strings.Contains(a.Domain.Problem, "in use by another project") {
			t.Fatalf("taken finding: %+v", a.Domain)
		}
		f.must(http.StatusOK, "stranger", "DELETE", "/api/domains/"+early.Domain.ID, nil)
		for _, tc := range []struct {
			name, key, project, domain, code string
		}{
			{"another workspace", "stranger", "prj_c", "shop.example", "domain_taken"},
			{"another workspace, the www name", "stranger", "prj_c", "www.shop.example", "domain_taken"},
			{"another project of the workspace", "dev", "prj_b", "shop.example", "domain_in_use"},
			{"the same project", "dev", "prj_a", "SHOP.example", "domain_exists"},
			{"the same project, the www name", "dev", "prj_a", "www.shop.example", "domain_exists"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := f.call(tc.key, "POST", "/api/projects/"+tc.project+"/domains", map[string]any{"name": tc.domain})
				if r.Status != http.StatusConflict || r.Code() != tc.code {
					t.Fatalf("%d %s, want 409 %s", r.Status, r.Body, tc.code)
				}
			})
		}
		if h := f.edgeHosts(); !slices.Equal(h, []string{"shop.example>www.shop.example", "www.shop.example"}) {
			t.Fatalf("served %v", h)
		}
	})
}

// TestRefusals: every refusal with its status and code; a refused request
// stores nothing.
func TestRefusals(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{ReservedDomains: []string{"api.platform.example"}, DomainsPerProject: 2})
	own := f.add("prj_a", "mine.example", "")
	f.add("prj_a", "two.example", "")
	www := "www"
	for _, tc := range []struct {
		name, key, method, path string
		body                    any
		status                  int
		code                    string
	}{
		{"empty name", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": " "}, 400, "invalid_domain"},
		{"scheme", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "https://x.example"}, 400, "invalid_domain"},
		{"port", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "x.example:443"}, 400, "invalid_domain"},
		{"path", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "x.example/a"}, 400, "invalid_domain"},
		{"wildcard", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "*.x.example"}, 400, "invalid_domain"},
		{"ip address", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "192.0.2.1"}, 400, "invalid_domain"},
		{"single label", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "localhost"}, 400, "invalid_domain"},
		{"public suffix", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "co.uk"}, 400, "invalid_domain"},
		{"underscore", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "a_b.example"}, 400, "invalid_domain"},
		{"hyphen edge", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "-a.example"}, 400, "invalid_domain"},
		{"over-long label", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": strings.Repeat("a", 64) + ".example"}, 400, "invalid_domain"},
		{"the apps domain", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "apps.test"}, 400, "reserved_domain"},
		{"a site's own address", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "shop.apps.test"}, 400, "reserved_domain"},
		{"under the apps domain", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "a.b.APPS.test."}, 400, "reserved_domain"},
		{"a reserved domain", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "api.platform.example"}, 400, "reserved_domain"},
		{"redirect of a subdomain", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "a.x.example", "redirect": www}, 400, "invalid_redirect"},
		{"unknown redirect", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "x.example", "redirect": "both"}, 400, "invalid_redirect"},
		{"unknown field", "dev", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "x.example", "ttl": 1}, 400, "unknown_field"},
		{"malformed", "dev", "POST", "/api/projects/prj_b/domains", `{"name":`, 400, "invalid_request"},
		{"limit", "dev", "POST", "/api/projects/prj_a/domains", map[string]any{"name": "three.example"}, 409, "domain_limit"},
		{"teardown failed", "dev", "POST", "/api/projects/prj_dead/domains", map[string]any{"name": "x.example"}, 409, "project_teardown_failed"},
		{"viewer adds", "viewer", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "x.example"}, 403, ""},
		{"read-only key adds", "readonly", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "x.example"}, 403, ""},
		{"another project's key adds", "prjkey", "POST", "/api/projects/prj_b/domains", map[string]any{"name": "x.example"}, 403, ""},
		{"another workspace's project", "stranger", "POST", "/api/projects/prj_a/domains", map[string]any{"name": "x.example"}, 404, ""},
		{"viewer verifies", "viewer", "POST", "/api/domains/" + own.ID + "/verify", nil, 403, ""},
		{"read-only key deletes", "readonly", "DELETE", "/api/domains/" + own.ID, nil, 403, ""},
		{"another project's key reads", "otherprj", "GET", "/api/domains/" + own.ID, nil, 403, ""},
		{"another workspace reads", "stranger", "GET", "/api/domains/" + own.ID, nil, 404, ""},
		{"another workspace deletes", "stranger", "DELETE", "/api/domains/" + own.ID, nil, 404, ""},
		{"unknown domain", "dev", "POST", "/api/domains/dom_nothere/verify", nil, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.call(tc.key, tc.method, tc.path, tc.body)
			if r.Status != tc.status || tc.code != "" && r.Code() != tc.code {
				t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
		})
	}
	var n int
	if err := f.db.QueryRowContext(context.Background(), `SELECT count(*) FROM domains`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d domains stored (%v), want 2", n, err)
	}
}

// TestDNSUnavailable: a DNS that cannot answer is 503 dns_unavailable and
// changes nothing.
func TestDNSUnavailable(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{})
	d := f.add("prj_a", "app.shop.example", "")
	f.dns.Failing("_platform-challenge.app.shop.example", true)
	if r := f.must(http.StatusServiceUnavailable, "dev", "POST", "/api/domains/"+d.ID+"/verify", nil); r.Code() != "dns_unavailable" ||
		strings.Contains(string(r.Body), "127.0.0.1") {
		t.Fatalf("%s", r.Body)
	}
	var a CustomDomainAnswer
	f.must(http.StatusOK, "dev", "GET", "/api/domains/"+d.ID, nil).Decode(t, &a)
	if a.Domain.CheckedAt != nil || a.Domain.State != StatePending {
		t.Fatalf("changed: %+v", a.Domain)
	}
}
