// Every inline-PTX wrapper of the kernels, so that NVRTC needs no CUDA header and the
// instruction forms live in one place. Grouped by what they touch: 16-bit float conversions,
// shared / global memory, packed arithmetic, mma.sync, barriers, thread block clusters, the
// Hopper asynchronous proxy (mbarrier, TMA, bulk stores) and wgmma. The sm_80 forms give
// bit-identical results on sm_80, sm_90a and sm_100a; the sm_90+ forms are only called from
// code that runs there. ELEM numbers a 16-bit type as CHORD_DTYPE_* and NF4Element do:
// 0 BF16, 1 FP16.
#pragma once

namespace chord {
namespace ptx {

// ---------------------------------------------------------------------------------------
// 16-bit floats (raw 16-bit patterns: no cuda_bf16.h / cuda_fp16.h).
// ---------------------------------------------------------------------------------------
__device__ __forceinline__ float bf16_bits_to_float(unsigned short bits) {
  return __uint_as_float(static_cast<unsigned int>(bits) << 16);
}
// Round to nearest even, as the tensor cores and bitsandbytes do.
__device__ __forceinline__ unsigned short float_to_bf16_bits(float value) {
  unsigned short bits;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(value));
  return bits;
}
// One 16-bit value of type ELEM as FP32 (exact).
template <int ELEM>
__device__ __forceinline__ float half_bits_to_float(unsigned short bits) {
  if constexpr (ELEM == 1) {
    float value;
    asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(bits));
    return value;
  } else {
    return bf16_bits_to_float(bits);
  }
}
// Two FP32 values -> one register of two ELEM (lo in bits 0..15), round to nearest even.
template <int ELEM>
__device__ __forceinline__ unsigned int pack_half2(float lo, float hi) {
  unsigned int d;
  if constexpr (ELEM == 1) {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  }
  return d;
}
// Two floats -> one register of two BF16 (lo in the low half), round to nearest even.
__device__ __forceinline__ unsigned int pack_bf16x2(float lo, float hi) { return pack_half2<0>(lo, hi); }

// ---------------------------------------------------------------------------------------
// Shared and global memory.
// ---------------------------------------------------------------------------------------
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
__device__ __forceinline__ void lds64(unsigned int addr, unsigned int* r) {
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
// Not volatile, so ptxas may schedule it freely: for tables that are read-only after their fill.
__device__ __forceinline__ unsigned int lds32_movable(unsigned int addr) {
  unsigned int v;
  asm("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}
// Stores v to all four words of the 16 bytes at addr.
__device__ __forceinline__ void sts128_splat(unsigned int addr, unsigned int v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};\n" ::"r"(addr), "r"(v) : "memory");
}
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
// {a[g], a[g+8]} of one 64-k chunk: 8 bytes, read-only path (four lanes share them).
__device__ __forceinline__ void ldg_nc_v2(const void* p, unsigned int* r) {
  asm volatile("ld.global.nc.v2.u32 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "l"(p));
}

// ---------------------------------------------------------------------------------------
// Arithmetic.
// ---------------------------------------------------------------------------------------
// FP32 multiply / add rounded once, never contracted into an fma.
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
// d = a * b + c on two packed ELEM values, one rounding each.
template <int ELEM>
__device__ __forceinline__ unsigned int fma_x2(unsigned int a, unsigned int b, unsigned int c) {
  unsigned int d;
  if constexpr (ELEM == 1) {
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  } else {
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  }
  return d;
}
// (x & 0x000f000f) | magic in one lop3: the two nibbles at bits 0 and 16 become the mantissa
// LSBs of the ELEM pair {M + lo, M + hi}, M = 128 (bf16 0x4300) or 1024 (fp16 0x6400), where
// the ulp is 1. Written as PTX because from C the compiler emits an AND and an OR (SASS LOP3
// takes one immediate); ptxas keeps one constant in a register instead.
template <int ELEM>
__device__ __forceinline__ unsigned int nibble_pair(unsigned int x) {
  unsigned int d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n"
      : "=r"(d)
      : "r"(x), "n"(0x000f000f), "n"(ELEM == 1 ? 0x64006400 : 0x43004300));
  return d;
}
__device__ __forceinline__ unsigned int nibble_pair_bf16(unsigned int x) { return nibble_pair<0>(x); }
// FP16 only: the nibbles at bits 4..7 and 20..23 of x, left in place under the magic: the
// pair {1024 + 16 code_lo, 1024 + 16 code_hi}, exact (FP16's ulp at 1024 is 1).
__device__ __forceinline__ unsigned int nibble_pair_hi_f16(unsigned int x) {
  unsigned int d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(d) : "r"(x), "n"(0x00f000f0), "n"(0x64006400));
  return d;
}
// The low / high ELEM value of a 16-bit pair as fp32 (exact: a BF16 is the top of an fp32, an
// FP16 widens by cvt).
template <int ELEM>
__device__ __forceinline__ float lo_f32(unsigned int x) {
  if constexpr (ELEM == 1) {
    float d;
    asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %1;\ncvt.f32.f16 %0, l;\n}\n" : "=f"(d) : "r"(x));
    return d;
  } else {
    return __uint_as_float(x << 16);
  }
}
template <int ELEM>
__device__ __forceinline__ float hi_f32(unsigned int x) {
  if constexpr (ELEM == 1) {
    float d;
    asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %1;\ncvt.f32.f16 %0, h;\n}\n" : "=f"(d) : "r"(x));
    return d;
  } else {
    return __uint_as_float(x & 0xffff0000u);
  }
}
__device__ __forceinline__ unsigned int prmt(unsigned int a, unsigned int b, unsigned int sel) {
  unsigned int d;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}
