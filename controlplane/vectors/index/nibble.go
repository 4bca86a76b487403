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

// nibbleCoder returns v's nibble scale a (nibbleStep times its root mean
// square value) and the code U_i of its value i, clamped to 0..15; past the
// end of v (padding) or for a zero vector the code is 8 (7.5 rounds up: the
// value codes as +0.5a, which a zero-padded query ignores).
func nibbleCoder(v []float32) (float32, func(int) uint8) {
	var sq float64
	for _, x := range v {
		sq += float64(x) * float64(x)
	}
	a := float32(nibbleStep * math.Sqrt(sq/float64(len(v))))
	return a, func(i int) uint8 {
		if i >= len(v) || a == 0 {
			return 8
		}
		return uint8(math.Max(0, math.Min(15, math.Round(float64(v[i])/float64(a)+7.5))))
	}
}

// appendNibbles appends v's nibble codes to dst and returns it with v's
// scale.
func appendNibbles(dst []uint8, v []float32) ([]uint8, float32) {
	a, code := nibbleCoder(v)
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

// Bit planes: the graph keeps each node's nibble codes U split in two,
// H = U>>2 (the high two bits) and L = U&3, each a plane of 2-bit fields in
// its own arena, so Q·U = 4·Q·H + Q·L. A walk reads a neighbour's H plane
// first (half the bytes) and estimates Q·L from H (below); most neighbours
// are farther than the beam's worst by more than the estimate's error and
// are dropped without reading their L plane.
//
// Layout: blocks of 128 dimensions in 32 bytes, byte j of a block holding
// dimensions j, 32+j, 64+j and 96+j in its bits 0-1, 2-3, 4-5 and 6-7
// (the dimension count padded to a multiple of 128 with zeros, which a
// zero-padded query ignores), so the AVX2 kernel shifts and masks each
// field out and multiplies it by the query's 32 bytes in order
// (VPMADDUBSW).

// planeBytes is the size of one plane of a vector's codes.
func planeBytes(dims int) int { return (dims + 127) / 128 * 32 }

// planeDims is the query length the plane kernel takes: dims padded to a
// whole block.
func planeDims(dims int) int { return (dims + 127) / 128 * 128 }

// appendPlanes appends v's high plane then its low plane to dst and
// returns it with v's scale (the nibble scale of appendNibbles).
func appendPlanes(dst []uint8, v []float32) ([]uint8, float32) {
	a, code := nibbleCoder(v)
	for plane := 0; plane < 2; plane++ {
		for b := 0; b < len(v); b += 128 {
			for j := 0; j < 32; j++ {
				var p uint8
				for f := 0; f < 4; f++ {
					u := code(b + 32*f + j)
					if plane == 0 {
						u >>= 2
					}
					p |= (u & 3) << (2 * f)
				}
				dst = append(dst, p)
			}
		}
	}
	return dst, a
}

// The estimate of Q·L from the H plane: Q·L ≈ lowSlope·(Q·H) + lowMean·ΣQ,
// so Q·U ≈ (4+lowSlope)·Q·H + lowMean·ΣQ, with a residual whose standard
// deviation is about √lowVar·‖Q‖. The line is the least-squares fit over
// the nodes a walk ranks (the benchmark's data, docs/notes/2026-11-22-vectors-search.md), not the codes'
// per-dimension means given H (2.12, 1.76, 1.24, 0.86 for H = 0 to 3 on a
// normal source, slope −0.45): the nodes a walk meets resemble the query,
// and where q_i is high within H's interval so is x_i, so Q·L rises with
// Q·H. The residual (mean 0.03, standard deviation 1.13-1.15 ‖Q‖, at most
// 5.6 of 37,000) is close to normal, so a margin of a few standard
// deviations drops few neighbours that would have entered the beam
// (0.09% at 2.5; recall unchanged at 2 in the benchmark).
const (
	lowMean  = 1.395
	lowSlope = 0.0695
	lowVar   = 1.3225
)

// DotU2 returns Σ q_i·P_i over one plane x (planeBytes(len(q)) bytes,
// len(q) a multiple of 128) of 2-bit codes P and int8 query codes q: the
// AVX2 kernel where the CPU has it, else dotU2Go. Integer arithmetic,
// exact: the four products of a byte's fields pairwise add to at most
// 4·2·3·128 in magnitude, inside the kernel's int16.
func DotU2(x []uint8, q []int8) int32 {
	if len(q)%128 != 0 || len(x) < len(q)/4 {
		panic("index: DotU2 on a partial block")
	}
	if useAVX2 && len(q) > 0 {
		return dotU2AVX2(&x[0], &q[0], len(q)/128)
	}
	return dotU2Go(x, q)
}

// dotU2Go is the portable plane dot product.
func dotU2Go(x []uint8, q []int8) int32 {
	var s int32
	for b := 0; b+128 <= len(q); b += 128 {
		xs := x[b/4 : b/4+32 : b/4+32]
		qs := q[b : b+128 : b+128]
		for j, c := range xs {
			s += int32(c&3)*int32(qs[j]) + int32(c>>2&3)*int32(qs[32+j]) +
				int32(c>>4&3)*int32(qs[64+j]) + int32(c>>6)*int32(qs[96+j])
		}
	}
	return s
}

// codeWalkQuery codes q for a graph search in one pass: the int16 codes
// of the int8 re-rank into s.qc (its codes, scale and ‖q‖² only: the
// re-rank's approxDist uses no more), the walk's int8 codes into s.q8
// (padded with zeros to whole plane blocks; s.nq8 is their length padded
// to whole nibble blocks only), their scale, their sum and the sum of their
// squares. The codes round as codeQueryInto and codeQuery8 do, without
// their per-value calls (a fifth of the walk's time at 768 dimensions was
// spent in them).
func (s *searcher) codeWalkQuery(q []float32) int64 {
	// max|q_i| over the bits (non-negative floats order as their bits): the
	// float max builtin costs ~7 ns a value here, this ~0.5.
	var mb uint32
	for _, x := range q {
		mb = max(mb, math.Float32bits(x)&^(1<<31))
	}
	mx := math.Float32frombits(mb)
	qc := &s.qc
	if cap(qc.q) < len(q) {
		qc.q = make([]int16, len(q))
	}
	*qc = qcode{q: qc.q[:len(q)], b: float64(mx) / qMax}
	s.b8 = float64(mx) / 127
	var inv16, inv8 float64
	if mx > 0 {
		inv16, inv8 = 1/qc.b, 1/s.b8
	}
	n := planeDims(len(q))
	if cap(s.q8) < n {
		s.q8 = make([]int8, n)
	}
	q8 := s.q8[:n]
	q16 := qc.q[:len(q)]
	var qq float64
	var sum, sq int64
	for i, x := range q {
		xf := float64(x)
		// Truncation of a positive value is its floor: the offsets keep
		// every value positive (|x·inv| <= the code range).
		c16 := int32(xf*inv16+(qMax+1.5)) - (qMax + 1)
		c8 := int32(xf*inv8+128.5) - 128
		c16 = max(-qMax, min(qMax, c16))
		c8 = max(-127, min(127, c8))
		q16[i] = int16(c16)
		q8[i] = int8(c8)
		qq += xf * xf
		sum += int64(c8)
		sq += int64(c8 * c8)
	}
	clear(q8[len(q):])
	s.q8 = q8
	s.nq8 = (len(q) + 63) / 64 * 64
	s.sumQ = sum
	qc.qq = qq
	qc.qn = math.Sqrt(qq)
	return sq
}

// dotU4Seq sets out[i] to DotU4 of q and the i-th of the len(out) nibble
// code vectors stored one after another in x: one kernel call for them all.
func dotU4Seq(x []uint8, q []int8, out []int32) {
	nb := len(q) / 2
	if len(out) == 0 || nb == 0 {
		return
	}
	if len(q)%64 != 0 || len(x) < len(out)*nb {
		panic("index: dotU4Seq out of range")
	}
	if useAVX2 {
		dotU4Many(&x[0], &q[0], len(q)/64, len(out), &out[0])
		return
	}
	for i := range out {
		out[i] = dotU4Go(x[i*nb:(i+1)*nb], q)
	}
}
