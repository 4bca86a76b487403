//go:build !amd64

package index

import "unsafe"

const useAVX2 = false

func dotAVX2(a, b *float32, n int) float32  { panic("index: no AVX2") }
func l2SqAVX2(a, b *float32, n int) float32 { panic("index: no AVX2") }

func dotI8AVX2(x *int8, q *int16, n int) int32 { panic("index: no AVX2") }

func dotU4AVX2(x *uint8, q *int8, blocks int) int32 { panic("index: no AVX2") }

// prefetch is a hint the portable build does without.
func prefetch(p unsafe.Pointer, lines int) {}

func dotU2AVX2(x *uint8, q *int8, blocks int) int32 { panic("index: no AVX2") }

func dotU4Many(x *uint8, q *int8, blocks, n int, out *int32) { panic("index: no AVX2") }
