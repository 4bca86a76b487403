package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/svcplatform/platform/controlplane/vectors/synth"
)

func TestDotI8MatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 15, 16, 17, 63, 64, 65, 100, 384, 768, 1024, 1536} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			x, q := make([]int8, n), make([]int16, n)
			var want int64
			for i := range x {
				x[i], q[i] = int8(rng.IntN(255)-127), int16(rng.IntN(2*qMax+1)-qMax)
				want += int64(x[i]) * int64(q[i])
			}
			if got := DotI8(x, q); int64(got) != want {
				t.Fatalf("DotI8 %d, want %d", got, want)
			}
			if got := dotI8Go(x, q); int64(got) != want {
				t.Fatalf("dotI8Go %d, want %d", got, want)
			}
		})
	}
	// The extremes stay in range at the largest dimension count.
	x, q := make([]int8, 1536), make([]int16, 1536)
	for i := range x {
		x[i], q[i] = -127, -qMax
	}
	if got, want := int64(DotI8(x, q)), int64(1536*127*qMax); got != want {
		t.Fatalf("extreme DotI8 %d, want %d", got, want)
	}
}

// TestQuantizedExactEqualsFloat is the exactness test of the int8 path: on
// seeded clustered data (plus exact duplicates, so ties occur), for every
// metric, with deletes, filters and several k, Exact (codes scanned, the
// bounded candidates re-ranked) returns exactly ExactFloat's hits: the same
// slots, order and distances.
func TestQuantizedExactEqualsFloat(t *testing.T) {
	n, nq := 6000, 40
	if raceEnabled {
		n, nq = 3000, 10
	}
	for _, m := range []Metric{Cosine, Euclidean, DotProduct} {
		for _, dims := range []int{96, 768} {
			t.Run(fmt.Sprint(m, "-", dims), func(t *testing.T) {
				s := NewStore(dims, m)
				data := synth.Clustered(n, dims, 20, 0.3, uint64(dims))
				rng := rand.New(rand.NewPCG(uint64(dims), 5))
				for i, v := range data {
					if m != Cosine {
						for j := range v {
							v[j] *= float32(1 + i%7) // norms that differ
						}
					}
					p, _ := s.Prepare(v)
					s.Add(p)
					if i%50 == 0 { // a duplicate: ties
						s.Add(p)
					}
				}
				for i := 0; i < s.Slots()/10; i++ {
					s.Kill(int32(rng.IntN(s.Slots())))
				}
				if s.Slots() < minQuantized {
					t.Fatalf("%d slots: below the quantized threshold", s.Slots())
				}
				odd := func(slot int32) bool { return slot%3 != 0 }
				// Posting lists: short (float32 only), long (bounded by the
				// codes) and every slot shuffled (any order).
				var short, long, every []int32
				for slot := int32(0); int(slot) < s.Slots(); slot++ {
					if slot%97 == 1 {
						short = append(short, slot)
					}
					if slot%7 == 3 {
						long = append(long, slot)
					}
					every = append(every, slot)
				}
				rng.Shuffle(len(every), func(i, j int) { every[i], every[j] = every[j], every[i] })
				if len(short) >= minSlotsQuantized || len(long) < minSlotsQuantized {
					t.Fatalf("lists of %d and %d slots miss the paths", len(short), len(long))
				}
				for i, q := range synth.Queries(nq, dims, 20, 0.3, uint64(dims)) {
					if i%5 == 0 {
						q = data[rng.IntN(len(data))] // a stored vector: a tie at the top
					}
					p, _ := s.Prepare(q)
					for _, k := range []int{1, 10, 100} {
						for _, accept := range []Accept{nil, odd} {
							got, want := s.Exact(p, k, accept), s.ExactFloat(p, k, accept)
							if !slices.Equal(got, want) {
								t.Fatalf("query %d k %d filter %v: quantized %v\nfloat %v", i, k, accept != nil, got, want)
							}
							if from := s.Slots() / 3; !slices.Equal(s.ExactFrom(p, k, from, accept), s.ExactFloatFrom(p, k, from, accept)) {
								t.Fatalf("query %d k %d: ExactFrom differs", i, k)
							}
							for li, list := range [][]int32{short, long, every} {
								in := make(map[int32]bool, len(list))
								for _, slot := range list {
									in[slot] = true
								}
								want := s.ExactFloat(p, k, func(slot int32) bool { return in[slot] && (accept == nil || accept(slot)) })
								if got := s.ExactSlots(p, k, list, accept); !slices.Equal(got, want) {
									t.Fatalf("query %d k %d filter %v list %d: ExactSlots %v\nfloat %v", i, k, accept != nil, li, got, want)
								}
							}
						}
					}
				}
			})
		}
	}
}

