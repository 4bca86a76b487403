// Package synth makes seeded, clustered vector sets for the recall tests and
// the benchmark: points scattered around random centres, so that nearest
// neighbours are meaningful (uniform random vectors in many dimensions are
// all nearly equidistant, and any index scores well on them).
package synth

import "math/rand/v2"

// centres draws the cluster centres of seed (unit standard deviation per
// value) and returns the generator positioned after them.
func centres(dims, clusters int, seed uint64) ([][]float64, *rand.Rand) {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	cs := make([][]float64, clusters)
	for i := range cs {
		c := make([]float64, dims)
		for j := range c {
			c[j] = rng.NormFloat64()
		}
		cs[i] = c
	}
	return cs, rng
}

func around(cs [][]float64, n int, spread float64, rng *rand.Rand) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		c := cs[rng.IntN(len(cs))]
		v := make([]float32, len(c))
		for j := range v {
			v[j] = float32(c[j] + spread*rng.NormFloat64())
		}
		out[i] = v
	}
	return out
}

// Clustered returns n vectors of dims values around clusters centres, with
// spread the standard deviation around each centre. The same arguments give
// the same vectors.
func Clustered(n, dims, clusters int, spread float64, seed uint64) [][]float32 {
	cs, rng := centres(dims, clusters, seed)
	return around(cs, n, spread, rng)
}

// Queries returns n query vectors around the same centres as
// Clustered(_, dims, clusters, spread, seed) but from another stream, so
// they are near the data without being in it.
func Queries(n, dims, clusters int, spread float64, seed uint64) [][]float32 {
	cs, _ := centres(dims, clusters, seed)
	return around(cs, n, spread, rand.New(rand.NewPCG(^seed, seed*31+7)))
}
