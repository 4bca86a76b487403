package index

import (
	"math"
	"runtime"
	"slices"
	"sync"
)

// Quantized exact search. Each stored vector x also keeps int8 codes X with
// its own scale a (a = max|x_i| / 127, so a vector's codes use the whole
// range whatever its neighbours hold, and adding a vector never re-codes
// the others) and two error terms: xn = a·‖X‖ and en = ‖x − a·X‖. A query
// q is coded as int16 Q with scale b (|Q_i| <= qMax) and f = q − b·Q. Then,
// exactly in real numbers,
//
//	q·x = a·b·(Q·X) + a·(f·X) + (q·e),  e = x − a·X
//
// and by Cauchy-Schwarz |a·(f·X) + q·e| <= ‖f‖·xn + ‖q‖·en. Q·X is an
// integer the kernel computes exactly, so every slot gets a lower and an
// upper bound on its distance. The scan keeps the k smallest upper bounds;
// T, the k-th of them, is beaten by at least k slots, so a slot whose lower
// bound is above T (plus twice the rounding error of the float32 kernel) is
// not in the float32 top k and only the others are re-ranked in float32:
// the answer is ExactFloat's, distances and tie order included.

// qMax bounds the query codes: 127 × 8191 × 1536 < 2^31, so the int32
// sums of every allowed dimension count stay exact.
const qMax = 8191

// minQuantized is the slot count from which Exact scans the codes; below
// it the float32 scan is as fast.
const minQuantized = 2048

// u is float32's unit roundoff.
const u = 1.0 / (1 << 24)

// codes is the quantized form of a store's vectors, slot after slot.
type codes struct {
	x     []int8
	scale []float32 // a per slot
	xn    []float32 // a·‖X‖, rounded up
	en    []float32 // ‖x − a·X‖, rounded up
	sq    []float64 // ‖x‖² (euclidean)
	// maxNorm is the largest ‖x‖ added: it bounds the float32 kernel's
	// rounding.
	maxNorm float64
}

// up rounds a non-negative bound up to a float32 that is not below it.
func up(v float64) float32 {
	return math.Nextafter32(float32(v*(1+1e-6)), float32(math.Inf(1)))
}

// add codes vector v.
func (c *codes) add(v []float32) {
	var m float64
	for _, x := range v {
		m = math.Max(m, math.Abs(float64(x)))
	}
	a := float32(m / 127)
	c.x = growArena(c.x, len(v))
	var xx, ee, sq float64
	for _, x := range v {
		var code float64
		if a > 0 {
			code = math.Max(-127, math.Min(127, math.Round(float64(x)/float64(a))))
		}
		c.x = append(c.x, int8(code))
		e := float64(x) - float64(a)*code
		ee += e * e
		xx += code * code
		sq += float64(x) * float64(x)
	}
	c.scale = append(c.scale, a)
	c.xn = append(c.xn, up(float64(a)*math.Sqrt(xx)))
	c.en = append(c.en, up(math.Sqrt(ee)))
	c.sq = append(c.sq, sq)
	c.maxNorm = math.Max(c.maxNorm, math.Sqrt(sq))
}

func (c *codes) bytes() int {
	return cap(c.x) + 12*cap(c.scale) + 8*cap(c.sq)
}

// qcode is a query's int16 form.
type qcode struct {
	q     []int16
	b     float64 // scale
	fn    float64 // ‖q − b·Q‖, rounded up
	qn    float64 // ‖q‖
	qq    float64 // ‖q‖²
	gamma float64 // bound on |float32 kernel − exact| for any stored slot
}

// codeQuery codes q for a store of metric m and dimension count d.
func (c *codes) codeQuery(q []float32, m Metric) *qcode {
	r := &qcode{}
	c.codeQueryInto(r, q, m)
	return r
}

// codeQueryInto codes q into r, reusing r's code slice. Any rounding of
// q_i/b to a code within ±qMax keeps the bounds exact (f is computed from
// the codes chosen), so it rounds with Floor, a single instruction.
func (c *codes) codeQueryInto(r *qcode, q []float32, m Metric) {
	var mx float32
	for _, x := range q {
		mx = max(mx, x, -x)
	}
	if cap(r.q) < len(q) {
		r.q = make([]int16, len(q))
	}
	*r = qcode{q: r.q[:len(q)], b: float64(mx) / qMax}
	var ff float64
	inv := 0.0
	if r.b > 0 {
		inv = 1 / r.b
	}
	for i, x := range q {
		xf := float64(x)
		code := math.Floor(xf*inv + 0.5)
		code = max(-qMax, min(qMax, code))
		r.q[i] = int16(code)
		f := xf - r.b*code
		ff += f * f
		r.qq += xf * xf
	}
	r.fn = math.Sqrt(ff)*(1+1e-9) + 1e-300
	r.qn = math.Sqrt(r.qq)
	d := float64(len(q))
	if m == Euclidean {
		s := r.qn + c.maxNorm
		r.gamma = 1.1 * (d + 3) * u * s * s
	} else {
		r.gamma = 1.1 * (d + 3) * u * r.qn * c.maxNorm
	}
}