// TestQuantizedTinyAndZero covers the degenerate codes: a zero vector and
// a zero query (every bound equal: all re-ranked) still answer exactly.
func TestQuantizedTinyAndZero(t *testing.T) {
	s := NewStore(16, DotProduct)
	rng := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < minQuantized+10; i++ {
		v := make([]float32, 16)
		if i%100 != 0 {
			for j := range v {
				v[j] = float32(rng.NormFloat64()) * 1e-20
			}
		}
		s.Add(v)
	}
	for _, q := range [][]float32{make([]float32, 16), {1e-30, 2, -3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}} {
		if got, want := s.Exact(q, 7, nil), s.ExactFloat(q, 7, nil); !slices.Equal(got, want) {
			t.Fatalf("quantized %v, float %v", got, want)
		}
		all := make([]int32, s.Slots())
		for i := range all {
			all[i] = int32(i)
		}
		if got, want := s.ExactSlots(q, 7, all, nil), s.ExactFloat(q, 7, nil); !slices.Equal(got, want) {
			t.Fatalf("ExactSlots %v, float %v", got, want)
		}
	}
}

func BenchmarkExact(b *testing.B) {
	const n, dims = 20000, 768
	s := NewStore(dims, Cosine)
	for _, v := range synth.Clustered(n, dims, 50, 1, 1) {
		p, _ := s.Prepare(v)
		s.Add(p)
	}
	q, _ := s.Prepare(synth.Queries(1, dims, 50, 1, 1)[0])
	b.Run("float32", func(b *testing.B) {
		for b.Loop() {
			s.ExactFloat(q, 10, nil)
		}
	})
	b.Run("int8+rerank", func(b *testing.B) {
		for b.Loop() {
			s.Exact(q, 10, nil)
		}
	})
}

func TestDotU4MatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 64, 128, 384, 768, 1024, 1536} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			x, q := make([]uint8, n/2), make([]int8, n)
			var want int64
			for i := range q {
				q[i] = int8(rng.IntN(256) - 128)
			}
			for i := range x {
				x[i] = uint8(rng.IntN(256))
			}
			for b := 0; b < n; b += 64 {
				for j := 0; j < 32; j++ {
					c := x[b/2+j]
					want += int64(c&15)*int64(q[b+j]) + int64(c>>4)*int64(q[b+32+j])
				}
			}
			if got := DotU4(x, q); int64(got) != want {
				t.Fatalf("DotU4 %d, want %d", got, want)
			}
			if got := dotU4Go(x, q); int64(got) != want {
				t.Fatalf("dotU4Go %d, want %d", got, want)
			}
		})
	}
	// The extremes: no int16 pair saturates, the sum stays exact.
	for _, qv := range []int8{-128, 127} {
		x, q := make([]uint8, 768), make([]int8, 1536)
		for i := range x {
			x[i] = 0xff
		}
		for i := range q {
			q[i] = qv
		}
		if got, want := int64(DotU4(x, q)), int64(1536*15*int(qv)); got != want {
			t.Fatalf("extreme DotU4 %d, want %d", got, want)
		}
	}
}

// TestNibbleCodes: the codes reconstruct each value within half a step
// inside the range, and the kernel's estimate of a dot product is close.
func TestNibbleCodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, dims := range []int{16, 48, 768} {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		codes, a := appendNibbles(nil, v)
		if len(codes) != nibbleBytes(dims) {
			t.Fatalf("dims %d: %d bytes, want %d", dims, len(codes), nibbleBytes(dims))
		}
		for i, x := range v {
			c := codes[i/64*32+i%32]
			if i%64 >= 32 {
				c >>= 4
			}
			c &= 15
			r := a * (float32(c) - 7.5)
			if d := math.Abs(float64(r - x)); x > -7.5*a && x < 7.5*a && d > float64(a)/2*(1+1e-5) {
				t.Fatalf("dims %d value %d: %v coded as %v", dims, i, x, r)
			}
		}
	}
}
