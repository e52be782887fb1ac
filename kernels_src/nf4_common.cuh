// NF4 device arithmetic shared by the dequantize kernel and the GEMM: the code table and the
// bitsandbytes dequantization, T(table[code] * absmax) with the product rounded once to FP32
// (mul.rn: never contracted into an fma) and once to T. Inline PTX only (NVRTC, no headers).
#pragma once

#include "nf4_args.cuh"

namespace chord {
namespace nf4_detail {

// The 16 FP32 NF4 values, code 0 = -1 ... code 7 = 0 ... code 15 = 1 (reference/nf4_reference.cpp).
__constant__ float kNF4Table[16] = {
    -1.0f,                 -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
    -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
    0.07958029955625534f,  0.16093020141124725f,  0.24611230194568634f,  0.33791524171829224f,
    0.44070982933044434f,  0.5626170039176941f,   0.7229568362236023f,   1.0f};

__device__ __forceinline__ float nf4_table(unsigned int code) { return kNF4Table[code & 15u]; }

__device__ __forceinline__ float mul_rn(float a, float b) {
  float d;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}
__device__ __forceinline__ float add_rn(float a, float b) {
  float d;
  asm("add.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}

// Two FP32 values -> one register of two T (lo in bits 0..15), round to nearest even.
template <int ELEM>
__device__ __forceinline__ unsigned int pack2(float lo, float hi) {
  unsigned int d;
  if constexpr (ELEM == kNF4FP16) {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  }
  return d;
}

// One packed word (w4a16 fragment order: register p takes its low element from bits 4p..4p+3
// and its high element from bits 16+4p..16+4p+3; registers 0, 2 are row g, 1, 3 row g + 8)
// -> the four T x2 registers of an mma.m16n8k16 A fragment. a_g / a_g8: absmax of rows g, g+8.
// LOOKUP(code) returns the FP32 table value (a constant-bank load, or a warp shuffle).
template <int ELEM, typename Lookup>
__device__ __forceinline__ void dequant_word(unsigned int q, float a_g, float a_g8, Lookup lookup,
                                             unsigned int* a) {
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const float s = (p & 1) ? a_g8 : a_g;
    const float lo = mul_rn(lookup(q >> (4 * p)), s);
    const float hi = mul_rn(lookup(q >> (16 + 4 * p)), s);
    a[p] = pack2<ELEM>(lo, hi);
  }
}

// GEMM lookup: lane l holds table[l % 16] (nf4_lane_table); shfl.idx with segment mask 16
// reads lane (l & 16) | (c & 15), i.e. table[c & 15], straight from an unmasked shifted word.
// Every lane of the warp must take part (the GEMM's dequantization is warp-uniform).
__device__ __forceinline__ unsigned int nf4_lane_table(unsigned int lane) {
  return __float_as_uint(nf4_table(lane & 15u));
}
__device__ __forceinline__ float nf4_shfl_lookup(unsigned int lane_table, unsigned int code_bits) {
  unsigned int v;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x100f, 0xffffffff;" : "=r"(v) : "r"(lane_table), "r"(code_bits));
  return __uint_as_float(v);
}

// D = A (16x16 fp16, row) * B (16x8 fp16, col) + D, fp32 accumulate (the f16 twin of
// w4a16_detail::mma_bf16_16816).
__device__ __forceinline__ void mma_f16_16816(float* d, const unsigned int* a, unsigned int b0, unsigned int b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// {a[g], a[g+8]} of one 64-k chunk: 8 bytes, read-only path (four lanes share them).
__device__ __forceinline__ void ldg_nc_v2(const void* p, unsigned int* r) {
  asm volatile("ld.global.nc.v2.u32 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "l"(p));
}
__device__ __forceinline__ void lds64(unsigned int addr, unsigned int* r) {
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}

}  // namespace nf4_detail
}  // namespace chord
