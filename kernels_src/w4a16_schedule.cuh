// Tile schedulers of the W4A16 GEMM kernels (every engine): which expert, activation rows
// and output rows a CTA's tile covers, per grouped-GEMM mode, from the int32 routing tensors
// on the device; and the CTA synchronization they use.
#pragma once

#include "ptx.cuh"
#include "w4a16_args.cuh"

namespace chord {

// ---------------------------------------------------------------------------------------
// Tile schedulers. resolve() is called by every thread of the CTA; it fills
// s_src[BLOCK_M] (activation row, -1 = invalid) and s_dst[BLOCK_M] (output row, -1 = do not
// write), sets `expert`, and returns false (uniformly) when the CTA has no work. COMPACT: the
// masked compact schedule, whose CTAs loop over tiles; false: the buffer-wide one, one tile per
// CTA (W4A16Tiles<kW4A16Masked>). The other modes ignore it.
// ---------------------------------------------------------------------------------------
template <int MODE>
struct W4A16Tiles;

// How the tile schedulers' threads synchronize: the whole CTA (every kernel but the
// warp-specialized WGMMA one), or the THREADS threads of named barrier ID (its producer
// warpgroup, which resolves tiles while the consumers compute).
struct W4A16CtaSync {
  __device__ __forceinline__ static void sync() { __syncthreads(); }
  __device__ __forceinline__ static int sync_or(int v) { return __syncthreads_or(v); }
};
template <int ID, int THREADS>
struct W4A16NamedSync {
  __device__ __forceinline__ static void sync() { ptx::bar_sync<ID, THREADS>(); }
  __device__ __forceinline__ static int sync_or(int v) { return ptx::bar_sync_or<ID, THREADS>(v); }
};

template <>
struct W4A16Tiles<kW4A16Contiguous> {
  template <int BLOCK_M, int THREADS, class Sync = W4A16CtaSync, bool COMPACT = false>
  __device__ __forceinline__ static bool resolve(const W4A16Args& args, int tile, int* s_src, int* s_dst,
                                                 int* s_misc, int& expert) {
    const int row0 = tile * BLOCK_M;
    if (row0 >= args.a_rows) return false;
    const int* m_indices = static_cast<const int*>(args.m_indices);
    int valid = 0;
    if (threadIdx.x < BLOCK_M) {
      const int r = row0 + (int)threadIdx.x;
      const int e = r < args.a_rows ? m_indices[r] : -1;
      valid = e >= 0 && e < args.num_experts;
      s_src[threadIdx.x] = valid ? r : -1;
      s_dst[threadIdx.x] = valid ? r : -1;
      if (valid) s_misc[0] = e;  // all valid rows of one aligned block carry the same expert
    }
    if (!Sync::sync_or(valid)) return false;  // whole-padding block
    expert = s_misc[0];
    return true;
  }
};

// Block-wide exclusive scan of the threads' tile counts nt (one per thread, after `carry`
// tiles of earlier rounds): this thread's first tile. `total`: carry plus every thread's nt.
// Writes s_warp[0, THREADS / 32); the caller syncs before the next round rewrites them.
template <int THREADS, class Sync>
__device__ __forceinline__ int w4a16_scan_tiles(int nt, int carry, int* s_warp, int& total) {
  constexpr int kWarps = THREADS / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int cnt = nt;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int v = __shfl_up_sync(0xffffffffu, cnt, d);
    if (lane >= d) cnt += v;
  }
  if (lane == 31) s_warp[warp] = cnt;
  Sync::sync();
  int before = carry;
  total = carry;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const int v = s_warp[w];
    before += w < warp ? v : 0;
    total += v;
  }
  return before + cnt - nt;
}

template <>
struct W4A16Tiles<kW4A16Masked> {
  // Two schedules (COMPACT). Buffer-wide, for a grid of the buffer's G * ceil(max_m / BM) tiles:
  // tile t is rows (t % tiles per group) * BM.. of group t / tiles per group, and a tile past its
  // group's rows has nothing to do. Compact, for a grid sized by the hint (w4a16_masked_tiles;
  // vLLM's batched buffers hold thousands of rows per group for a few valid ones): tile t is the
  // t-th BLOCK_M slice of the groups' valid rows in group order, found by a block-wide scan of
  // per-group tile counts (G <= a few hundred, L2 hits), and the CTAs take t, t + slots, ...
  // while tiles are left; correct on any grid. Group g holds min(max(masked_m[g], 0), max_m)
  // rows. s_misc[kTilesAt]: the compact schedule's tile count, where the CTAs' loop ends, so that
  // a CTA needs no second scan to learn it has no more.
  static constexpr int kTilesAt = 35;