// bounds returns the lower and upper bound of slot's distance from the
// query (the internal distance: −dot, or squared L2).
func (c *codes) bounds(qc *qcode, slot, dims int, euclid bool) (lb, ub float64) {
	o := slot * dims
	approx := float64(c.scale[slot]) * qc.b * float64(DotI8(c.x[o:o+dims:o+dims], qc.q))
	err := (qc.fn*float64(c.xn[slot])+qc.qn*float64(c.en[slot]))*(1+1e-9) + 1e-300
	if euclid {
		base := qc.qq + c.sq[slot] - 2*approx
		return base - 2*err - 1e-12*base, base + 2*err + 1e-12*base
	}
	return -approx - err, -approx + err
}

// approxDist is slot's distance from the coded query without the bound:
// what the graph search walks by.
func (c *codes) approxDist(qc *qcode, slot, dims int, euclid bool) float32 {
	o := slot * dims
	approx := float64(c.scale[slot]) * qc.b * float64(DotI8(c.x[o:o+dims:o+dims], qc.q))
	if euclid {
		return float32(qc.qq + c.sq[slot] - 2*approx)
	}
	return float32(-approx)
}

// ubHeap is a max-heap of the k smallest upper bounds seen.
type ubHeap struct {
	k int
	h []float64
}

// limit is the k-th smallest upper bound so far (+Inf until k are seen).
func (u *ubHeap) limit() float64 {
	if len(u.h) < u.k {
		return math.Inf(1)
	}
	return u.h[0]
}

func (u *ubHeap) push(v float64) {
	h := u.h
	if len(h) < u.k {
		h = append(h, v)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if h[p] >= h[i] {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		u.h = h
		return
	}
	if v >= h[0] {
		return
	}
	h[0] = v
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(h) && h[l] > h[m] {
			m = l
		}
		if r := l + 1; r < len(h) && h[r] > h[m] {
			m = r
		}
		if m == i {
			return
		}
		h[m], h[i] = h[i], h[m]
		i = m
	}
}

type cand struct {
	slot int32
	lb   float64
}

// qpart is one worker's share of a quantized scan.
type qpart struct {
	ubs   ubHeap
	cands []cand
}

// scanCodes bounds slots [lo, hi) into p.
func (s *Store) scanCodes(qc *qcode, lo, hi int, accept Accept, p *qpart) {
	euclid := s.metric == Euclidean
	slack := 2 * qc.gamma
	for i := lo; i < hi; i++ {
		if !s.alive[i] || (accept != nil && !accept(int32(i))) {
			continue
		}
		lb, ub := s.q.bounds(qc, i, s.dims, euclid)
		p.ubs.push(ub)
		lim := p.ubs.limit() + slack
		if lb <= lim {
			p.cands = append(p.cands, cand{int32(i), lb})
			if len(p.cands) >= 4096+8*p.ubs.k {
				p.cands = slices.DeleteFunc(p.cands, func(c cand) bool { return c.lb > lim })
			}
		}
	}
}

// quantized is ExactFrom over the codes with a float32 re-rank of the
// slots the bounds keep.
func (s *Store) quantized(q []float32, k, first int, accept Accept) []Hit {
	n := len(s.alive)
	if k <= 0 || first >= n {
		return nil
	}
	qc := s.q.codeQuery(q[:s.dims], s.metric)
	workers := max(1, runtime.GOMAXPROCS(0))
	if n-first < minParallel {
		workers = 1
	}
	parts := make([]qpart, workers)
	chunk := (n - first + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range parts {
		lo, hi := first+w*chunk, min(first+(w+1)*chunk, n)
		parts[w].ubs.k = k
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func(p *qpart) {
			defer wg.Done()
			s.scanCodes(qc, lo, hi, accept, p)
		}(&parts[w])
	}
	wg.Wait()
	all := ubHeap{k: k}
	for _, p := range parts {
		for _, v := range p.ubs.h {
			all.push(v)
		}
	}
	lim := all.limit() + 2*qc.gamma
	t := newTopK(k)
	for _, p := range parts {
		for _, c := range p.cands {
			if c.lb <= lim {
				t.push(Hit{Slot: c.slot, Dist: s.metric.Distance(q, s.Vector(c.slot))})
			}
		}
	}
	return t.sorted()
}
