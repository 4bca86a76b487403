// Package index holds the search kernels of vector collections: a
// contiguous float32 store, the exact (brute-force) top-k search split
// across cores with a filter applied before ranking, and an HNSW graph for
// approximate search of large collections.
//
// Distances are internal and always "smaller is closer": the negated dot
// product of unit vectors for cosine, the squared L2 distance for
// euclidean, and the negated dot product for dot-product. Score turns a
// distance into what the API shows (see Metric.Score).
package index
