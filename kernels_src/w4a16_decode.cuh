// Dequantize math of the two 4-bit weight kinds, from a packed word to the bf16 / fp16
// registers of an mma.m16n8k16 A fragment, shared by the GEMMs and the unpack / dequantize
// kernels:
//   INT4 (w4a16_detail): T((code - 8) * scale), T = BF16 or FP16 (the scale's type), exact
//   code arithmetic in T fmas;
//   NF4 (nf4_detail): T(table[code] * absmax), T = BF16 or FP16, bitsandbytes' rounding
//   (FP32 product rounded once to FP32 and once to T), and the GEMMs' shared-memory pair table.
// The decode tiles of the mma.sync GEMM apply the scale to FP32 partial sums instead
// (int4_group_mma, nf4_block_mma).
#pragma once

#include "nf4_args.cuh"
#include "ptx.cuh"

namespace chord {
namespace w4a16_detail {

// One packed 32-bit weight word -> the four ELEM x2 registers of an mma.m16n8k16 A fragment,
// with the scales splatted: s_lo = {s[g], s[g]} for registers 0 and 2 (row g), s_hi =
// {s[g+8], s[g+8]} for 1 and 3 (row g + 8). ELEM: bf16 (the INT4 kind) or fp16 (INT4 FP16:
// fp16 scales and activations).
// Word layout: register p (p = 0..3) takes its low element from bits 4p..4p+3 and its high
// element from bits 16+4p..16+4p+3, so (q >> 4p) & 0x000f000f puts both nibbles in the
// mantissa LSBs of a 16-bit pair; OR the magic M (bf16 128.0, fp16 1024.0: ulp 1) gives
// M + code exactly.
//   x = (M + code) * 1 - (M + 8)    exact (code - 8 fits either significand)
//   w = x * scale + (-0)            one rounding of the exact product == ELEM((code - 8) * scale)
// fma is used for both because mul/sub.bf16x2 do not exist on sm_80; the results are the
// same bits on every arch. Callers that decode both 16-k words of a group splat once.
// Register p of a symmetric word before its offset: {M + code} pairs, or in FP16 for odd p
// {M + 16 code} (nibble_pair_hi_f16: the nibbles at bits 4..7 of each half stay in place, so a
// word takes one shift, by 8, instead of three); int4_pair_mul / int4_pair_minus_offset give
// the T x2 fma that makes code - 8 of it exactly: x * 1 - (M + 8), or x * 1/16 - 72.
template <int ELEM>
__device__ __forceinline__ unsigned int int4_pair(unsigned int q, int p) {
  if constexpr (ELEM == kNF4FP16) {
    const unsigned int x = q >> (8 * (p >> 1));
    return (p & 1) ? ptx::nibble_pair_hi_f16(x) : ptx::nibble_pair<ELEM>(x);
  } else {
    return ptx::nibble_pair<ELEM>(q >> (4 * p));
  }
}
template <int ELEM>
__device__ __forceinline__ constexpr unsigned int int4_pair_mul(int p) {
  return ELEM == kNF4FP16 ? ((p & 1) ? 0x2c002c00u : 0x3c003c00u) : 0x3f803f80u;  // {1/16} or {1}
}
template <int ELEM>
__device__ __forceinline__ constexpr unsigned int int4_pair_minus_offset(int p) {
  return ELEM == kNF4FP16 ? ((p & 1) ? 0xd480d480u : 0xe408e408u) : 0xc308c308u;  // -72, -1032, -136
}

// The zero-point form of int4_pair_minus_offset for the odd registers (row g + 8): from the
// stored bias -(M + zp) to what x * int4_pair_mul + bias = code - zp needs, -(64 + zp) in FP16
// (960 added, exact), the bias itself in BF16.
template <int ELEM>
__device__ __forceinline__ unsigned int int4_zp_odd_bias(unsigned int bias) {
  if constexpr (ELEM == kNF4FP16) {
    return ptx::fma_x2<ELEM>(bias, 0x3c003c00u, 0x63806380u);  // * 1 + {960, 960}
  } else {
    return bias;
  }
}

template <int ELEM = kNF4BF16>
__device__ __forceinline__ void dequant_word_splat(unsigned int q, unsigned int s_lo, unsigned int s_hi,
                                                   unsigned int* a) {
  const unsigned int kNegZero = 0x80008000u;  // {-0.0, -0.0}
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const unsigned int x = int4_pair<ELEM>(q, p);
    const unsigned int v = ptx::fma_x2<ELEM>(x, int4_pair_mul<ELEM>(p), int4_pair_minus_offset<ELEM>(p));
    a[p] = ptx::fma_x2<ELEM>(v, (p & 1) ? s_hi : s_lo, kNegZero);
  }
}

// The same from the scale word s2 = {s[g], s[g+8]}.
template <int ELEM = kNF4BF16>
__device__ __forceinline__ void dequant_word(unsigned int q, unsigned int s2, unsigned int* a) {
  dequant_word_splat<ELEM>(q, ptx::splat_lo(s2), ptx::splat_hi(s2), a);
}

// Zero-point kinds (kW4A16WeightInt4Zp*): a packed scale entry is the 32-bit pair
// {lo: scale, hi: -(M + zp)} in ELEM, so the lane's 8-byte load at rows {g, g+8} gives
// p_g = {s[g], -(M + zp[g])} and p_g8. The decode is dequant_word_splat's with the constant
// -(M + 8) replaced by the row's -(M + zp):
//   x = (M + code) * 1 - (M + zp)   exact: both are integers M..M+15, their difference fits T
//   w = x * scale + (-0)            one rounding == ELEM((code - zp) * scale)
// (FP16's odd registers: x = M + 16 code from int4_pair, times 1/16, minus 64 + zp.)
// Never code * s - zp * s: that rounds twice. The bias is stored negated so the fma takes it
// as is.
template <int ELEM = kNF4BF16>
__device__ __forceinline__ void dequant_word_zp(unsigned int q, unsigned int p_g, unsigned int p_g8,
                                                unsigned int* a) {
  const unsigned int kNegZero = 0x80008000u;
  const unsigned int s_lo = ptx::splat_lo(p_g), s_hi = ptx::splat_lo(p_g8);
  const unsigned int b_lo = ptx::splat_hi(p_g), b_hi = int4_zp_odd_bias<ELEM>(ptx::splat_hi(p_g8));
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const unsigned int x = int4_pair<ELEM>(q, p);
    const unsigned int v = ptx::fma_x2<ELEM>(x, int4_pair_mul<ELEM>(p), (p & 1) ? b_hi : b_lo);
    a[p] = ptx::fma_x2<ELEM>(v, (p & 1) ? s_hi : s_lo, kNegZero);
  }
}

