package edge

import (
	"context"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/rules"
)

// domainSnapshot is the unit edge's site with custom domains: an apex
// redirecting to its www name, a domain of a project without a site, and
// one naming a site's own address.
func domainSnapshot(e *unitEdge, password *snapshot.Password) *snapshot.Snapshot {
	t := e.table.Load()
	st := t.sites["blog.apps.test"]
	var files []snapshot.File
	for p, f := range st.dep.files {
		if p == f.path && !f.redirect {
			files = append(files, snapshot.File{Path: f.path, SHA256: f.sum, Size: f.size, ContentType: string(f.contentType)})
		}
	}
	shield := rules.DefaultSettings()
	shield.DenyIPs = []string{"198.51.100.0/24"}
	return &snapshot.Snapshot{
		Version: 2, AppsDomain: "apps.test", SessionKey: make([]byte, 32),
		Sites: []snapshot.Site{{Host: "blog.apps.test", Slug: "blog", ProjectID: "prj_blog", WorkspaceID: "ws_1", Password: password,
			Deployment: snapshot.Deployment{ID: "dpl_1", Kind: snapshot.KindStatic, CDN: snapshot.CDN{Enabled: true, CacheTTLSeconds: 60}, Files: files}}},
		Workspaces: []snapshot.Workspace{{ID: "ws_1", Shield: shield}},
		Domains: []snapshot.Domain{
			{Host: "Blog.Example.", ProjectID: "prj_blog", RedirectTo: "www.blog.example"},
			{Host: "www.blog.example", ProjectID: "prj_blog"},
			{Host: "orphan.example", ProjectID: "prj_none"},
			{Host: "blog.apps.test", ProjectID: "prj_other"},
		},
	}
}

// TestDomainHosts: a custom domain answers as its project's site (files,
// Shield, site password) or redirects to its other name; domains without
// a site, names the snapshot does not list and names of another site are
// not served, and the ACME host policy follows the same table.
func TestDomainHosts(t *testing.T) {
	e := newUnitEdge(t, rules.DefaultSettings(), map[string][]byte{"index.html": []byte("<h1>blog</h1>")})
	if err := e.apply(context.Background(), domainSnapshot(e, nil), nil); err != nil {
		t.Fatal(err)
	}
	e.httpsPort = 443
	tab := e.table.Load()
	apps := tab.lookupHost([]byte("blog.apps.test"))
	for _, tc := range []struct {
		host, redirect string
		served         bool
	}{
		{"blog.example", "www.blog.example", true},
		{"BLOG.example.:443", "www.blog.example", true},
		{"www.blog.example", "", true},
		{"orphan.example", "", false},
		{"unverified.example", "", false},
		{"x.blog.example", "", false},
	} {
		t.Run(tc.host, func(t *testing.T) {
			st := tab.lookupHost([]byte(tc.host))
			if (st != nil) != tc.served {
				t.Fatalf("served %v, want %v", st != nil, tc.served)
			}
			policy := e.acmeHostPolicy(context.Background(), tc.host)
			if (policy == nil) != tc.served && tc.host == normalized(tc.host) {
				t.Fatalf("ACME policy %v, served %v", policy, tc.served)
			}
			if st == nil {
				return
			}
			if st.dep != apps.dep || st.rules != apps.rules || st.projectID != "prj_blog" || string(st.redirect) != tc.redirect {
				t.Fatalf("site %+v", st)
			}
		})
	}
	if st := tab.lookupHost([]byte("blog.apps.test")); st.projectID != "prj_blog" || st.redirect != nil {
		t.Fatalf("a domain took a site's address: %+v", st)
	}

	// Answers: the same as the apps-domain address, or a redirect.
	serve := func(host, uri, addr string) *fasthttp.RequestCtx {
		var ctx fasthttp.RequestCtx
		request(&ctx, "GET", host, uri, addr, nil)
		e.serve(&ctx, protoHTTPS)
		return &ctx
	}
	if ctx := serve("www.blog.example", "/", "203.0.113.5:1234"); ctx.Response.StatusCode() != 200 || string(ctx.Response.Body()) != "<h1>blog</h1>" {
		t.Fatalf("www: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	if ctx := serve("www.blog.example", "/", "198.51.100.7:1234"); ctx.Response.StatusCode() != 403 {
		t.Fatalf("Shield on the custom domain: %d", ctx.Response.StatusCode())
	}
	var ctx fasthttp.RequestCtx
	request(&ctx, "POST", "blog.example", "/a/b?q=1", "203.0.113.5:1234", nil)
	if !e.serveDomainRedirect(&ctx, tab.lookupHost([]byte("blog.example")), protoHTTPS) ||
		ctx.Response.StatusCode() != fasthttp.StatusPermanentRedirect || string(ctx.Response.Header.Peek("Location")) != "https://www.blog.example/a/b?q=1" {
		t.Fatalf("redirect: %d %s", ctx.Response.StatusCode(), ctx.Response.Header.Peek("Location"))
	}
	ctx.Response.Reset()
	if e.serveDomainRedirect(&ctx, tab.lookupHost([]byte("www.blog.example")), protoHTTPS) || ctx.Response.StatusCode() != 200 ||
		len(ctx.Response.Header.Peek("Location")) != 0 {
		t.Fatal("a host that serves redirected")
	}

	// A site password applies at the custom domain as at the address.
	hash, err := rules.HashPassword("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.apply(context.Background(), domainSnapshot(e, &snapshot.Password{Hash: hash}), nil); err != nil {
		t.Fatal(err)
	}
	a, c := serve("blog.apps.test", "/", "203.0.113.5:1234"), serve("www.blog.example", "/", "203.0.113.5:1234")
	if a.Response.StatusCode() == 200 || c.Response.StatusCode() != a.Response.StatusCode() {
		t.Fatalf("password: address %d, custom domain %d", a.Response.StatusCode(), c.Response.StatusCode())
	}
}

// normalized is host as the ACME host policy receives it (a TLS server
// name: no port, no trailing dot).
func normalized(host string) string {
	var buf [256]byte
	h, _ := normalizeHost(buf[:0], []byte(host))
	return string(h)
}
