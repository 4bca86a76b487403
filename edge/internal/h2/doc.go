// Package h2 serves HTTP/2 (RFC 9113) on fasthttp's request and response
// types: each stream's request is decoded into a pooled
// fasthttp.RequestCtx, handed to a fasthttp.RequestHandler, and its
// response is written back as one HEADERS frame and DATA frames cut from
// the response body's own bytes.
//
// A connection is served by two goroutines of its own: the one that
// called ServeConn reads and processes frames, another writes what is
// queued. Handlers run on that reading goroutine when Server.Inline says
// they do not wait on the network (a page from a cache), else on a pooled
// worker goroutine; streamed response bodies are copied by a worker. An
// inline handler that runs past Server.InlineLimit hands the reading to
// another goroutine, so it holds up no other stream of its connection.
//
// Header compression is HPACK (RFC 7541) with tables of fixed size kept
// per connection, so decoding a request and encoding a response do not
// allocate once a connection is warm; Huffman coding is
// golang.org/x/net/http2/hpack's.
//
// Limits: SETTINGS_MAX_CONCURRENT_STREAMS, stream and connection receive
// windows, the header list size (431 past it), a bound on a header
// block's size and CONTINUATION frames and on the time it takes
// (CVE-2024-27316), a budget of streams the client may reset before their
// answer (CVE-2023-44487), a bound on queued control frames (PING and
// SETTINGS floods), per-stream body and write deadlines, and an idle
// timeout. Server push is never used.
package h2