// acc += s * sum for one n tile and token tile of the group sums: rows g (registers 0, 1) take
// s_lo, rows g + 8 (2, 3) s_hi.
__device__ __forceinline__ void add_scaled_sum(float (&acc)[4], float s_lo, float s_hi, const float (&sum)[4]) {
  acc[0] = fmaf(s_lo, sum[0], acc[0]);
  acc[1] = fmaf(s_lo, sum[1], acc[1]);
  acc[2] = fmaf(s_hi, sum[2], acc[2]);
  acc[3] = fmaf(s_hi, sum[3], acc[3]);
}

// One 32-k scale group of INT4 weights with the scale applied to fp32 partial sums instead of
// to every weight (the decode tiles, where the per-weight decode is the issue bottleneck):
//   sum_k T(code - 8) * s * a  ==  s * sum_k (code - 8) * a
// M + code (M = 128 in BF16, 1024 in FP16: the ulp there is 1) is one lop3 per nibble pair and
// exact in T, so the two fmas per pair of dequant_word become one T x2 fma per register, which
// makes code - 8 exactly. Products are exact in the fp32 MMA; the result differs from the
// T-dequantized reference only by that reference's rounding of (code - 8) * scale to T.
//   w[i][0..1]: the packed words of n tile i for the group's two k16 steps; s2[i]: its scale
//   word {s[g], s[g+8]}; b[jj][m]: the token fragments of k16 step jj, token tile m.
//   MTU: token tiles used (the first MTU of MT; the others' accumulators are left alone).
//   SUMS (W4A16GroupSums), per group, token tile and NT n tiles:
//   kW4A16GroupSumsOffset: (M + code) * 1 - (M + 8) = code - 8 per register, exact (8 NT HFMA2
//     per group, whatever MTU); then per n tile mma(a0) -> mma(a1) -> 4 scale fmas: 2 NT MMAs
//     and 4 NT FFMA per token tile.
//   kW4A16GroupSumsCorrection (BF16 only): the lop3's (128 + code) as it is, and the -136 term,
//     the same for every weight row, as 2 MMAs with a constant A shared by the n tiles that seed
//     each chain: 2 + 2 NT MMAs, 4 NT FFMA per token tile. That doubles the MMAs at NT 1 and is
//     half as many again at NT 2, which is why the offset form is the default. In FP16 the term
//     is -1032 times sum_k a, whose cancellation in fp32 would cost about as much as the FP16
//     output's rounding.
template <int NT, int MT, int MTU = MT, int SUMS = kW4A16GroupSumsOffset, int ELEM = kNF4BF16>
__device__ __forceinline__ void int4_group_mma(float (&acc)[NT][MT][4], const unsigned int (&w)[NT][2],
                                               const unsigned int (&s2)[NT], const unsigned int (&b)[2][MT][2]) {
  static_assert(MTU >= 1 && MTU <= MT, "int4_group_mma: 1 <= MTU <= MT");
  static_assert(SUMS >= 0 && SUMS < kW4A16GroupSumsCount, "int4_group_mma: unknown W4A16GroupSums");
  constexpr bool kCorr = SUMS == kW4A16GroupSumsCorrection;
  static_assert(!kCorr || ELEM == kNF4BF16, "int4_group_mma: the correction form is BF16 only");
  const unsigned int kNeg136[4] = {0xc308c308u, 0xc308c308u, 0xc308c308u, 0xc308c308u};
  const float kZero[4] = {0.f, 0.f, 0.f, 0.f};
  float corr[MTU][4];
  if constexpr (kCorr) {
#pragma unroll
    for (int m = 0; m < MTU; ++m) {
      ptx::mma_bf16_16816_c(corr[m], kNeg136, b[0][m][0], b[0][m][1], kZero);
      ptx::mma_bf16_16816(corr[m], kNeg136, b[1][m][0], b[1][m][1]);
    }
  }
#pragma unroll
  for (int i = 0; i < NT; ++i) {
    unsigned int a0[4], a1[4];
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      a0[p] = int4_pair<ELEM>(w[i][0], p);
      a1[p] = int4_pair<ELEM>(w[i][1], p);
    }
    if constexpr (!kCorr) {
#pragma unroll
      for (int p = 0; p < 4; ++p) {  // code - 8, exact
        a0[p] = ptx::fma_x2<ELEM>(a0[p], int4_pair_mul<ELEM>(p), int4_pair_minus_offset<ELEM>(p));
        a1[p] = ptx::fma_x2<ELEM>(a1[p], int4_pair_mul<ELEM>(p), int4_pair_minus_offset<ELEM>(p));
      }
    }
    const float s_lo = ptx::lo_f32<ELEM>(s2[i]);  // row g
    const float s_hi = ptx::hi_f32<ELEM>(s2[i]);  // row g + 8
#pragma unroll
    for (int m = 0; m < MTU; ++m) {
      float sum[4];
      ptx::mma_t_c<ELEM>(sum, a0, b[0][m][0], b[0][m][1], kCorr ? corr[m] : kZero);
      ptx::mma_t<ELEM>(sum, a1, b[1][m][0], b[1][m][1]);
      add_scaled_sum(acc[i][m], s_lo, s_hi, sum);
    }
  }
}

