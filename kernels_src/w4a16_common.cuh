// Device primitives of the W4A16 family: inline PTX only, so NVRTC needs no CUDA header.
// Everything here is sm_80+ (cp.async, ldmatrix, mma.sync bf16, fma.rn.bf16x2) and gives
// bit-identical results on sm_80, sm_90a and sm_100a.
#pragma once

#include "w4a16_args.cuh"

namespace chord {
namespace w4a16_detail {

struct alignas(16) uint4_w {
  unsigned int x, y, z, w;
};

__device__ __forceinline__ unsigned int smem_addr(const void* p) {
  unsigned long long a;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
  return (unsigned int)a;
}

// 16-byte global -> shared copy bypassing L1; src_bytes = 0 fills the 16 bytes with zeros.
__device__ __forceinline__ void cp_async_16(unsigned int dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned int addr, unsigned int& r0, unsigned int& r1,
                                            unsigned int& r2, unsigned int& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2(unsigned int addr, unsigned int& r0, unsigned int& r1) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr));
}

__device__ __forceinline__ void lds128(unsigned int addr, unsigned int& a, unsigned int& b, unsigned int& c,
                                       unsigned int& d) {
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(addr));
}
__device__ __forceinline__ unsigned int lds32(unsigned int addr) {
  unsigned int v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

// D = A (16x16 bf16, row) * B (16x8 bf16, col) + D, fp32 accumulate.
__device__ __forceinline__ void mma_bf16_16816(float* d, const unsigned int* a, unsigned int b0,
                                               unsigned int b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// D = A * B + C with a separate C (the first MMA of a chain starts from C without copies).
__device__ __forceinline__ void mma_bf16_16816_c(float* d, const unsigned int* a, unsigned int b0, unsigned int b1,
                                                 const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

__device__ __forceinline__ unsigned int bf16x2_fma(unsigned int a, unsigned int b, unsigned int c) {
  unsigned int d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// {lo, hi} floats -> bf16x2 (lo in bits 0..15), round to nearest even.
__device__ __forceinline__ unsigned int f32x2_to_bf16x2(float lo, float hi) {
  unsigned int d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}

// (x & 0x000f000f) | 0x43004300 in one lop3: the two nibbles at bits 0 and 16 become the
// mantissa LSBs of the bf16 pair {128 + lo, 128 + hi}. Written as PTX because from C the
// compiler emits an AND and an OR (SASS LOP3 takes one immediate); ptxas keeps one constant in
// a register instead.
__device__ __forceinline__ unsigned int nibble_pair_bf16(unsigned int x) {
  unsigned int d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(d) : "r"(x), "n"(0x000f000f), "n"(0x43004300));
  return d;
}

__device__ __forceinline__ unsigned int prmt(unsigned int a, unsigned int b, unsigned int sel) {
  unsigned int d;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

// {x.lo, x.lo} and {x.hi, x.hi} of a 16-bit pair. Written as half moves, not as a prmt, so that
// ptxas folds the splat into the operand selector (.H0_H0 / .H1_H1) of the packed multiply
// that consumes it: no instruction at all (SASS checked for the decode tiles and the WGMMA
// decode; the values, and so every product, are the same as the prmt's).
__device__ __forceinline__ unsigned int splat_lo(unsigned int x) {
  unsigned int d;
  asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %1;\nmov.b32 %0, {l, l};\n}\n" : "=r"(d) : "r"(x));
  return d;
}
__device__ __forceinline__ unsigned int splat_hi(unsigned int x) {
  unsigned int d;
  asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %1;\nmov.b32 %0, {h, h};\n}\n" : "=r"(d) : "r"(x));
  return d;
}

// One packed 32-bit weight word -> the four bf16x2 registers of an mma.m16n8k16 A fragment,
// with the scales splatted: s_lo = {s[g], s[g]} for registers 0 and 2 (row g), s_hi =
// {s[g+8], s[g+8]} for 1 and 3 (row g + 8).
// Word layout: register p (p = 0..3) takes its low element from bits 4p..4p+3 and its high
// element from bits 16+4p..16+4p+3, so (q >> 4p) & 0x000f000f puts both nibbles in the
// mantissa LSBs of a bf16 pair; OR 0x4300 (128.0) gives 128 + code exactly.
//   x = (128 + code) * 1 - 136      exact (|code - 8| <= 8 fits the 8-bit significand)
//   w = x * scale + (-0)            one rounding of the exact product == bf16 multiply
// fma is used for both because mul/sub.bf16x2 do not exist on sm_80; the results are the
// same bits on every arch. Callers that decode both 16-k words of a group splat once.
__device__ __forceinline__ void dequant_word_splat(unsigned int q, unsigned int s_lo, unsigned int s_hi,
                                                   unsigned int* a) {
  const unsigned int kOne = 0x3f803f80u;      // {1.0, 1.0}
  const unsigned int kM136 = 0xc308c308u;     // {-136.0, -136.0}
  const unsigned int kNegZero = 0x80008000u;  // {-0.0, -0.0}
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const unsigned int x = nibble_pair_bf16(q >> (4 * p));
    const unsigned int v = bf16x2_fma(x, kOne, kM136);
    a[p] = bf16x2_fma(v, (p & 1) ? s_hi : s_lo, kNegZero);
  }
}

// The same from the scale word s2 = {s[g], s[g+8]}.
__device__ __forceinline__ void dequant_word(unsigned int q, unsigned int s2, unsigned int* a) {
  dequant_word_splat(q, splat_lo(s2), splat_hi(s2), a);
}

// One 32-k scale group of INT4 weights with the scale applied to fp32 partial sums instead of
// to every weight (the decode tiles, where the per-weight decode is the issue bottleneck):
//   sum_k bf16(code - 8) * s * a  ==  s * (sum_k (128 + code) * a  +  sum_k (-136) * a)
// (128 + code) is one lop3 per nibble pair and exact in bf16, so the two fmas per pair of
// dequant_word go away; the -136 term is the same for every weight row, so it is one MMA with
// a constant A per token tile and k16 step, shared by the NT n tiles, and it seeds each group
// sum. Products are exact in the fp32 MMA; the result differs from the bf16-dequantized
// reference only by that reference's rounding of (code - 8) * scale to bf16.
//   w[i][0..1]: the packed words of n tile i for the group's two k16 steps; s2[i]: its scale
//   word {s[g], s[g+8]}; b[jj][m]: the token fragments of k16 step jj, token tile m.
//   MTU: token tiles used (the first MTU of MT; the others' accumulators are left alone).
template <int NT, int MT, int MTU = MT>
__device__ __forceinline__ void int4_group_mma(float (&acc)[NT][MT][4], const unsigned int (&w)[NT][2],
                                               const unsigned int (&s2)[NT], const unsigned int (&b)[2][MT][2]) {
  static_assert(MTU >= 1 && MTU <= MT, "int4_group_mma: 1 <= MTU <= MT");
  const unsigned int kNeg136[4] = {0xc308c308u, 0xc308c308u, 0xc308c308u, 0xc308c308u};
  const float kZero[4] = {0.f, 0.f, 0.f, 0.f};
  float corr[MTU][4];
#pragma unroll
  for (int m = 0; m < MTU; ++m) {
    mma_bf16_16816_c(corr[m], kNeg136, b[0][m][0], b[0][m][1], kZero);
    mma_bf16_16816(corr[m], kNeg136, b[1][m][0], b[1][m][1]);
  }
#pragma unroll
  for (int i = 0; i < NT; ++i) {
    unsigned int a0[4], a1[4];
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      a0[p] = nibble_pair_bf16(w[i][0] >> (4 * p));
      a1[p] = nibble_pair_bf16(w[i][1] >> (4 * p));
    }
    const float s_lo = __uint_as_float(s2[i] << 16);          // row g
    const float s_hi = __uint_as_float(s2[i] & 0xffff0000u);  // row g + 8
#pragma unroll
    for (int m = 0; m < MTU; ++m) {
      float sum[4];
      mma_bf16_16816_c(sum, a0, b[0][m][0], b[0][m][1], corr[m]);
      mma_bf16_16816(sum, a1, b[1][m][0], b[1][m][1]);
      acc[i][m][0] = fmaf(s_lo, sum[0], acc[i][m][0]);
      acc[i][m][1] = fmaf(s_lo, sum[1], acc[i][m][1]);
      acc[i][m][2] = fmaf(s_hi, sum[2], acc[i][m][2]);
      acc[i][m][3] = fmaf(s_hi, sum[3], acc[i][m][3]);
    }
  }
}

