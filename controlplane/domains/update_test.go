package domains

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestUpdateRedirect: an apex's redirect choice changes the hosts the
// edges answer at, at once for a claimed domain; a www name held
// elsewhere is refused as when adding.
func TestUpdateRedirect(t *testing.T) {
	eachEngine(t, func(t *testing.T, e pgtest.Engine) {
		f := newFixture(t, e, Config{})
		d := f.add("prj_a", "shop.example", "")
		f.publish(d)
		if got := f.verify("dev", d.ID, http.StatusOK); got.State != StateVerified {
			t.Fatalf("verify: %+v", got)
		}
		sub := f.add("prj_a", "app.shop.example", "")
		for _, tc := range []struct {
			redirect any
			hosts    []string
		}{
			{"www", []string{"shop.example>www.shop.example", "www.shop.example"}},
			{"apex", []string{"shop.example", "www.shop.example>shop.example"}},
			{nil, []string{"shop.example"}},
		} {
			var a CustomDomainAnswer
			f.must(http.StatusOK, "dev", "PATCH", "/api/domains/"+d.ID, map[string]any{"redirect": tc.redirect}).Decode(t, &a)
			if h := f.edgeHosts(); !slices.Equal(h, tc.hosts) {
				t.Fatalf("redirect %v: served %v, want %v", tc.redirect, h, tc.hosts)
			}
			if want := 2 + len(tc.hosts) - 1; len(a.Domain.Records) != want {
				t.Fatalf("redirect %v: records %+v", tc.redirect, a.Domain.Records)
			}
		}
		// www.shop.example claimed by another workspace.
		var other CustomDomainAnswer
		f.must(http.StatusCreated, "stranger", "POST", "/api/projects/prj_c/domains", map[string]any{"name": "www.shop.example"}).Decode(t, &other)
		f.dns.TXT(other.Domain.Records[0].Name, other.Domain.Records[0].Value)
		f.must(http.StatusOK, "stranger", "POST", "/api/domains/"+other.Domain.ID+"/verify", nil)
		for _, tc := range []struct {
			name, key, id string
			body          any
			status        int
			code          string
		}{
			{"www held by another workspace", "dev", d.ID, map[string]any{"redirect": "www"}, 409, "domain_taken"},
			{"a subdomain", "dev", sub.ID, map[string]any{"redirect": "apex"}, 400, "invalid_redirect"},
			{"unknown choice", "dev", d.ID, map[string]any{"redirect": "both"}, 400, "invalid_redirect"},
			{"unknown field", "dev", d.ID, map[string]any{"name": "x.example"}, 400, "unknown_field"},
			{"viewer", "viewer", d.ID, map[string]any{"redirect": "www"}, 403, ""},
			{"another workspace", "stranger", d.ID, map[string]any{"redirect": "www"}, 404, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := f.call(tc.key, "PATCH", "/api/domains/"+tc.id, tc.body)
				if r.Status != tc.status || tc.code != "" && r.Code() != tc.code {
					t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
				}
			})
		}
		if h := f.edgeHosts(); !slices.Equal(h, []string{"shop.example", "www.shop.example"}) {
			t.Fatalf("served after refusals %v", h)
		}
	})
}

// TestAddConcurrent: the same name added by several requests at once is
// added once; the others are 409 domain_exists.
func TestAddConcurrent(t *testing.T) {
	eachEngine(t, func(t *testing.T, e pgtest.Engine) {
		f := newFixture(t, e, Config{})
		const n = 6
		codes := make(chan string, n)
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				r := f.call("dev", "POST", "/api/projects/prj_a/domains", map[string]any{"name": "race.example"})
				codes <- strconv.Itoa(r.Status) + " " + r.Code()
			})
		}
		wg.Wait()
		close(codes)
		var got []string
		for c := range codes {
			got = append(got, c)
		}
		slices.Sort(got)
		want := []string{"201 "}
		for range n - 1 {
			want = append(want, "409 domain_exists")
		}
		if !slices.Equal(got, want) {
			t.Fatalf("answers %q", got)
		}
	})
}
