package edge

import (
	"io"
	"net/netip"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/cache"
	"github.com/svcplatform/platform/edge/internal/forward"
)

// maxRefreshes bounds the background revalidations (RFC 5861 §3) in
// flight at once across the edge. When every slot is busy a refresh is
// skipped: the entry's refresh claim (cache.RefreshClaim) lapses and a
// later request tries again, while visitors keep getting the stale answer.
const maxRefreshes = 32

// Results of a background refresh, the label of
// platform_edge_cache_refreshes_total.
const (
	refreshRevalidated = iota // 304: the stored response was updated
	refreshStored             // a new response replaced it (or the origin's answer was not storable)
	refreshFailed             // the origin failed or did not answer in time
	refreshSkipped            // every refresh slot was busy
	numRefreshResults
)

var refreshResultLabels = [numRefreshResults]string{"revalidated", "stored", "failed", "skipped"}

// refresher runs the background revalidations of stale-while-revalidate
// entries: at most maxRefreshes at once, each bounded by OriginTimeout,
// all waited for when the edge stops.
type refresher struct {
	slots chan struct{}
	wg    sync.WaitGroup
}

func newRefresher() *refresher { return &refresher{slots: make(chan struct{}, maxRefreshes)} }

// wait waits for the refreshes in flight.
func (r *refresher) wait() { r.wg.Wait() }

// refresh revalidates ent in the background for the visitor request in
// ctx, which was answered with ent stale (RFC 5861 §3): a GET made from a
// copy of the request, conditional on ent's validators; a 304 updates the
// stored response (cache.Revalidated), any other answer goes to
// cache.Store (or is captured when streamed). Nothing of ctx is used after
// refresh returns.
func (e *Edge) refresh(ctx *fasthttp.RequestCtx, st *site, ent *cache.SharedEntry, client netip.Addr) {
	r := e.refresher
	select {
	case r.slots <- struct{}{}:
	default:
		e.metrics.refreshes[refreshSkipped].Inc()
		return
	}
	dep := st.dep
	// The visitor's request, for the cache's key, Vary and policy; as a
	// GET, since only GET responses are stored.
	vr := fasthttp.AcquireRequest()
	ctx.Request.Header.CopyTo(&vr.Header)
	vr.Header.SetMethod(fasthttp.MethodGet)
	out := fasthttp.AcquireRequest()
	e.outbound(out, ctx, dep.origin, client)
	out.ResetBody() // never the visitor's body stream: it belongs to ctx
	out.Header.SetContentLength(0)
	out.Header.SetMethod(fasthttp.MethodGet)
	out.Header.Del(fasthttp.HeaderRange)
	out.Header.Del(fasthttp.HeaderIfRange)
	ent.Conditional(&out.Header)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() { <-r.slots }()
		defer fasthttp.ReleaseRequest(vr)
		defer fasthttp.ReleaseRequest(out)
		e.metrics.refreshes[e.revalidate(st, dep, ent, vr, out)].Inc()
	}()
}

// revalidate sends out to the origin and hands the answer to the cache;
// it returns the refresh result.
func (e *Edge) revalidate(st *site, dep *deployment, ent *cache.SharedEntry, vr, out *fasthttp.Request) int {
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	sent := e.now()
	if err := e.doOrigin(dep.origin, out, resp); err != nil {
		e.log.Warn("edge: background revalidation failed", "site", st.host, "origin", dep.origin.base, "err", err)
		return refreshFailed
	}
	received := e.now()
	status := resp.StatusCode()
	e.metrics.originStatus(st.kind, status)
	if status == fasthttp.StatusNotModified {
		if _, ok := e.cache.Revalidated(vr, ent, resp, sent, received); ok {
			return refreshRevalidated
		}
		return refreshFailed // a 304 for another representation: the next request fetches
	}
	if status >= 500 {
		return refreshFailed // keep serving the stored response while it may be
	}
	if !resp.IsBodyStream() {
		e.cache.Store(dep.target, vr, resp, sent, received)
		return refreshStored
	}
	cp, _ := e.cache.Capture(dep.target, vr, resp, sent, received)
	if cp == nil {
		return refreshStored
	}
	// Read at most one byte past the bound: past it Capture keeps nothing.
	_, err := io.Copy(cp, io.LimitReader(resp.BodyStream(), e.cache.MaxEntryBytes()+1))
	if c := forward.ResponseConn(resp); err == nil && resp.Header.ContentLength() == -1 && c != nil && c.Ended() {
		err = io.ErrUnexpectedEOF // cut before the last chunk (see originBody)
	}
	if err != nil {
		cp.Abort()
		return refreshFailed
	}
	cp.Finish()
	return refreshStored
}
