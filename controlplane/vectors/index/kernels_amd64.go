package index

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// useAVX2 selects the assembly kernels (AVX2 with FMA, eight float32 per
// instruction, four accumulators) where the CPU has them.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func l2SqAVX2(a, b *float32, n int) float32

//go:noescape
func dotI8AVX2(x *int8, q *int16, n int) int32

// prefetch asks for lines cache lines from p on without waiting for them.
// It only hints: p need not be valid memory.
//
//go:noescape
func prefetch(p unsafe.Pointer, lines int)

//go:noescape
func dotU4AVX2(x *uint8, q *int8, blocks int) int32

//go:noescape
func dotU2AVX2(x *uint8, q *int8, blocks int) int32

//go:noescape
func dotU4Many(x *uint8, q *int8, blocks, n int, out *int32)
