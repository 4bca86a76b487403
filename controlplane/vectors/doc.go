// Package vectors is the vector collections area: collections of a
// project, each an independent index of fixed dimensions and metric with
// optional namespaces and filterable metadata, in Cloudflare Vectorize's
// shapes. Vectors and metadata live in one SQLite file per collection
// (DATA/vectors/<id>.db); the in-memory index (a contiguous float32 store,
// the metadata index columns and, above a size threshold, an HNSW graph) is
// rebuilt from it at start. An upsert is durable and visible to queries
// when it is answered. See README.md.
package vectors
