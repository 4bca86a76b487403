// Package cache is the edge's response cache, held in memory on ristretto.
//
// It has two parts that share one memory bound:
//
//   - a static-site cache ([Cache.GetStatic], [Cache.SetStatic]) keyed by
//     deployment id, path and content-encoding variant, kept for the
//     deployment's pinned CDN TTL, so a deploy or rollback never serves old
//     bytes;
//   - an RFC 9111 shared cache for server apps and functions ([Cache.Lookup],
//     [Cache.Store], [Cache.Capture], [Cache.Revalidated],
//     [Cache.StaleOnError]) directed by the origin: CDN-Cache-Control (RFC
//     9213) ahead of Cache-Control, heuristic freshness only from
//     Last-Modified, stale responses only as RFC 5861 and RFC 9111 §4.2.4
//     allow, Range requests answered from stored complete responses
//     ([SharedEntry.RespondTo]), origin header fields passed through
//     unchanged (Date included, [SetDate]) except Age and CDN-Cache-Control.
//
// The policy half of the shared cache is pure and usable on its own:
// [ParseCacheControl], [ParseTargetedCacheControl], [ParseHTTPDate],
// [Decide], [FreshnessLifetime], [HeuristicLifetime], [InitialAge],
// [ParseRange], [ParseVary] and [AppendVaryKey].
//
// # Buffer ownership
//
// Entries are immutable once stored and shared by every goroutine that reads
// them: callers must not modify any slice returned by an entry (Body, ETag,
// header values, ...). [StaticEntry.Respond] and [SharedEntry.Respond] hand
// the body to fasthttp with SetBodyRaw, without copying; fasthttp only reads
// it. Slices passed in (keys, responses to store) are copied, so callers keep
// ownership of their buffers.
//
// # Allocation
//
// The hit paths do not allocate: keys are encoded into a pooled buffer and
// hashed with xxhash into the uint64 ristretto key; the full encoded key is
// kept in the entry and compared on every hit, so a hash collision is a miss,
// never a wrong answer.
package cache
