//go:build !amd64

package index

const useAVX2 = false

func dotAVX2(a, b *float32, n int) float32  { panic("index: no AVX2") }
func l2SqAVX2(a, b *float32, n int) float32 { panic("index: no AVX2") }
