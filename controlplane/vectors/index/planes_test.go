package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/svcplatform/platform/controlplane/vectors/synth"
)

// dotU2Naive is the plane dot product from the layout's definition.
func dotU2Naive(x []uint8, q []int8) int64 {
	var want int64
	for i := range q {
		b, r := i/128, i%128
		c := x[b*32+r%32] >> (2 * (r / 32)) & 3
		want += int64(c) * int64(q[i])
	}
	return want
}

func TestDotU2MatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 128, 384, 768, 1024, 1536} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			x, q := make([]uint8, n/4), make([]int8, n)
			for i := range q {
				q[i] = int8(rng.IntN(256) - 128)
			}
			for i := range x {
				x[i] = uint8(rng.IntN(256))
			}
			want := dotU2Naive(x, q)
			if got := DotU2(x, q); int64(got) != want {
				t.Fatalf("DotU2 %d, want %d", got, want)
			}
			if got := dotU2Go(x, q); int64(got) != want {
				t.Fatalf("dotU2Go %d, want %d", got, want)
			}
		})
	}
	// The extremes: no int16 sum saturates, the total stays exact.
	for _, qv := range []int8{-128, 127} {
		x, q := make([]uint8, 384), make([]int8, 1536)
		for i := range x {
			x[i] = 0xff
		}
		for i := range q {
			q[i] = qv
		}
		if got, want := int64(DotU2(x, q)), int64(1536*3*int(qv)); got != want {
			t.Fatalf("extreme DotU2 %d, want %d", got, want)
		}
	}
}

// FuzzDotU2: the assembly kernel, the Go loop and the layout's definition
// agree on any codes and query.
func FuzzDotU2(f *testing.F) {
	f.Add([]byte{0xff, 0x80, 0x7f, 0x00}, uint64(1))
	f.Add([]byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		blocks := 1 + int(seed%12)
		x, q := make([]uint8, 32*blocks), make([]int8, 128*blocks)
		rng := rand.New(rand.NewPCG(seed, uint64(len(data))))
		for i := range x {
			x[i] = uint8(rng.Uint32())
		}
		for i := range q {
			q[i] = int8(rng.Uint32())
		}
		// The fuzzer's bytes overwrite the start of both.
		for i, c := range data {
			if i < len(x) {
				x[i] = c
			}
			if i < len(q) {
				q[i] = int8(c)
			}
		}
		want := dotU2Naive(x, q)
		if got := DotU2(x, q); int64(got) != want {
			t.Fatalf("DotU2 %d, want %d", got, want)
		}
		if got := dotU2Go(x, q); int64(got) != want {
			t.Fatalf("dotU2Go %d, want %d", got, want)
		}
	})
}

// TestPlanesMatchNibbles: the planes hold the nibble codes, split, with the
// same scale: 4·H + L is the nibble code of every dimension.
func TestPlanesMatchNibbles(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, dims := range []int{16, 48, 64, 200, 768} {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 3)
		}
		nib, a := appendNibbles(nil, v)
		pl, b := appendPlanes(nil, v)
		hi, lo := pl[:len(pl)/2], pl[len(pl)/2:]
		if a != b || len(hi) != planeBytes(dims) || len(lo) != planeBytes(dims) {
			t.Fatalf("dims %d: scale %v/%v, planes %d/%d bytes, want %d", dims, a, b, len(hi), len(lo), planeBytes(dims))
		}
		for i := range v {
			u := nib[i/64*32+i%32]
			if i%64 >= 32 {
				u >>= 4
			}
			u &= 15
			sh := 2 * (i % 128 / 32)
			o := i/128*32 + i%32
			if got := (hi[o]>>sh&3)<<2 | lo[o]>>sh&3; got != u {
				t.Fatalf("dims %d value %d: planes give %d, nibbles %d", dims, i, got, u)
			}
		}
	}
}

// TestDotU4Seq: the one-call scan of vectors stored one after another
// gives each one's DotU4.
func TestDotU4Seq(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, dims := range []int{64, 768} {
		for _, n := range []int{0, 1, 7} {
			x, q := make([]uint8, n*dims/2), make([]int8, dims)
			for i := range x {
				x[i] = uint8(rng.Uint32())
			}
			for i := range q {
				q[i] = int8(rng.Uint32())
			}
			out := make([]int32, n)
			dotU4Seq(x, q, out)
			for i := range out {
				if want := dotU4Go(x[i*dims/2:(i+1)*dims/2], q); out[i] != want {
					t.Fatalf("dims %d vector %d: %d, want %d", dims, i, out[i], want)
				}
			}
		}
	}
}