// Thread block clusters (sm_90+; only split-K kernels call these). cluster_sync: every thread
// of every CTA of the cluster arrives (release) and waits (acquire), so shared-memory writes
// before it are visible to the other CTAs' DSMEM reads after it.
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}
// The shared::cluster address of `addr` (this CTA's shared memory) in CTA `rank` of the cluster.
__device__ __forceinline__ unsigned int cluster_map_shared(unsigned int addr, int rank) {
  unsigned int d = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(d) : "r"(addr), "r"(rank));
#else
  __trap();
#endif
  return d;
}
__device__ __forceinline__ float ld_shared_cluster_f32(unsigned int addr) {
  float v = 0.f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
#else
  __trap();
#endif
  return v;
}

// A compile-time int carried by a value (to instantiate a generic lambda per constant).
template <int V>
struct IntTag {
  static constexpr int value = V;
};

// Streaming weight loads straight into registers: read once per CTA, so keep them out of L1;
// the 256-byte L2 prefetch hint matches a warp's 512-byte run per 16 x 64 chunk.
__device__ __forceinline__ void ldg_stream_v4(const void* p, unsigned int* r) {
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "l"(p));
}
// Scales: four lanes (t = 0..3) share each 4-byte word, so let L1 merge them.
__device__ __forceinline__ unsigned int ldg_nc_b32(const void* p) {
  unsigned int v;
  asm volatile("ld.global.nc.b32 %0, [%1];\n" : "=r"(v) : "l"(p));
  return v;
}

