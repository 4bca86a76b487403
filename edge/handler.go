package edge

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/rules"
)

// serveHTTPS is the handler of the HTTPS listener.
func (e *Edge) serveHTTPS(ctx *fasthttp.RequestCtx) { e.serve(ctx, protoHTTPS) }

// serve answers one visitor request, in the order of the request flow
// (see the package documentation): host routing, client address, Shield,
// then the target kind's own path. It does not allocate on a static cache
// hit. It keeps nothing of ctx after it returns.
func (e *Edge) serve(ctx *fasthttp.RequestCtx, p proto) {
	start := time.Now()
	t := e.table.Load()
	st := t.lookupHost(ctx.Request.Header.Host())
	if st == nil {
		e.plain(ctx, p, fasthttp.StatusNotFound, bodyUnknownHost)
		e.metrics.request(kindUnknownLabel, ctx.Response.StatusCode(), start)
		if e.access != nil {
			e.access.log(ctx, &accessEntry{start: start, proto: p, client: peerAddr(ctx)}, nil)
		}
		return
	}
	addr := clientAddr(&ctx.Request.Header, peerAddr(ctx), e.trusted)
	facts := rules.Facts{Addr: addr, UserAgent: ctx.Request.Header.UserAgent(), Path: ctx.Path(), Target: st.target}
	d := st.rules.Evaluate(&facts, e.geo)
	if d.Count {
		e.counts.AddDecision(st.projectID, d, e.now())
	}
	e.metrics.decision(st.kind, d)
	var upstream time.Duration
	switch {
	case d.Verdict == rules.Refuse:
		e.plain(ctx, p, d.Status, refusalBody(d.Rule))
	case e.serveDomainRedirect(ctx, st, p): // a custom domain's other name (domains.go)
	case e.storageRefused(ctx, st, p): // the storage host's own answers (storage.go)
	case st.kind == kindStatic:
		e.serveStatic(ctx, t, st, addr, p)
	default:
		upstream = e.proxy(ctx, st, addr, p)
	}
	if st.noindex { // a deployment's own address: kept out of search engines
		ctx.Response.Header.SetCanonical(hdrRobots, valNoIndex)
	}
	e.metrics.request(int(st.kind), ctx.Response.StatusCode(), start)
	if e.access != nil {
		e.access.log(ctx, &accessEntry{start: start, proto: p, client: addr, decision: d, upstream: upstream}, e.geo)
	}
}

// Bodies of the edge's own plain answers.
var (
	bodyUnknownHost   = []byte("404 page not found: no site answers at this address\n")
	bodyNotFound      = []byte("404 page not found\n")
	bodyMethod        = []byte("405 method not allowed\n")
	bodyRangeNotSat   = []byte("416 range not satisfiable\n")
	bodyCountry       = []byte(rules.BodyCountry + "\n")
	bodyDenyList      = []byte(rules.BodyDenyList + "\n")
	bodyAICrawler     = []byte(rules.BodyAICrawler + "\n")
	bodyForbidden     = []byte("403 forbidden\n")
	bodyTooLarge      = []byte("413 request body too large\n")
	bodyUnavailable   = []byte("503 service unavailable: try again shortly\n")
	bodyBadRequest    = []byte("400 bad request\n")
	bodyFileReadError = []byte("502 bad gateway: the file could not be read; try again shortly\n")
)

func refusalBody(r rules.Rule) []byte {
	switch r {
	case rules.RuleCountry:
		return bodyCountry
	case rules.RuleDenyList:
		return bodyDenyList
	case rules.RuleAICrawler:
		return bodyAICrawler
	}
	return bodyForbidden
}

// plain answers status with a plain-text body that no cache keeps.
func (e *Edge) plain(ctx *fasthttp.RequestCtx, p proto, status int, body []byte) {
	r := &ctx.Response
	r.Header.SetStatusCode(status)
	r.Header.SetContentTypeBytes(valTextPlain)
	r.Header.SetCanonical(hdrCacheControl, valNoStore)
	e.securityHeaders(&r.Header, p, false)
	r.SetBodyRaw(body)
}