// TestCodeWalkQuery: the graph search's one-pass query coding gives the
// codes, scales and sums of codeQueryInto and codeQuery8, the walk's codes
// padded with zeros to whole plane blocks.
func TestCodeWalkQuery(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	s := &searcher{}
	for r := 0; r < 100; r++ {
		q := make([]float32, 16+7*r)
		for i := range q {
			q[i] = float32(rng.NormFloat64() * float64(r+1))
		}
		var qc qcode
		NewStore(len(q), Euclidean).q.codeQueryInto(&qc, q, Euclidean)
		q8, b8, sum := codeQuery8(nil, q)
		var sq int64
		for _, c := range q8 {
			sq += int64(c) * int64(c)
		}
		if got := s.codeWalkQuery(q); got != sq || b8 != s.b8 || sum != s.sumQ || qc.b != s.qc.b || qc.qq != s.qc.qq || math.Abs(qc.qn-s.qc.qn) > 1e-12*qc.qn {
			t.Fatalf("dims %d: sums or scales differ", len(q))
		}
		if len(s.q8) != planeDims(len(q)) || s.nq8 != len(q8) {
			t.Fatalf("dims %d: %d codes (%d to nibble blocks), want %d (%d)", len(q), len(s.q8), s.nq8, planeDims(len(q)), len(q8))
		}
		for i := range s.q8 {
			if (i < len(q8) && s.q8[i] != q8[i]) || (i >= len(q8) && s.q8[i] != 0) || (i < len(q) && s.qc.q[i] != qc.q[i]) {
				t.Fatalf("dims %d value %d: codes differ", len(q), i)
			}
		}
	}
}

// TestHNSWPlaneRejection: the walk leaves most rejected neighbours' L
// planes unread and the int8 re-rank takes fewer nodes, for the recall of
// reading every node whole and re-ranking them all (every metric).
// skewed returns n vectors unlike synth's: centres uniform in [-1, 1],
// Laplace noise, and each dimension scaled by its own factor from 0.2 to 5
// (log-uniform), as real embeddings have a few dimensions much larger than
// the rest. The plane estimator's constants were fitted on normal data;
// this is the check that the margins do not cost recall elsewhere.
func skewed(n, dims, clusters int, seed uint64) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, seed^77))
	scale := make([]float64, dims)
	for j := range scale {
		scale[j] = math.Exp(math.Log(0.2) + rng.Float64()*math.Log(25))
	}
	cs := make([][]float64, clusters)
	for i := range cs {
		cs[i] = make([]float64, dims)
		for j := range cs[i] {
			cs[i][j] = 2*rng.Float64() - 1
		}
	}
	out := make([][]float32, n)
	for i := range out {
		c := cs[rng.IntN(clusters)]
		v := make([]float32, dims)
		for j := range v {
			lap := -0.5 * math.Log(1-rng.Float64()) // exponential, then a random sign: Laplace
			if rng.IntN(2) == 0 {
				lap = -lap
			}
			v[j] = float32((c[j] + lap) * scale[j])
		}
		out[i] = v
	}
	return out
}

func TestHNSWPlaneRejection(t *testing.T) {
	n, nq := 1500, 40
	if raceEnabled {
		n, nq = 600, 15
	}
	sets := []struct {
		name          string
		data, queries [][]float32
	}{
		{"normal", synth.Clustered(n, 256, 20, 1.0, 21), synth.Queries(nq, 256, 20, 1.0, 21)},
		// The queries are drawn with the data, then held out.
		{"skewed", skewed(n, 256, 20, 23)[nq:], skewed(n, 256, 20, 23)[:nq]},
	}
	for _, set := range sets {
		for _, m := range []Metric{Cosine, Euclidean, DotProduct} {
			t.Run(set.name+"/"+m.String(), func(t *testing.T) {
				data := make([][]float32, len(set.data))
				for i, v := range set.data {
					data[i] = append([]float32(nil), v...)
					if m != Cosine {
						for j := range data[i] {
							data[i][j] *= float32(1 + i%3)
						}
					}
				}
				s, h := buildGraph(data, 256, m, 9)
				var found [2]int
				var st [2]walkStats
				for _, q := range set.queries {
					p, _ := s.Prepare(q)
					truth := s.Exact(p, 10, nil)
					for i, fast := range []bool{false, true} {
						h.sigmas, h.floatRerank = 0, 16
						if fast {
							h.sigmas, h.floatRerank = DefaultSigmas, FloatRerank
						}
						hits, w := h.search(p, 10, DefaultEf)
						found[i] += overlap(hits, truth)
						st[i].dists += w.dists
						st[i].whole += w.whole
						st[i].int8s += w.int8s
					}
				}
				nq := len(set.queries)
				r0, r1 := float64(found[0])/float64(10*nq), float64(found[1])/float64(10*nq)
				t.Logf("recall %.3f -> %.3f, whole %d -> %d of %d, int8 %d -> %d", r0, r1, st[0].whole, st[1].whole, st[1].dists, st[0].int8s, st[1].int8s)
				if r1 < r0-0.01 || r1 < 0.95 {
					t.Fatalf("recall %.3f with the margins, %.3f without", r1, r0)
				}
				if st[1].whole >= st[1].dists {
					t.Fatalf("nothing saved: whole %d of %d", st[1].whole, st[1].dists)
				}
			})
		}
	}
}
