package edge

import (
	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/edge/internal/h2"
)

// HTTP/2 settings of the edge.
const (
	// h2MaxStreams is SETTINGS_MAX_CONCURRENT_STREAMS (nginx and Go
	// default to 128 and 250).
	h2MaxStreams = 250
	// h2StreamWindow and h2ConnWindow are the receive windows for request
	// bodies: 1 MiB per stream, 4 MiB per connection, so an upload is not
	// held up by WINDOW_UPDATE round trips.
	h2StreamWindow = 1 << 20
	h2ConnWindow   = 4 << 20
	// h2HeaderListSlack is added to MaxHeaderBytes for
	// SETTINGS_MAX_HEADER_LIST_SIZE, which counts 32 octets more per field
	// than the fields' own (RFC 9113 §6.5.2).
	h2HeaderListSlack = 64 * 32
)

// newH2 returns the edge's HTTP/2 server (edge/internal/h2), served on
// the TLS connections tlsMux handshook (tlsMux.serveH2): each request is
// decoded into a pooled fasthttp.RequestCtx and answered by the very
// handler chain of HTTP/1.1 (serve with protoH2). Requests for static
// sites run on the connection's goroutine (a cached page costs no
// goroutine switch and no allocation; see h2Inline); the others, and
// every request with a body, on a worker goroutine. StartShutdown begins
// the graceful close of every connection (GOAWAY); tlsMux.waitH2 waits
// for them.
func (e *Edge) newH2() *h2.Server {
	srv := &h2.Server{
		Handler:              e.serveH2Request,
		Inline:               e.h2Inline,
		MaxConcurrentStreams: h2MaxStreams,
		StreamWindow:         h2StreamWindow,
		ConnWindow:           h2ConnWindow,
		MaxHeaderListSize:    uint32(e.cfg.MaxHeaderBytes) + h2HeaderListSlack,
		ReadTimeout:          e.cfg.ReadTimeout,
		IdleTimeout:          e.cfg.IdleTimeout,
		WriteTimeout:         e.cfg.WriteTimeout,
		BodyTimeout:          e.cfg.BodyTimeout,
		NoDefaultContentType: true,
		Logger:               fastLogger{e.log},
		Now:                  e.now,
	}
	return srv
}

// serveH2Request answers one HTTP/2 request.
func (e *Edge) serveH2Request(ctx *fasthttp.RequestCtx) { e.serve(ctx, protoH2) }

// h2Inline reports the HTTP/2 requests answered on the connection's own
// goroutine: GET and HEAD for static sites and for hosts no site answers
// at. A cache hit takes microseconds; a miss that takes longer than
// h2.DefaultInlineLimit (reading a file, compressing it, fetching its
// blob) hands the connection's reading to another goroutine meanwhile.
// Server apps and functions wait on their origin, so they run on a
// worker.
func (e *Edge) h2Inline(ctx *fasthttp.RequestCtx) bool {
	if !ctx.IsGet() && !ctx.IsHead() {
		return false
	}
	st := e.table.Load().lookupHost(ctx.Request.Header.Host())
	return st == nil || st.kind == kindStatic
}
