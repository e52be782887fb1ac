// NF4 device arithmetic shared by the dequantize kernel and the GEMM: the code table and the
// bitsandbytes dequantization, T(table[code] * absmax) with the product rounded once to FP32
// (mul.rn: never contracted into an fma) and once to T. Inline PTX only (NVRTC, no headers).
#pragma once

#include "bf16_math.cuh"
#include "nf4_args.cuh"
#include "w4a16_common.cuh"

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

// One packed word (layout v2: byte p holds fragment register p, its low element in bits
// 8p..8p+3, its high element in bits 8p+4..8p+7; registers 0, 2 are row g, 1, 3 row g + 8)
// -> the four T x2 registers of an mma.m16n8k16 A fragment, each element T(table[c] * absmax)
// exactly as bitsandbytes rounds it. a_g / a_g8: absmax of rows g, g+8. LOOKUP(code) returns
// the FP32 table value of code & 15.
template <int ELEM, typename Lookup>
__device__ __forceinline__ void dequant_word(unsigned int q, float a_g, float a_g8, Lookup lookup,
                                             unsigned int* a) {
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const float s = (p & 1) ? a_g8 : a_g;
    const float lo = mul_rn(lookup(q >> (8 * p)), s);
    const float hi = mul_rn(lookup(q >> (8 * p + 4)), s);
    a[p] = pack_half2<ELEM>(lo, hi);
  }
}

// ---------------------------------------------------------------------------------------
// GEMM decode: a shared-memory pair table instead of one warp shuffle per code.
// Entry e (a code byte of a layout-v2 word) is the T x2 register {T(table[e & 15]),
// T(table[e >> 4])}, i.e. an unscaled A-fragment register. The 256 entries are replicated
// REPLICAS times, entry e of lane l at word e * REPLICAS + l % REPLICAS. 32 replicas (32 KiB,
// kW4A16NF4TableBytes): lane l reads only bank l, a warp's lookups never conflict. 16 replicas
// (16 KiB, the one-role WGMMA kernel's, which must keep two CTAs per SM): lanes l and l + 16 share a
// bank, at most a two-way conflict.
// ---------------------------------------------------------------------------------------
__device__ __forceinline__ void sts128(unsigned int addr, unsigned int v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};\n" ::"r"(addr), "r"(v) : "memory");
}

// 64 "replicas": the 32-replica table on a 256-byte entry stride (the upper half of each entry
// unused), so that one prmt forms a lookup's offset, (byte << 8) | lane * 4, and the table base,
// warp-uniform, folds into the load's address (LDS [R + UR]): 2 instructions per lookup
// instead of 3 (prmt, shift-add, load). 64 KiB: the warp-specialized kernel only.
template <int REPLICAS>
constexpr int nf4_pair_table_bytes() {
  static_assert(REPLICAS == 16 || REPLICAS == 32 || REPLICAS == 64, "the pair table has 16, 32 or 64 replicas");
  return 256 * REPLICAS * 4;
}

// Fill the table at shared address `table` (16-byte aligned) with the THREADS threads of the
// CTA; the caller's next barrier publishes it.
template <int ELEM, int THREADS, int REPLICAS = 32>
__device__ __forceinline__ void nf4_fill_pair_table(unsigned int table, int tid) {
  constexpr int kPieces = REPLICAS / 4;  // 16-byte pieces per entry
  // 16-byte piece i holds replicas 4 (i % kPieces) .. + 3 of entry i / kPieces.
#pragma unroll 4
  for (int i = tid; i < 256 * kPieces; i += THREADS) {
    const unsigned int e = (unsigned int)i / kPieces;
    sts128(table + i * 16, pack_half2<ELEM>(nf4_table(e), nf4_table(e >> 4)));
  }
}

// This lane's base address in the table: its replica. With 64 replicas: the lane's offset
// alone (lane * 4); the table address goes to nf4_pair separately (`table`).
template <int REPLICAS = 32>
__device__ __forceinline__ unsigned int nf4_pair_lane_base(unsigned int table, int lane) {
  return REPLICAS == 64 ? (unsigned int)lane * 4u : table + (lane % REPLICAS) * 4;
}