// prmt with zero as the second source: bytes 4..7 of the selector read zero.
__device__ __forceinline__ unsigned int prmt_zero(unsigned int a, unsigned int sel) {
  unsigned int d;
  asm("prmt.b32 %0, %1, 0, %2;" : "=r"(d) : "r"(a), "r"(sel));
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

// ---------------------------------------------------------------------------------------
// mma.sync m16n8k16, fp32 accumulate.
// ---------------------------------------------------------------------------------------
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
// D = A (16x16 fp16, row) * B (16x8 fp16, col) + D, fp32 accumulate.
__device__ __forceinline__ void mma_f16_16816(float* d, const unsigned int* a, unsigned int b0, unsigned int b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// D = A * B + C, fp16 inputs, with a separate C (as mma_bf16_16816_c).
__device__ __forceinline__ void mma_f16_16816_c(float* d, const unsigned int* a, unsigned int b0, unsigned int b1,
                                                const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}
// D = A * B + D in T (BF16 or FP16) inputs, fp32 accumulate.
template <int ELEM>
__device__ __forceinline__ void mma_t(float* d, const unsigned int* a, unsigned int b0, unsigned int b1) {
  if constexpr (ELEM == 1) {
    mma_f16_16816(d, a, b0, b1);
  } else {
    mma_bf16_16816(d, a, b0, b1);
  }
}
// D = A * B + C in T inputs.
template <int ELEM>
__device__ __forceinline__ void mma_t_c(float* d, const unsigned int* a, unsigned int b0, unsigned int b1,
                                        const float* c) {
  if constexpr (ELEM == 1) {
    mma_f16_16816_c(d, a, b0, b1, c);
  } else {
    mma_bf16_16816_c(d, a, b0, b1, c);
  }
}

// ---------------------------------------------------------------------------------------
// Barriers.
// ---------------------------------------------------------------------------------------
// Named barrier ID among THREADS threads (immediate ids: a register id makes ptxas reserve all
// 16 barriers). bar_sync_or: the same, and whether any thread passed a nonzero v.
template <int ID, int THREADS>
__device__ __forceinline__ void bar_sync() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(ID), "n"(THREADS) : "memory");
}
template <int ID, int THREADS>
__device__ __forceinline__ int bar_sync_or(int v) {
  int r;
  asm volatile(
      "{\n.reg .pred p, q;\nsetp.ne.s32 q, %1, 0;\nbar.red.or.pred p, %2, %3, q;\nselp.s32 %0, 1, 0, p;\n}\n"
      : "=r"(r)
      : "r"(v), "n"(ID), "n"(THREADS)
      : "memory");
  return r;
}
__device__ __forceinline__ void trap() { asm volatile("trap;"); }

template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// ---------------------------------------------------------------------------------------
// Thread block clusters (sm_90+).
// ---------------------------------------------------------------------------------------
// Thread block clusters (only split-K kernels call these). cluster_sync: every thread
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