// int4_group_mma for the zero-point kinds, whose bias -(M + zp) differs per row:
//   kW4A16GroupSumsOffset: each register takes (M + code) + (-(M + zp)) = code - zp, exact,
//     by a T x2 fma with its row's bias splatted (ptxas folds the splat into the operand).
//   kW4A16GroupSumsCorrection (BF16 only): the token sums sum_k a (row-independent) from one MMA with A = 1
//     per token tile and k16 step, and each row seeds its group sum with -(128 + zp) times them
//     in fp32: s * (sum_k (128 + code) * a  +  (-(128 + zp)) * sum_k a).
// The result differs from the dequantized reference by that reference's rounding of
// (code - zp) * s (and, in the correction form, by the fp32 rounding of the seed).
//   p[i][0] / p[i][1]: the {scale, bias} pairs of rows g / g + 8 of n tile i.
template <int NT, int MT, int MTU = MT, int SUMS = kW4A16GroupSumsOffset, int ELEM = kNF4BF16>
__device__ __forceinline__ void int4_group_mma_zp(float (&acc)[NT][MT][4], const unsigned int (&w)[NT][2],
                                                  const unsigned int (&p)[NT][2], const unsigned int (&b)[2][MT][2]) {
  static_assert(MTU >= 1 && MTU <= MT, "int4_group_mma_zp: 1 <= MTU <= MT");
  static_assert(SUMS >= 0 && SUMS < kW4A16GroupSumsCount, "int4_group_mma_zp: unknown W4A16GroupSums");
  constexpr bool kCorr = SUMS == kW4A16GroupSumsCorrection;
  static_assert(!kCorr || ELEM == kNF4BF16, "int4_group_mma_zp: the correction form is BF16 only");
  constexpr unsigned int kOne = ELEM == kNF4FP16 ? 0x3c003c00u : 0x3f803f80u;  // T {1, 1}
  const unsigned int kOnes[4] = {kOne, kOne, kOne, kOne};
  const float kZero[4] = {0.f, 0.f, 0.f, 0.f};
  float tsum[MTU][4];  // [0], [2]: sum_k a of token 2t; [1], [3]: of token 2t + 1
  if constexpr (kCorr) {
#pragma unroll
    for (int m = 0; m < MTU; ++m) {
      ptx::mma_bf16_16816_c(tsum[m], kOnes, b[0][m][0], b[0][m][1], kZero);
      ptx::mma_bf16_16816(tsum[m], kOnes, b[1][m][0], b[1][m][1]);
    }
  }
#pragma unroll
  for (int i = 0; i < NT; ++i) {
    unsigned int a0[4], a1[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      a0[q] = int4_pair<ELEM>(w[i][0], q);
      a1[q] = int4_pair<ELEM>(w[i][1], q);
    }
    const float s_lo = ptx::lo_f32<ELEM>(p[i][0]);  // row g
    const float s_hi = ptx::lo_f32<ELEM>(p[i][1]);  // row g + 8
    if constexpr (!kCorr) {
      // Registers 0 and 2 hold row g, 1 and 3 row g + 8 (dequant_word_splat); the odd ones are
      // int4_pair's, so row g + 8 takes int4_zp_odd_bias: in FP16 one fma per n tile and group
      // instead of two more shifts per word.
      const unsigned int bias[2] = {ptx::splat_hi(p[i][0]), int4_zp_odd_bias<ELEM>(ptx::splat_hi(p[i][1]))};
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        a0[q] = ptx::fma_x2<ELEM>(a0[q], int4_pair_mul<ELEM>(q), bias[q & 1]);  // code - zp, exact
        a1[q] = ptx::fma_x2<ELEM>(a1[q], int4_pair_mul<ELEM>(q), bias[q & 1]);
      }
    }
#pragma unroll
    for (int m = 0; m < MTU; ++m) {
      float sum[4];
      if constexpr (kCorr) {
        const float z_lo = __uint_as_float(p[i][0] & 0xffff0000u);  // -(128 + zp[g])
        const float z_hi = __uint_as_float(p[i][1] & 0xffff0000u);
        sum[0] = z_lo * tsum[m][0];
        sum[1] = z_lo * tsum[m][1];
        sum[2] = z_hi * tsum[m][2];
        sum[3] = z_hi * tsum[m][3];
        ptx::mma_bf16_16816(sum, a0, b[0][m][0], b[0][m][1]);
      } else {
        ptx::mma_t_c<ELEM>(sum, a0, b[0][m][0], b[0][m][1], kZero);
      }
      ptx::mma_t<ELEM>(sum, a1, b[1][m][0], b[1][m][1]);
      add_scaled_sum(acc[i][m], s_lo, s_hi, sum);
    }
  }
}