  // Buffer-wide: tile `tile`'s group g and first row r0; false where the tile has no rows.
  template <int BLOCK_M>
  __device__ __forceinline__ static bool rows_of(const W4A16Args& args, int tile, int& g, int& r0, int& count) {
    const int tiles_per_group = (args.max_m + BLOCK_M - 1) / BLOCK_M;
    if (tiles_per_group <= 0) return false;
    g = tile / tiles_per_group;
    r0 = (tile - g * tiles_per_group) * BLOCK_M;
    if (g >= args.num_groups || g >= args.num_experts) return false;
    count = static_cast<const int*>(args.masked_m)[g];
    count = count < args.max_m ? count : args.max_m;
    return r0 < count;
  }

  // Compact: tile `tile`'s group g, first row r0 and the group's rows; false past the last tile.
  template <int BLOCK_M, int THREADS, class Sync>
  __device__ __forceinline__ static bool compact_rows_of(const W4A16Args& args, int tile, int* s_misc, int& g, int& r0,
                                                         int& count) {
    const int* masked_m = static_cast<const int*>(args.masked_m);
    const int groups = args.num_groups < args.num_experts ? args.num_groups : args.num_experts;
    const int max_m = args.max_m;
    if (threadIdx.x == 0) s_misc[32] = -1;
    int carry = 0;
    for (int base = 0; base < groups; base += THREADS) {
      const int e = base + (int)threadIdx.x;
      int rows = e < groups ? masked_m[e] : 0;
      rows = rows < 0 ? 0 : (rows < max_m ? rows : max_m);
      const int nt = (rows + BLOCK_M - 1) / BLOCK_M;
      int total;
      const int first = w4a16_scan_tiles<THREADS, Sync>(nt, carry, s_misc, total);
      if (nt > 0 && tile >= first && tile < first + nt) {
        s_misc[32] = e;
        s_misc[33] = (tile - first) * BLOCK_M;
        s_misc[34] = rows;
      }
      carry = total;
      Sync::sync();  // s_misc[0..kWarps) is rewritten next round; publishes s_misc[32..34]
    }
    if (threadIdx.x == 0) s_misc[kTilesAt] = carry;
    Sync::sync();  // also orders thread 0's s_misc[32] = -1 when the loop did not run
    g = s_misc[32];
    r0 = s_misc[33];
    count = s_misc[34];
    return g >= 0;
  }

  template <int BLOCK_M, int THREADS, class Sync = W4A16CtaSync, bool COMPACT = false>
  __device__ __forceinline__ static bool resolve(const W4A16Args& args, int tile, int* s_src, int* s_dst,
                                                 int* s_misc, int& expert) {
    int g, r0, count;
    if constexpr (COMPACT) {
      if (!compact_rows_of<BLOCK_M, THREADS, Sync>(args, tile, s_misc, g, r0, count)) return false;
    } else {
      (void)s_misc;
      if (!rows_of<BLOCK_M>(args, tile, g, r0, count)) return false;
    }
    if (threadIdx.x < BLOCK_M) {
      const int r = r0 + (int)threadIdx.x;
      const int idx = r < count ? g * args.max_m + r : -1;
      s_src[threadIdx.x] = idx;
      s_dst[threadIdx.x] = idx;
    }
    Sync::sync();
    expert = g;
    return true;
  }
};

// What a tile function returns once its tile is done: in the masked compact schedule, where the
// CTA's loop over tiles (t, t + slots, ...) ends, its tile count (W4A16Tiles<kW4A16Masked>); 1
// otherwise (one tile per CTA, or the warp-specialized kernel's own loop).
template <int MODE, bool COMPACT>
__device__ __forceinline__ int w4a16_tiles_done(const int* s_misc) {
  if constexpr (MODE == kW4A16Masked && COMPACT) {
    return s_misc[W4A16Tiles<kW4A16Masked>::kTilesAt];
  } else {
    return 1;
  }
}

