package edge

import (
	"errors"
	"net"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/edge/internal/listener"
)

// closeUnread ends the connection after this answer, in a lingering way:
// for a refusal sent before the request was read to its end.
func closeUnread(ctx *fasthttp.RequestCtx) {
	ctx.SetConnectionClose()
	listener.LingerOnClose(ctx.Conn())
}

// requestError answers a request fasthttp could not read (its
// ErrorHandler): 431 for a header past MaxHeaderBytes, 408 when the client
// was too slow, 400 when it could not be parsed. The first and the last
// close in a lingering way, as the client may still be writing; a slow
// client has nothing in flight.
func requestError(ctx *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	var ne net.Error
	switch {
	case errors.As(err, &small):
		ctx.Error("Request header too large", fasthttp.StatusRequestHeaderFieldsTooLarge)
		listener.LingerOnClose(ctx.Conn())
	case errors.As(err, &ne) && ne.Timeout():
		ctx.Error("Request timeout", fasthttp.StatusRequestTimeout)
	default:
		ctx.Error("Bad request", fasthttp.StatusBadRequest)
		listener.LingerOnClose(ctx.Conn())
	}
}