// Group 128 in the offset form: one scale entry covers four 32-k groups, so their MMAs chain
// into one fp32 sum per n tile and token tile (gsum), and the scale goes into acc once, after
// the fourth: a quarter of the scale fmas (and of the scales' widening to fp32) of
// int4_group_mma / int4_group_mma_zp, whose registers this takes as they do (code - 8, or
// code - zp by the row's bias, exact). The result is their sums' accuracy class: the sum of a
// 128-k group in fp32, then one scale product.
//   phase: this 32-k group's place in its 128 (0..3; a compile-time constant once the caller's
//   loops unroll): 0 starts gsum from zero, 3 scales it into acc (the scales are read only
//   there; ZP's biases every phase).
//   w[i]: the packed words of n tile i for the group's two k16 steps.
//   sc[i]: the chunk's scale entry as the tile loads it: ZP: the {scale, bias} pairs of rows
//   g / g + 8 (sc[i][0], sc[i][1]); else sc[i][0] = {s[g], s[g+8]}.
template <int NT, int MT, int MTU, bool ZP, int ELEM, int SW>
__device__ __forceinline__ void int4_group128_mma(float (&acc)[NT][MT][4], float (&gsum)[NT][MT][4],
                                                  const unsigned int (&w)[NT][2], const unsigned int (&sc)[NT][SW],
                                                  const unsigned int (&b)[2][MT][2], int phase) {
  static_assert(MTU >= 1 && MTU <= MT, "int4_group128_mma: 1 <= MTU <= MT");
  static_assert(SW >= (ZP ? 2 : 1), "int4_group128_mma: a zero-point scale entry is two words");
  const float kZero[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int i = 0; i < NT; ++i) {
    unsigned int a0[4], a1[4];
    unsigned int bias[2] = {0u, 0u};  // ZP: rows g, g + 8 (dequant_word_splat's register rows)
    if constexpr (ZP) {
      bias[0] = ptx::splat_hi(sc[i][0]);
      bias[1] = int4_zp_odd_bias<ELEM>(ptx::splat_hi(sc[i][1]));
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const unsigned int off = ZP ? bias[q & 1] : int4_pair_minus_offset<ELEM>(q);
      a0[q] = ptx::fma_x2<ELEM>(int4_pair<ELEM>(w[i][0], q), int4_pair_mul<ELEM>(q), off);
      a1[q] = ptx::fma_x2<ELEM>(int4_pair<ELEM>(w[i][1], q), int4_pair_mul<ELEM>(q), off);
    }
#pragma unroll
    for (int m = 0; m < MTU; ++m) {
      if (phase == 0) {
        ptx::mma_t_c<ELEM>(gsum[i][m], a0, b[0][m][0], b[0][m][1], kZero);
      } else {
        ptx::mma_t<ELEM>(gsum[i][m], a0, b[0][m][0], b[0][m][1]);
      }
      ptx::mma_t<ELEM>(gsum[i][m], a1, b[1][m][0], b[1][m][1]);
    }
    if (phase == 3) {
      const float s_lo = ptx::lo_f32<ELEM>(sc[i][0]);  // row g
      const float s_hi = ZP ? ptx::lo_f32<ELEM>(sc[i][1]) : ptx::hi_f32<ELEM>(sc[i][0]);  // row g + 8
#pragma unroll
      for (int m = 0; m < MTU; ++m) add_scaled_sum(acc[i][m], s_lo, s_hi, gsum[i][m]);
    }
  }
}

}  // namespace w4a16_detail

