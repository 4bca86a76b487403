package index

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly kernels (AVX2 with FMA, eight float32 per
// instruction, four accumulators) where the CPU has them.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func l2SqAVX2(a, b *float32, n int) float32

//go:noescape
func dotI8AVX2(x *int8, q *int16, n int) int32
