package index

import "math"

// Nibble codes: what the graph search walks by. Each vector in the graph
// also keeps 4-bit codes U (0 to 15) with its own scale a, x_i ≈ a·(U_i −
// 7.5), half the bytes of the int8 codes: a query reads about a thousand
// vectors at random places, one cache miss per 64 bytes, so the walk's cost
// is its bytes. The step a is the one that minimises the squared error of
// a 16-level uniform quantizer on a normal source (0.3352 × the vector's
// root mean square value), values beyond the range clamped. The query is
// coded as int8 Q (scale b = max|q_i|/127) and q·x ≈ a·b·(Q·U − 7.5·ΣQ).
// The walk's candidates are ranked again by the int8 codes and the best of
// those in float32 (hnsw.go), so the answer's distances are exact.
//
// Layout: a vector's codes are blocks of 64 dimensions in 32 bytes, byte j
// of a block holding dimension j in its low nibble and dimension 32+j in
// its high one (the dimension count padded to a multiple of 64 with code
// 8, which a zero-padded query ignores), so the AVX2 kernel masks 32 low
// and 32 high nibbles apart and multiplies each half by 32 query bytes in
// order (VPMADDUBSW, unsigned by signed bytes into exact int16 pairs).

// nibbleStep is the optimal step of a 16-level uniform quantizer of a
// normal source, in units of its standard deviation.
const nibbleStep = 0.3352

// nibbleBytes is the size of a vector's nibble codes.
func nibbleBytes(dims int) int { return (dims + 63) / 64 * 32 }

// appendNibbles appends v's nibble codes to dst and returns it with v's
// scale.
func appendNibbles(dst []uint8, v []float32) ([]uint8, float32) {
	var sq float64
	for _, x := range v {
		sq += float64(x) * float64(x)
	}
	a := float32(nibbleStep * math.Sqrt(sq/float64(len(v))))
	code := func(i int) uint8 {
		if i >= len(v) || a == 0 {
			return 8 // 7.5 rounds up: a padded or zero value codes as +0.5a, the query ignores it
		}
		return uint8(math.Max(0, math.Min(15, math.Round(float64(v[i])/float64(a)+7.5))))
	}
	for b := 0; b < len(v); b += 64 {
		for j := 0; j < 32; j++ {
			dst = append(dst, code(b+j)|code(b+32+j)<<4)
		}
	}
	return dst, a
}

// DotU4 returns Σ q_i·U_i over the nibble codes x (nibbleBytes(len(q))
// bytes, len(q) a multiple of 64) and int8 query codes q: the AVX2 kernel
// where the CPU has it, else dotU4Go. Integer arithmetic, exact: a pair of
// products is at most 2·15·128 in magnitude, well inside the kernel's int16.
func DotU4(x []uint8, q []int8) int32 {
	if len(q)%64 != 0 || len(x) < len(q)/2 {
		panic("index: DotU4 on a partial block")
	}
	if useAVX2 && len(q) > 0 {
		return dotU4AVX2(&x[0], &q[0], len(q)/64)
	}
	return dotU4Go(x, q)
}

// dotU4Go is the portable nibble dot product.
func dotU4Go(x []uint8, q []int8) int32 {
	var s0, s1 int32
	for b := 0; b+64 <= len(q); b += 64 {
		xs := x[b/2 : b/2+32 : b/2+32]
		qs := q[b : b+64 : b+64]
		for j, c := range xs {
			s0 += int32(c&15) * int32(qs[j])
			s1 += int32(c>>4) * int32(qs[32+j])
		}
	}
	return s0 + s1
}

// codeQuery8 codes q as int8 into dst (padded with zeros to whole blocks)
// and returns the codes, their scale and their sum.
func codeQuery8(dst []int8, q []float32) ([]int8, float64, int64) {
	var mx float32
	for _, x := range q {
		mx = max(mx, x, -x)
	}
	b := float64(mx) / 127
	inv := 0.0
	if b > 0 {
		inv = 1 / b
	}
	dst = dst[:0]
	var sum int64
	for _, x := range q {
		c := int8(max(-127, min(127, math.Floor(float64(x)*inv+0.5))))
		dst = append(dst, c)
		sum += int64(c)
	}
	for len(dst)%64 != 0 {
		dst = append(dst, 0)
	}
	return dst, b, sum
}
