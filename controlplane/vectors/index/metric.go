package index

import (
	"fmt"
	"math"
)

// Metric is a collection's distance function.
type Metric uint8

// The metrics, with the names the API uses.
const (
	// Cosine ranks by cosine similarity; the score is the similarity, from
	// -1 (opposite) to 1 (same direction), higher first.
	Cosine Metric = iota
	// Euclidean ranks by L2 distance; the score is the distance, 0 for
	// identical vectors, lower first.
	Euclidean
	// DotProduct ranks by dot product; the score is the negated dot product
	// (as Cloudflare Vectorize returns it), lower first.
	DotProduct
)

// ParseMetric reads a metric name: cosine, euclidean or dot-product.
func ParseMetric(s string) (Metric, error) {
	switch s {
	case "cosine":
		return Cosine, nil
	case "euclidean":
		return Euclidean, nil
	case "dot-product":
		return DotProduct, nil
	}
	return 0, fmt.Errorf("index: unknown metric %q", s)
}

// String is the metric's API name.
func (m Metric) String() string {
	switch m {
	case Euclidean:
		return "euclidean"
	case DotProduct:
		return "dot-product"
	}
	return "cosine"
}

// Distance is the internal distance of stored vector v from query q
// (smaller is closer). For cosine both are unit vectors already.
func (m Metric) Distance(q, v []float32) float32 {
	if m == Euclidean {
		return L2Sq(q, v)
	}
	return -Dot(q, v)
}

// Score turns an internal distance into the score the API shows.
func (m Metric) Score(d float32) float64 {
	switch m {
	case Cosine:
		s := -float64(d)
		return math.Max(-1, math.Min(1, s))
	case Euclidean:
		return math.Sqrt(math.Max(0, float64(d)))
	}
	return float64(d)
}
