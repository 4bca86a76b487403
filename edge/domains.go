package edge

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/edge/internal/certcache"
)

// preloadTimeout bounds one round of certificate preloading.
const preloadTimeout = 2 * time.Minute

// domainHosts are the hosts of a snapshot's custom domains (the verified
// ones: an unverified domain is not in a snapshot), lower-cased, the
// redirecting ones included (they answer over TLS too).
func domainHosts(ds []snapshot.Domain) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		if h := strings.ToLower(strings.TrimSuffix(d.Host, ".")); h != "" && !strings.ContainsAny(h, ":/ ") {
			out = append(out, h)
		}
	}
	return out
}

// preloadDomainCerts loads, in the background, the certificates of the
// snapshot's custom domains into p (the edge's certificate source), so a
// domain's first handshake does not wait for the control plane; under
// ACME only certificates already in the shared cache are loaded (the
// control plane orders them). A nil p does nothing.
func (e *Edge) preloadDomainCerts(p *certcache.Preloader, ds []snapshot.Domain) {
	hosts := domainHosts(ds)
	if p == nil || len(hosts) == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), preloadTimeout)
		defer cancel()
		if n := p.Preload(ctx, hosts); n > 0 {
			e.log.Info("edge: custom domain certificates loaded ahead of visitors", "hosts", n)
		}
	}()
}

// compileDomains adds the custom domains of a snapshot to t: each host
// answers as its project's site (the same deployment, Shield rules, cache
// and site password; cookies scoped to the custom host), or redirects to
// RedirectTo. A domain whose project has no site is skipped, and so is
// one naming a host the table already holds (a site under the apps domain
// or the media host win).
func compileDomains(t *table, ds []snapshot.Domain) error {
	if len(ds) == 0 {
		return nil
	}
	byProject := make(map[string]*site, len(t.sites))
	for _, st := range t.sites {
		if st.projectID != "" && !st.noindex { // production, not a deployment's own address
			byProject[st.projectID] = st
		}
	}
	for _, d := range ds {
		host := strings.ToLower(strings.TrimSuffix(d.Host, "."))
		if host == "" || strings.ContainsAny(host, ":/ ") {
			return fmt.Errorf("%w: custom domain %q", errSnapshot, d.Host)
		}
		st := byProject[d.ProjectID]
		if st == nil {
			continue
		}
		if _, taken := t.sites[host]; taken {
			continue
		}
		c := *st
		c.host = host
		if to := strings.ToLower(strings.TrimSuffix(d.RedirectTo, ".")); to != "" && to != host {
			if strings.ContainsAny(to, ":/ ") {
				return fmt.Errorf("%w: custom domain %s redirects to %q", errSnapshot, host, d.RedirectTo)
			}
			c.redirect = []byte(to)
		}
		t.sites[host] = &c
	}
	return nil
}

// serveDomainRedirect answers a request to a custom domain that redirects
// (st.redirect set) with a redirect to the same path and query on the
// other host, over HTTPS: 301 for GET and HEAD, 308 otherwise so a form's
// method and body survive. It reports false (and writes nothing) for a
// host that does not redirect.
func (e *Edge) serveDomainRedirect(ctx *fasthttp.RequestCtx, st *site, p proto) bool {
	if len(st.redirect) == 0 {
		return false
	}
	uri := requestPath(ctx.Request.Header.RequestURI())
	loc := make([]byte, 0, 16+len(st.redirect)+len(uri))
	loc = append(loc, "https://"...)
	loc = append(loc, st.redirect...)
	if e.httpsPort != 443 {
		loc = append(loc, ':')
		loc = strconv.AppendInt(loc, int64(e.httpsPort), 10)
	}
	loc = append(loc, uri...)
	status := fasthttp.StatusPermanentRedirect
	if ctx.IsGet() || ctx.IsHead() {
		status = fasthttp.StatusMovedPermanently
	}
	rh := &ctx.Response.Header
	rh.SetStatusCode(status)
	rh.SetBytesV(fasthttp.HeaderLocation, loc)
	rh.SetCanonical(hdrCacheControl, valNoStore)
	e.securityHeaders(rh, p, false)
	return true
}
