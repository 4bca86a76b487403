//lint:file-ignore SA1019 x/net/http2's Server.ServeConn is the API that serves HTTP/2 on a TLS connection the caller handshook itself (tlsmux.go); it is deprecated in favour of http.Server.Serve, which needs a listener and a connection goroutine of net/http's, and on Go 1.27 it wraps net/http's own server.

package edge

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"

	"golang.org/x/net/http2"
)

// HTTP/2 settings of the edge.
const (
	// h2MaxStreams is SETTINGS_MAX_CONCURRENT_STREAMS (nginx and Go
	// default to 100 and 250).
	h2MaxStreams = 250
	// h2StreamWindow and h2ConnWindow are the receive windows for request
	// bodies: 1 MiB per stream, 4 MiB per connection, so an upload is not
	// held up by WINDOW_UPDATE round trips.
	h2StreamWindow = 1 << 20
	h2ConnWindow   = 4 << 20
)

// newH2ConnServer returns the function that serves one HTTP/2 connection
// of the HTTPS listener (tlsMux.serveH2): x/net/http2's Server.ServeConn
// on the TLS connection the mux handshook, with base's handler and limits.
// Nothing sits between the TLS connection and the HTTP/2 server: no
// net/http connection state, no queue. The connection's context carries its
// remote address (one per connection, so no request parses RemoteAddr).
// Shutdown on base starts the graceful close (GOAWAY) of every connection.
// It returns nil (base then serves HTTP/2 from the mux's queue) when x/net
// refuses the TLS configuration.
func (e *Edge) newH2ConnServer(base *http.Server) func(*tls.Conn) {
	h2s := &http2.Server{
		MaxConcurrentStreams:         h2MaxStreams,
		MaxUploadBufferPerStream:     h2StreamWindow,
		MaxUploadBufferPerConnection: h2ConnWindow,
		IdleTimeout:                  e.cfg.IdleTimeout,
		WriteByteTimeout:             e.cfg.WriteTimeout,
		// Frames from many streams are interleaved in turn, the cheapest
		// scheduler: the edge answers whole responses, priorities buy
		// nothing.
		NewWriteScheduler: func() http2.WriteScheduler { return http2.NewRandomWriteScheduler() },
	}
	if err := http2.ConfigureServer(base, h2s); err != nil {
		e.log.Warn("edge: HTTP/2 served by net/http", "err", fmt.Errorf("edge: HTTP/2 server: %w", err))
		return nil
	}
	handler := http.HandlerFunc(e.serveH2)
	return func(c *tls.Conn) {
		h2s.ServeConn(c, &http2.ServeConnOpts{
			Context:    context.WithValue(context.Background(), h2ConnKey{}, c.RemoteAddr()),
			BaseConfig: base,
			Handler:    handler,
		})
	}
}
