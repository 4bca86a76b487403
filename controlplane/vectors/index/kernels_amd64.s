#include "textflag.h"

// func dotAVX2(a, b *float32, n int) float32
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

dot32:
	CMPQ CX, $32
	JL   dot8
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  dot32

dot8:
	CMPQ CX, $8
	JL   dotreduce
	VMOVUPS (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  dot8

dotreduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0

dottail:
	CMPQ CX, $0
	JE   dotdone
	VMOVSS (SI), X1
	VFMADD231SS (DI), X1, X0
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  dottail

dotdone:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func l2SqAVX2(a, b *float32, n int) float32
TEXT ·l2SqAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

l2_32:
	CMPQ CX, $32
	JL   l2_8
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VSUBPS (DI), Y4, Y4
	VSUBPS 32(DI), Y5, Y5
	VSUBPS 64(DI), Y6, Y6
	VSUBPS 96(DI), Y7, Y7
	VFMADD231PS Y4, Y4, Y0
	VFMADD231PS Y5, Y5, Y1
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y7, Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  l2_32

l2_8:
	CMPQ CX, $8
	JL   l2reduce
	VMOVUPS (SI), Y4
	VSUBPS (DI), Y4, Y4
	VFMADD231PS Y4, Y4, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  l2_8

l2reduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0

l2tail:
	CMPQ CX, $0
	JE   l2done
	VMOVSS (SI), X1
	VSUBSS (DI), X1, X1
	VFMADD231SS X1, X1, X0
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  l2tail

l2done:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotI8AVX2(x *int8, q *int16, n int) int32
// n is a multiple of 16. Each VPMADDWD multiplies sixteen sign-extended
// int8 values by sixteen int16 values and adds pairs into eight int32 lanes:
// integer arithmetic, so the sum is exact (the caller keeps it in range).
TEXT ·dotI8AVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ n+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3

i8_64:
	CMPQ CX, $64
	JL   i8_16
	VPMOVSXBW (SI), Y4
	VPMOVSXBW 16(SI), Y5
	VPMOVSXBW 32(SI), Y6
	VPMOVSXBW 48(SI), Y7
	VPMADDWD (DI), Y4, Y4
	VPMADDWD 32(DI), Y5, Y5
	VPMADDWD 64(DI), Y6, Y6
	VPMADDWD 96(DI), Y7, Y7
	VPADDD Y4, Y0, Y0
	VPADDD Y5, Y1, Y1
	VPADDD Y6, Y2, Y2
	VPADDD Y7, Y3, Y3
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $64, CX
	JMP  i8_64

i8_16:
	CMPQ CX, $16
	JL   i8reduce
	VPMOVSXBW (SI), Y4
	VPMADDWD (DI), Y4, Y4
	VPADDD Y4, Y0, Y0
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $16, CX
	JMP  i8_16

i8reduce:
	VPADDD Y1, Y0, Y0
	VPADDD Y3, Y2, Y2
	VPADDD Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPHADDD X0, X0, X0
	VPHADDD X0, X0, X0
	VMOVD X0, AX
	VZEROUPPER
	MOVL AX, ret+24(FP)
	RET

// func prefetch(p unsafe.Pointer, lines int)
// Asks for the lines 64-byte cache lines from p on (PREFETCHT0: into every
// level) without waiting for them: the graph search calls it on the codes
// of the neighbours it is about to rank, so their misses overlap.
TEXT ·prefetch(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ lines+8(FP), CX
	TESTQ CX, CX
	JLE  pfdone

pfloop:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	DECQ CX
	JNZ  pfloop

pfdone:
	RET

// func dotU4AVX2(x *uint8, q *int8, blocks int) int32
// Each block is 32 bytes of nibble codes (dimension j low, 32+j high) and
// 64 int8 query codes: the nibbles are masked apart, each half multiplied
// by its 32 query bytes and added in pairs (VPMADDUBSW: unsigned by signed
// bytes into int16, at most 2·15·128 so never saturated), the halves added
// (at most 7,680), widened to int32 pairs against ones (VPMADDWD): exact.
TEXT ·dotU4AVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	TESTQ CX, CX
	JLE  u4reduce

u4loop:
	VMOVDQU (SI), Y4
	VPSRLW $4, Y4, Y5
	VPAND Y15, Y4, Y4
	VPAND Y15, Y5, Y5
	VPMADDUBSW (DI), Y4, Y4
	VPMADDUBSW 32(DI), Y5, Y5
	VPADDW Y5, Y4, Y4
	VPMADDWD Y14, Y4, Y4
	VPADDD Y4, Y0, Y0
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  u4loop

u4reduce:
	VPADDD Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPHADDD X0, X0, X0
	VPHADDD X0, X0, X0
	VMOVD X0, AX
	VZEROUPPER
	MOVL AX, ret+24(FP)
	RET

// func dotU2AVX2(x *uint8, q *int8, blocks int) int32
// Each block is 32 bytes of 2-bit codes (dimensions j, 32+j, 64+j, 96+j in
// bits 0-1, 2-3, 4-5, 6-7 of byte j) and 128 int8 query codes: each field
// is shifted down and masked, multiplied by its 32 query bytes and added in
// pairs (VPMADDUBSW: unsigned by signed bytes into int16, at most 2·3·128),
// the four fields added (at most 3,072, never saturated), widened to int32
// pairs against ones (VPMADDWD): exact.
TEXT ·dotU2AVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVL $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VPXOR Y0, Y0, Y0
	TESTQ CX, CX
	JLE  u2reduce

u2loop:
	VMOVDQU (SI), Y4
	VPSRLW $2, Y4, Y5
	VPSRLW $4, Y4, Y6
	VPSRLW $6, Y4, Y7
	VPAND Y15, Y4, Y4
	VPAND Y15, Y5, Y5
	VPAND Y15, Y6, Y6
	VPAND Y15, Y7, Y7
	VPMADDUBSW (DI), Y4, Y4
	VPMADDUBSW 32(DI), Y5, Y5
	VPMADDUBSW 64(DI), Y6, Y6
	VPMADDUBSW 96(DI), Y7, Y7
	VPADDW Y5, Y4, Y4
	VPADDW Y7, Y6, Y6
	VPADDW Y6, Y4, Y4
	VPMADDWD Y14, Y4, Y4
	VPADDD Y4, Y0, Y0
	ADDQ $32, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  u2loop

u2reduce:
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPHADDD X0, X0, X0
	VPHADDD X0, X0, X0
	VMOVD X0, AX
	VZEROUPPER
	MOVL AX, ret+24(FP)
	RET

// func dotU4Many(x *uint8, q *int8, blocks, n int, out *int32)
// out[i] = dotU4AVX2 of q and the i-th of n nibble code vectors stored one
// after another at x (blocks·32 bytes each): the pivots' scan in one call.
TEXT ·dotU4Many(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), R12
	MOVQ blocks+16(FP), R13
	MOVQ n+24(FP), R11
	MOVQ out+32(FP), DX
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	TESTQ R11, R11
	JLE  umdone
	TESTQ R13, R13
	JLE  umdone

umnode:
	MOVQ R12, DI
	MOVQ R13, CX
	VPXOR Y0, Y0, Y0

umloop:
	VMOVDQU (SI), Y4
	VPSRLW $4, Y4, Y5
	VPAND Y15, Y4, Y4
	VPAND Y15, Y5, Y5
	VPMADDUBSW (DI), Y4, Y4
	VPMADDUBSW 32(DI), Y5, Y5
	VPADDW Y5, Y4, Y4
	VPMADDWD Y14, Y4, Y4
	VPADDD Y4, Y0, Y0
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  umloop

	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPHADDD X0, X0, X0
	VPHADDD X0, X0, X0
	VMOVD X0, AX
	MOVL AX, (DX)
	ADDQ $4, DX
	DECQ R11
	JNZ  umnode

umdone:
	VZEROUPPER
	RET