namespace nf4_detail {

// The 16 FP32 NF4 values, code 0 = -1 ... code 7 = 0 ... code 15 = 1 (reference/nf4_reference.cpp).
__constant__ float kNF4Table[16] = {
    -1.0f,                 -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
    -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
    0.07958029955625534f,  0.16093020141124725f,  0.24611230194568634f,  0.33791524171829224f,
    0.44070982933044434f,  0.5626170039176941f,   0.7229568362236023f,   1.0f};

__device__ __forceinline__ float nf4_table(unsigned int code) { return kNF4Table[code & 15u]; }


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
    const float lo = ptx::mul_rn(lookup(q >> (8 * p)), s);
    const float hi = ptx::mul_rn(lookup(q >> (8 * p + 4)), s);
    a[p] = ptx::pack_half2<ELEM>(lo, hi);
  }
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
    ptx::sts128_splat(table + i * 16, ptx::pack_half2<ELEM>(nf4_table(e), nf4_table(e >> 4)));
  }
}

// This lane's base address in the table: its replica. With 64 replicas: the lane's offset
// alone (lane * 4); the table address goes to nf4_pair separately (`table`).
template <int REPLICAS = 32>
__device__ __forceinline__ unsigned int nf4_pair_lane_base(unsigned int table, int lane) {
  return REPLICAS == 64 ? (unsigned int)lane * 4u : table + (lane % REPLICAS) * 4;
}

