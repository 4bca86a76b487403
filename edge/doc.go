// Package edge is the hosting platform's edge: it serves every visitor
// request for a hosted static site, server app or function, through Shield
// and the cache, over HTTPS (TLS 1.2/1.3; HTTP/1.1 with fasthttp, HTTP/2 with
// net/http by ALPN) and HTTP/3 (quic-go), and redirects plain HTTP to HTTPS.
//
// # Request flow
//
//	accept (TCP+TLS: HTTP/1.1 fasthttp, or HTTP/2 and QUIC bridged into the same handler)
//	  -> host routing: the Host header in an immutable table, swapped atomically on sync;
//	     an unknown host gets a plain 404
//	  -> client address: the peer, or X-Forwarded-For (right-most untrusted hop)
//	     when the peer is a trusted proxy
//	  -> Shield: rules.Ruleset.Evaluate with the target kind's scope (static sites:
//	     every rule; apps: country only, before the app is woken; functions: the
//	     rules pinned at their deploy, before their code runs); refusals are 403,
//	     refusals and log-only catches are counted and flushed to the control plane
//	  -> static sites: site password (form, 7-day cookie, throttled), file guard (404),
//	     then the static cache keyed by deployment, path and coding, or the file
//	     read from its blob, compressed (gzip, brotli) and kept for the
//	     deployment's pinned TTL; ETag/Last-Modified/304, Range, index.html, 404.html
//	  -> apps and functions: the RFC 9111 shared cache, or the origin through a
//	     pooled client (X-Forwarded-*, hop-by-hop stripped, bodies streamed,
//	     timeouts, 502/503/504 pages)
//	  -> security headers (HSTS on HTTPS, nosniff, frame and referrer policy), Alt-Svc
//
// # Sync
//
// The configuration is a snapshot (controlplane/edgesync/snapshot) pulled by
// long-poll from GET /edge/v1/config with an edge token, compiled, checked
// (every blob a static site serves is made local first), swapped in with one
// atomic store and saved to DataDir/edge/config.json, from which a restarted
// edge serves while the control plane is down. `platform serve` runs its edge
// over the very same endpoint.
//
// # Buffer ownership
//
// Handlers never keep a *fasthttp.RequestCtx or a slice of it after they
// return. Cache entries are immutable and handed to fasthttp with SetBodyRaw;
// fasthttp only reads them. A table, once published, is never modified.
//
// The static cache-hit path, Shield included, does not allocate; see
// TestStaticHitDoesNotAllocate and BenchmarkStaticHit.
package edge
