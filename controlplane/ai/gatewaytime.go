package ai

import (
	"net/http"
	"strconv"
	"time"
)

// HeaderGatewayMs is the response header of every chat answer, plain or
// streamed, on both surfaces: the gateway's own time in milliseconds (three
// decimals), from the handler receiving the request to the answer's header
// being written, less the time spent waiting on upstreams (each candidate
// tried, until its answer or, streamed, its first piece). What the gateway
// adds to the vendor's latency, as LiteLLM's overhead header reports it.
const HeaderGatewayMs = "X-Service-Gateway-Ms"

// setGatewayTime sets HeaderGatewayMs on w: the time since arrived less
// upstream. A zero arrived (an in-process caller's sink) sets nothing.
func setGatewayTime(w http.ResponseWriter, arrived time.Time, upstream time.Duration) {
	if arrived.IsZero() {
		return
	}
	w.Header().Set(HeaderGatewayMs, gatewayMs(time.Since(arrived)-upstream))
}

// gatewayMs formats d as milliseconds with three decimals, never negative.
func gatewayMs(d time.Duration) string {
	return strconv.FormatFloat(float64(max(d, 0))/float64(time.Millisecond), 'f', 3, 64)
}
