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

// DotI8 returns the exact integer dot product of int8 codes x and int16
// query codes q (len(q) >= len(x)): the AVX2 kernel where the CPU has it
// for whole blocks of sixteen, the Go loop for the rest. The caller keeps
// the sum within int32 (|q| <= qMax keeps any 1,536-value sum in range).
func DotI8(x []int8, q []int16) int32 {
	n := len(x)
	q = q[:n]
	var s int32
	i := 0
	if useAVX2 && n >= 16 {
		i = n &^ 15
		s = dotI8AVX2(&x[0], &q[0], i)
	}
	return s + dotI8Go(x[i:], q[i:])
}

// dotI8Go is the portable integer dot product, four accumulators.
func dotI8Go(x []int8, q []int16) int32 {
	n := len(x)
	q = q[:n]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+4 <= n; i += 4 {
		a := x[i : i+4 : i+4]
		b := q[i : i+4 : i+4]
		s0 += int32(a[0]) * int32(b[0])
		s1 += int32(a[1]) * int32(b[1])
		s2 += int32(a[2]) * int32(b[2])
		s3 += int32(a[3]) * int32(b[3])
	}
	for ; i < n; i++ {
		s0 += int32(x[i]) * int32(q[i])
	}
	return (s0 + s1) + (s2 + s3)
}