// Register p of the unscaled A fragment of word q: byte p -> its table entry. lane_base from
// nf4_pair_lane_base; `table` (256-byte aligned, warp-uniform) only with 64 replicas. The load
// is not volatile (lds32_movable) so ptxas may schedule it freely; the table is read-only
// after the fill.
template <int REPLICAS = 32>
__device__ __forceinline__ unsigned int nf4_pair(unsigned int q, int p, unsigned int lane_base, unsigned int table = 0) {
  unsigned int v;
  if constexpr (REPLICAS == 64) {
    // byte 0: lane * 4 (lane_base), byte 1: byte p of q, bytes 2-3: zero
    const unsigned int off = ptx::prmt(q, lane_base, 0x7604u | (p << 4));
    v = ptx::lds32_movable(table + off);
  } else {
    constexpr int kEntryShift = REPLICAS == 32 ? 7 : 6;  // log2(4 * REPLICAS)
    static_assert(4 * REPLICAS == (1 << kEntryShift), "entry stride");
    const unsigned int byte = ptx::prmt_zero(q, 0x4440u + p);
    v = ptx::lds32_movable(lane_base + (byte << kEntryShift));
  }
  return v;
}

// {T(a), T(a)}: an absmax splatted for the per-weight scale of nf4_scaled_word.
template <int ELEM>
__device__ __forceinline__ unsigned int nf4_splat(float a) {
  return ptx::pack_half2<ELEM>(a, a);
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
    a[p] = ptx::fma_x2<ELEM>(pair, s, 0x80008000u);
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
      ptx::mma_t<ELEM>(sum, a, b[j][0][0], b[j][0][1]);
    }
    const float a_g = __uint_as_float(s[i][0]), a_g8 = __uint_as_float(s[i][1]);
    acc[i][0][0] = fmaf(a_g, sum[0], acc[i][0][0]);
    acc[i][0][1] = fmaf(a_g, sum[1], acc[i][0][1]);
    acc[i][0][2] = fmaf(a_g8, sum[2], acc[i][0][2]);
    acc[i][0][3] = fmaf(a_g8, sum[3], acc[i][0][3]);
  }
}

}  // namespace nf4_detail
}  // namespace chord