// ---------------------------------------------------------------------------------------
// Hopper asynchronous proxy: proxy fences, mbarriers, TMA loads, bulk stores, stmatrix.
// ---------------------------------------------------------------------------------------
// cp.async writes go through the generic proxy, wgmma reads shared memory through the async
// proxy: each thread fences its landed copies before the barrier that publishes them.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// The reader's half: after the barrier wait that observed such a publication, orders this
// thread's async-proxy reads (wgmma) after it. No instruction on sm_90a (ptxas emits none).
__device__ __forceinline__ void fence_proxy_async_acquire() {
  asm volatile("fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void opaque(unsigned int& x) { asm volatile("" : "+r"(x)); }
// Four 8x8 b16 matrices from mma-fragment registers (thread l: row l / 4, columns 2 (l % 4),
// + 1 of each) stored transposed: row i of matrix j goes to the 16 bytes at the address
// thread 8 j + i passes, holding column i of the fragment.
__device__ __forceinline__ void stmatrix_x4_trans(unsigned int addr, unsigned int r0, unsigned int r1, unsigned int r2,
                                                  unsigned int r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}
// Keeps the compiler from moving accumulator reads / writes across wgmma fences and waits.
__device__ __forceinline__ void reg_fence(float& x) { asm volatile("" : "+f"(x)::"memory"); }
__device__ __forceinline__ void mbar_init(unsigned int bar, unsigned int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned int bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
// Waits until the phase of `bar` with this parity has completed.
__device__ __forceinline__ void mbar_wait(unsigned int bar, unsigned int parity) {
  unsigned int done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
// Arrives on `bar` once every cp.async this thread issued before has landed (the barrier's
// count includes this arrival: .noinc).
__device__ __forceinline__ void cp_async_mbar_arrive(unsigned int bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// One arrival on `bar` that also expects `bytes` more of asynchronous (TMA) writes.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned int bar, unsigned int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// TMA: the box of `map` at (col, row) into shared memory at `dst`, completing `bytes` on `bar`.
__device__ __forceinline__ void tma_load_2d(unsigned int dst, const void* map, int col, int row,
                                           unsigned int bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(col), "r"(row), "r"(bar)
      : "memory");
}
// TMA bulk stores (shared -> global, 16-byte aligned, a multiple of 16 bytes), in bulk groups.
__device__ __forceinline__ void bulk_store(void* dst, unsigned int src, unsigned int bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst), "r"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// This thread's committed bulk stores have read their shared-memory source.
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
// This thread's committed bulk stores are complete.
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// ---------------------------------------------------------------------------------------
// wgmma (sm_90a).
// ---------------------------------------------------------------------------------------
// Shared-memory matrix descriptor of a K-major operand in 128-byte swizzle: start address,
// leading byte offset unused for this mode (1 by convention), stride byte offset 1024 between
// 8-row core-matrix groups, swizzle mode 1 (128 B) in bits 62-63. Stepping k by 16 inside the
// 128-byte row is +32 bytes on the start address; the swizzle is applied by the hardware on
// the absolute address, which is why every tile is 1024-byte aligned.
__device__ __forceinline__ unsigned long long smem_desc_sw128(unsigned int addr) {
  return (unsigned long long)((addr & 0x3ffffu) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// CHORD_PTX_REPEAT_<COUNT>(M, SEP) expands to M(0) SEP() M(1) SEP() ... M(COUNT - 1): the
// operand lists of an instruction with many registers, as decimal literals (tens pasted to
// units) so that M may stringize them.
#define CHORD_PTX_REP2(M, SEP, t) M(t##0) SEP() M(t##1)
#define CHORD_PTX_REP4(M, SEP, t) CHORD_PTX_REP2(M, SEP, t) SEP() M(t##2) SEP() M(t##3)
#define CHORD_PTX_REP8(M, SEP, t) CHORD_PTX_REP4(M, SEP, t) SEP() M(t##4) SEP() M(t##5) SEP() M(t##6) SEP() M(t##7)
#define CHORD_PTX_REP6(M, SEP, t) CHORD_PTX_REP4(M, SEP, t) SEP() M(t##4) SEP() M(t##5)
#define CHORD_PTX_REP10(M, SEP, t) CHORD_PTX_REP8(M, SEP, t) SEP() M(t##8) SEP() M(t##9)
#define CHORD_PTX_REPEAT_8(M, SEP) CHORD_PTX_REP8(M, SEP, )
#define CHORD_PTX_REPEAT_16(M, SEP) CHORD_PTX_REP10(M, SEP, ) SEP() CHORD_PTX_REP6(M, SEP, 1)
#define CHORD_PTX_REPEAT_24(M, SEP) \
  CHORD_PTX_REP10(M, SEP, ) SEP() CHORD_PTX_REP10(M, SEP, 1) SEP() CHORD_PTX_REP4(M, SEP, 2)
#define CHORD_PTX_REPEAT_32(M, SEP) \
  CHORD_PTX_REP10(M, SEP, ) SEP() CHORD_PTX_REP10(M, SEP, 1) SEP() CHORD_PTX_REP10(M, SEP, 2) SEP() CHORD_PTX_REP2(M, SEP, 3)
#define CHORD_PTX_REPEAT_48(M, SEP)                                                                       \
  CHORD_PTX_REP10(M, SEP, ) SEP() CHORD_PTX_REP10(M, SEP, 1) SEP() CHORD_PTX_REP10(M, SEP, 2) SEP()       \
  CHORD_PTX_REP10(M, SEP, 3) SEP() CHORD_PTX_REP8(M, SEP, 4)
#define CHORD_PTX_REPEAT_64(M, SEP)                                                                       \
  CHORD_PTX_REP10(M, SEP, ) SEP() CHORD_PTX_REP10(M, SEP, 1) SEP() CHORD_PTX_REP10(M, SEP, 2) SEP()       \
  CHORD_PTX_REP10(M, SEP, 3) SEP() CHORD_PTX_REP10(M, SEP, 4) SEP() CHORD_PTX_REP10(M, SEP, 5) SEP()      \
  CHORD_PTX_REP4(M, SEP, 6)
#define CHORD_PTX_REPEAT_128(M, SEP)                                                                      \
  CHORD_PTX_REP10(M, SEP, ) SEP() CHORD_PTX_REP10(M, SEP, 1) SEP() CHORD_PTX_REP10(M, SEP, 2) SEP()       \
  CHORD_PTX_REP10(M, SEP, 3) SEP() CHORD_PTX_REP10(M, SEP, 4) SEP() CHORD_PTX_REP10(M, SEP, 5) SEP()      \
  CHORD_PTX_REP10(M, SEP, 6) SEP() CHORD_PTX_REP10(M, SEP, 7) SEP() CHORD_PTX_REP10(M, SEP, 8) SEP()      \
  CHORD_PTX_REP10(M, SEP, 9) SEP() CHORD_PTX_REP10(M, SEP, 10) SEP() CHORD_PTX_REP10(M, SEP, 11) SEP()    \
  CHORD_PTX_REP8(M, SEP, 12)
#define CHORD_PTX_COMMA() ,
#define CHORD_PTX_COMMA_TEXT() ", "
#define CHORD_PTX_OPERAND(i) "%" #i
#define CHORD_PTX_ACCUMULATOR(i) "+f"(d[i])

// D[64 x N] += A[64 x 16] (registers, mma A-fragment per warp) * B[16 x N] (smem, K-major), with
// bf16 (F16 = false) or fp16 (F16 = true) A and B. The instruction text differs only in the type.
// accumulate = 0: D = A * B (scale-d 0: the old D is ignored, no zeroing of the registers).
// Operands: the N / 2 accumulators %0 .. (REPEAT), then a[0..3], desc and accumulate, whose
// numbers A0 .. SCALE_D follow.
template <int N>
struct Wgmma;

#define CHORD_PTX_WGMMA_TEXT(T, N, REPEAT, A0, A1, A2, A3, DESC, SCALE_D)                              \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %" #SCALE_D ", 0;\n"                                              \
  "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." T "." T " "                                       \
  "{" REPEAT(CHORD_PTX_OPERAND, CHORD_PTX_COMMA_TEXT) "}, {%" #A0 ", %" #A1 ", %" #A2 ", %" #A3 "}, " \
  "%" #DESC ", p, 1, 1, 0;\n}\n"
#define CHORD_PTX_WGMMA(N, REPEAT, A0, A1, A2, A3, DESC, SCALE_D)                                             \
  template <>                                                                                                 \
  struct Wgmma<N> {                                                                                           \
    template <bool F16>                                                                                       \
    __device__ __forceinline__ static void mma(float* d, const unsigned int* a, unsigned long long desc,      \
                                               int accumulate = 1) {                                          \
      if constexpr (F16) {                                                                                    \
        asm volatile(CHORD_PTX_WGMMA_TEXT("f16", N, REPEAT, A0, A1, A2, A3, DESC, SCALE_D)                    \
                     : REPEAT(CHORD_PTX_ACCUMULATOR, CHORD_PTX_COMMA)                                         \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate));               \
      } else {                                                                                                \
        asm volatile(CHORD_PTX_WGMMA_TEXT("bf16", N, REPEAT, A0, A1, A2, A3, DESC, SCALE_D)                   \
                     : REPEAT(CHORD_PTX_ACCUMULATOR, CHORD_PTX_COMMA)                                         \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate));               \
      }                                                                                                       \
    }                                                                                                         \
  };
CHORD_PTX_WGMMA(16, CHORD_PTX_REPEAT_8, 8, 9, 10, 11, 12, 13)
CHORD_PTX_WGMMA(32, CHORD_PTX_REPEAT_16, 16, 17, 18, 19, 20, 21)
CHORD_PTX_WGMMA(48, CHORD_PTX_REPEAT_24, 24, 25, 26, 27, 28, 29)
CHORD_PTX_WGMMA(64, CHORD_PTX_REPEAT_32, 32, 33, 34, 35, 36, 37)
CHORD_PTX_WGMMA(96, CHORD_PTX_REPEAT_48, 48, 49, 50, 51, 52, 53)
CHORD_PTX_WGMMA(128, CHORD_PTX_REPEAT_64, 64, 65, 66, 67, 68, 69)
CHORD_PTX_WGMMA(256, CHORD_PTX_REPEAT_128, 128, 129, 130, 131, 132, 133)
#undef CHORD_PTX_WGMMA
#undef CHORD_PTX_WGMMA_TEXT

}  // namespace ptx
}  // namespace chord