template <>
struct W4A16Tiles<kW4A16Offsets> {
  // Tile t of the grid is the t-th BLOCK_M slice in expert order; each CTA recovers its
  // expert with a block-wide scan of per-expert tile counts (E <= a few hundred, L2 hits).
  // Expert e owns rows [end(e-1), end(e)) with end(e) = clamp(max(offsets[0..e]), 0, S):
  // decreasing, negative or past-S offsets give empty or clipped segments, never two experts
  // writing the same row (the running max keeps the segments disjoint).
  template <int BLOCK_M, int THREADS, class Sync = W4A16CtaSync, bool COMPACT = false>
  __device__ __forceinline__ static bool resolve(const W4A16Args& args, int tile, int* s_src, int* s_dst,
                                                 int* s_misc, int& expert) {
    constexpr int kWarps = THREADS / 32;
    constexpr int kMinInt = -2147483647 - 1;
    const int* offsets = static_cast<const int*>(args.offsets);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int num_e = args.num_experts;
    const int rows = args.a_rows;
    if (threadIdx.x == 0) s_misc[32] = -1;
    int carry = 0, carry_max = kMinInt;
    for (int base = 0; base < num_e; base += THREADS) {
      const int e = base + (int)threadIdx.x;
      // Running max of the offsets: warp scan, then across warps and earlier rounds.
      int pm = e < num_e ? offsets[e] : kMinInt;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int v = __shfl_up_sync(0xffffffffu, pm, d);
        if (lane >= d) pm = pm > v ? pm : v;
      }
      if (lane == 31) s_misc[40 + warp] = pm;
      Sync::sync();
      int wmax = carry_max, all_max = carry_max;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const int v = s_misc[40 + w];
        wmax = w < warp && v > wmax ? v : wmax;
        all_max = v > all_max ? v : all_max;
      }
      const int incl = pm > wmax ? pm : wmax;
      const int prev = __shfl_up_sync(0xffffffffu, incl, 1);
      const int excl = lane == 0 ? wmax : prev;
      const int end = incl < 0 ? 0 : (incl < rows ? incl : rows);
      const int beg = excl < 0 ? 0 : (excl < rows ? excl : rows);
      const int nt = e < num_e && end > beg ? (end - beg + BLOCK_M - 1) / BLOCK_M : 0;
      int total;
      const int first = w4a16_scan_tiles<THREADS, Sync>(nt, carry, s_misc, total);
      if (nt > 0 && tile >= first && tile < first + nt) {
        s_misc[32] = e;
        s_misc[33] = beg + (tile - first) * BLOCK_M;
        s_misc[34] = end;
      }
      carry = total;
      carry_max = all_max;
      Sync::sync();  // s_misc[0..kWarps), [40..) are rewritten next round; publishes s_misc[32..34]
      if (carry > tile) break;
    }
    Sync::sync();  // also orders thread 0's s_misc[32] = -1 when the loop did not run
    expert = s_misc[32];
    if (expert < 0) return false;
    const int r0 = s_misc[33], r_end = s_misc[34];
    if (threadIdx.x < BLOCK_M) {
      const int r = r0 + (int)threadIdx.x;
      s_src[threadIdx.x] = r < r_end ? r : -1;
      s_dst[threadIdx.x] = r < r_end ? r : -1;
    }
    Sync::sync();
    return true;
  }
};

template <>
struct W4A16Tiles<kW4A16Indexed> {
  // vLLM moe_align_block_size: one expert id per block_size sorted ids; block_size is a
  // multiple of BLOCK_M, so a tile never straddles two vLLM blocks.
  template <int BLOCK_M, int THREADS, class Sync = W4A16CtaSync, bool COMPACT = false>
  __device__ __forceinline__ static bool resolve(const W4A16Args& args, int tile, int* s_src, int* s_dst,
                                                 int*, int& expert) {
    // The three routing loads are issued together and judged after, so the tile waits one memory
    // latency before its weights' first stage instead of three in a row. Every index is inside
    // its buffer whatever num_tokens_padded says: the grid has ceil(capacity / BLOCK_M) tiles,
    // so p0 < capacity, and expert_ids holds ceil(capacity / block_size) ids (chord.h's
    // contract; a shorter buffer is read past its end). Values past the valid prefix (unwritten,
    // perhaps) are read but never used.
    const int p0 = tile * BLOCK_M;
    const int p = p0 + (int)threadIdx.x;
    const int ntp = static_cast<int>(ptx::ldg_nc_b32(args.num_tokens_padded));
    const int block_expert =
        static_cast<int>(ptx::ldg_nc_b32(static_cast<const int*>(args.expert_ids) + p0 / args.block_size));
    int route = -1;
    if (threadIdx.x < BLOCK_M && p < args.capacity) {
      route = static_cast<int>(ptx::ldg_nc_b32(static_cast<const int*>(args.sorted_ids) + p));
    }
    const int valid_len = ntp < args.capacity ? ntp : args.capacity;
    expert = block_expert;
    // One test of both loads: with two tests in a row the compiler issues the expert id's load
    // after the first (and the route ids' after the second).
    if ((p0 >= valid_len) | (expert < 0) | (expert >= args.num_experts)) return false;
    const int num_routes = args.a_rows * args.top_k;
    int valid = 0;
    if (threadIdx.x < BLOCK_M) {
      const int id = p < valid_len ? route : -1;
      valid = id >= 0 && id < num_routes;
      s_src[threadIdx.x] = valid ? id / args.top_k : -1;
      s_dst[threadIdx.x] = valid ? id : -1;
    }
    return Sync::sync_or(valid) != 0;  // a block of sentinels only: nothing to do
  }
};

}  // namespace chord