// Where packed word w lies in the layout (docs/packed_layout.md), for the pack / unpack
// kernels of both formats: w = (((e * N/16 + nt) * K/64 + kc) * 32 + lane) * 4 + j, i.e.
// expert e, 16-row n tile nt, 64-k chunk kc, lane, k16 step j. kcs = K/64, nts = N/16.
struct PackedWordAt {
  long long e;
  int nt, kc, lane, j;
};
__device__ __forceinline__ PackedWordAt packed_word_at(long long w, int kcs, int nts) {
  PackedWordAt at;
  at.j = (int)(w & 3);
  at.lane = (int)((w >> 2) & 31);
  long long rest = w >> 7;
  at.kc = (int)(rest % kcs);
  rest /= kcs;
  at.nt = (int)(rest % nts);
  at.e = rest / nts;
  return at;
}

// Where packed scale i lies: i = (e * groups + grp) * N + nt * 16 + pos, with `row` the row of
// n tile nt whose scale is stored at pos (the inverse of scale_pos_in_16). groups: scale rows
// per expert (K/32 for INT4, K/64 for NF4's absmax); nts = N/16.
struct PackedScaleAt {
  long long e;
  int grp, nt, row;
};
__device__ __forceinline__ PackedScaleAt packed_scale_at(long long i, int n, int nts, int groups) {
  PackedScaleAt at;
  const int pos = (int)(i & 15);
  at.nt = (int)((i / 16) % nts);
  const long long eg = i / n;
  at.grp = (int)(eg % groups);
  at.e = eg / groups;
  at.row = (pos >> 1) + 8 * (pos & 1);
  return at;
}

// Position of (row r of a 16-row n tile, register-lane view) inside a 16-scale packed group:
// row r -> 2 * (r % 8) + r / 8, so lane group g reads {s[g], s[g+8]} with one 32-bit load.
CHORD_W4A16_HD constexpr int scale_pos_in_16(int r) { return 2 * (r & 7) + (r >> 3); }

// Element (row, col) of a 16x16 tile held by (lane, word nibble slot) in an mma A fragment.
// Slot s in 0..7 is the nibble at bit 4*s of the packed word.
//   slot 0..3 -> register s, low element; slot 4..7 -> register s-4, high element.
//   register p: row g + 8*(p&1), col 2t + 8*(p>>1) (+1 for the high element).
CHORD_W4A16_HD constexpr int frag_row(int lane, int slot) { return (lane >> 2) + 8 * ((slot & 3) & 1); }
CHORD_W4A16_HD constexpr int frag_col(int lane, int slot) {
  return 2 * (lane & 3) + 8 * ((slot & 3) >> 1) + (slot >> 2);
}

}  // namespace w4a16_detail
}  // namespace chord