// Register p of the unscaled A fragment of word q: byte p -> its table entry. lane_base from
// nf4_pair_lane_base; `table` (256-byte aligned, warp-uniform) only with 64 replicas. Plain
// (not volatile) so ptxas may schedule it freely; the table is read-only after the fill.
template <int REPLICAS = 32>
__device__ __forceinline__ unsigned int nf4_pair(unsigned int q, int p, unsigned int lane_base, unsigned int table = 0) {
  unsigned int v;
  if constexpr (REPLICAS == 64) {
    unsigned int off;  // byte 0: lane * 4 (lane_base), byte 1: byte p of q, bytes 2-3: zero
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(off) : "r"(q), "r"(lane_base), "r"(0x7604u | (p << 4)));
    asm("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(table + off));
  } else {
    constexpr int kEntryShift = REPLICAS == 32 ? 7 : 6;  // log2(4 * REPLICAS)
    static_assert(4 * REPLICAS == (1 << kEntryShift), "entry stride");
    unsigned int byte;
    asm("prmt.b32 %0, %1, 0, %2;" : "=r"(byte) : "r"(q), "r"(0x4440u + p));
    asm("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(lane_base + (byte << kEntryShift)));
  }
  return v;
}

// {T(a), T(a)}: an absmax splatted for the per-weight scale of nf4_scaled_word.
template <int ELEM>
__device__ __forceinline__ unsigned int nf4_splat(float a) {
  return pack_half2<ELEM>(a, a);
}

// Word q -> the four T x2 registers of a scaled A fragment: table pair * absmax in T
// arithmetic (the table value and the absmax each rounded to T, then their product rounded
// once; not bitsandbytes' FP32 product). s_g / s_g8: nf4_splat of rows g, g+8. The fma with
// -0 is a multiply on every arch (mul.bf16x2 needs sm_90).
template <int ELEM, int REPLICAS = 32>
__device__ __forceinline__ void nf4_scaled_word(unsigned int q, unsigned int s_g, unsigned int s_g8,
                                                unsigned int lane_base, unsigned int* a, unsigned int table = 0) {
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const unsigned int pair = nf4_pair<REPLICAS>(q, p, lane_base, table);
    const unsigned int s = (p & 1) ? s_g8 : s_g;
    if constexpr (ELEM == kNF4FP16) {
      asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(a[p]) : "r"(pair), "r"(s), "r"(0x80008000u));
    } else {
      asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(a[p]) : "r"(pair), "r"(s), "r"(0x80008000u));
    }
  }
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

// D = A * B + D in T (BF16 or FP16) inputs, fp32 accumulate.
template <int ELEM>
__device__ __forceinline__ void mma_t(float* d, const unsigned int* a, unsigned int b0, unsigned int b1) {
  if constexpr (ELEM == kNF4FP16) {
    mma_f16_16816(d, a, b0, b1);
  } else {
    w4a16_detail::mma_bf16_16816(d, a, b0, b1);
  }
}

// One 64-k NF4 block of the decode tiles (8 tokens per warp): the absmax applied to fp32 sums
// instead of to every weight. Per n tile, the 4 k16 steps of unscaled table pairs are summed
// by the MMA into a zeroed group sum, then acc += absmax * sum (rows g / g + 8):
//   sum_k T(table[c]) * x * a  ==  a * sum_k T(table[c]) * x   (fp32 products are exact).
// The result differs from the dequantized reference by the rounding of table[c] to T
// instead of table[c] * a. w[i][j]: word of n tile i, k16 step j; s[i]: {a[g], a[g+8]} as
// FP32 bits; b[j]: token fragments of step j.
template <int ELEM, int NT>
__device__ __forceinline__ void nf4_block_mma(float (&acc)[NT][1][4], const unsigned int (&w)[NT][4],
                                              const unsigned int (&s)[NT][2], const unsigned int (&b)[4][1][2],
                                              unsigned int lane_base) {
#pragma unroll
  for (int i = 0; i < NT; ++i) {
    float sum[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      unsigned int a[4];
#pragma unroll
      for (int p = 0; p < 4; ++p) a[p] = nf4_pair(w[i][j], p, lane_base);
      mma_t<ELEM>(sum, a, b[j][0][0], b[j][0][1]);
    }
    const float a_g = __uint_as_float(s[i][0]), a_g8 = __uint_as_float(s[i][1]);
    acc[i][0][0] = fmaf(a_g, sum[0], acc[i][0][0]);
    acc[i][0][1] = fmaf(a_g, sum[1], acc[i][0][1]);
    acc[i][0][2] = fmaf(a_g8, sum[2], acc[i][0][2]);
    acc[i][0][3] = fmaf(a_g8, sum[3], acc[i][0][3]);
  }
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
