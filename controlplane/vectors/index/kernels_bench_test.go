package index

import (
	"fmt"
	"testing"
)

func BenchmarkKernels(b *testing.B) {
	a, c := make([]float32, 768), make([]float32, 768)
	for i := range a {
		a[i], c[i] = float32(i%7)/7, float32(i%5)/5
	}
	var sink float32
	for _, k := range []struct {
		name string
		fn   func(a, b []float32) float32
	}{{"naive", NaiveDot}, {"go", dotGo}, {"dispatch", Dot}, {"l2-go", l2SqGo}, {"l2-dispatch", L2Sq}} {
		b.Run(fmt.Sprint(k.name, "-768"), func(b *testing.B) {
			b.SetBytes(768 * 4)
			for b.Loop() {
				sink += k.fn(a, c)
			}
		})
	}
	_ = sink
}
