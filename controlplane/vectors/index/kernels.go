package index

import "math"

// Dot returns the dot product of a and b (len(b) >= len(a)): the AVX2
// kernel where the CPU has it, else dotGo.
func Dot(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	if useAVX2 && n > 0 {
		return dotAVX2(&a[0], &b[0], n)
	}
	return dotGo(a, b)
}

// L2Sq returns the squared euclidean distance between a and b
// (len(b) >= len(a)): the AVX2 kernel where the CPU has it, else l2SqGo.
func L2Sq(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	if useAVX2 && n > 0 {
		return l2SqAVX2(&a[0], &b[0], n)
	}
	return l2SqGo(a, b)
}

// dotGo is the portable dot product, unrolled eight wide over four
// independent accumulators, so the additions do not wait on each other and
// the compiler drops the bounds checks.
func dotGo(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		x := a[i : i+8 : i+8]
		y := b[i : i+8 : i+8]
		s0 += x[0]*y[0] + x[4]*y[4]
		s1 += x[1]*y[1] + x[5]*y[5]
		s2 += x[2]*y[2] + x[6]*y[6]
		s3 += x[3]*y[3] + x[7]*y[7]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// l2SqGo is the portable squared euclidean distance, unrolled as dotGo.
func l2SqGo(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		x := a[i : i+8 : i+8]
		y := b[i : i+8 : i+8]
		d0, d1, d2, d3 := x[0]-y[0], x[1]-y[1], x[2]-y[2], x[3]-y[3]
		d4, d5, d6, d7 := x[4]-y[4], x[5]-y[5], x[6]-y[6], x[7]-y[7]
		s0 += d0*d0 + d4*d4
		s1 += d1*d1 + d5*d5
		s2 += d2*d2 + d6*d6
		s3 += d3*d3 + d7*d7
	}
	for ; i < n; i++ {
		d := a[i] - b[i]
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}

// NaiveDot is the plain one-accumulator loop, kept as the benchmark's
// baseline.
func NaiveDot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// Normalize scales v to unit length in place and reports whether it could
// (a zero vector cannot).
func Normalize(v []float32) bool {
	n := math.Sqrt(float64(Dot(v, v)))
	if n == 0 || math.IsInf(n, 0) || math.IsNaN(n) {
		return false
	}
	inv := float32(1 / n)
	for i := range v {
		v[i] *= inv
	}
	return true
}
