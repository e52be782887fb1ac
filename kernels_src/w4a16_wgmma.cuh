// W4A16 grouped MoE GEMM, Hopper WGMMA prefill path (sm_90a only):
// out[row][n] = sum_k A[row][k] * W[e][n][k], W = bf16((code - 8) * scale), fp32 accumulation,
// bf16 output. Same arguments, modes, tile schedulers and packed layout v1 as the mma.sync
// path of w4a16_gemm.cuh; only the inner product engine differs. Like that path, WEIGHT
// selects NF4 instead (W = T(table[code] * absmax), one FP32 absmax per 64 k, T = BF16 or FP16
// for activations, weights and output; same word order and per-stage scale bytes). The NF4
// decode reads table pairs from a 16 KiB shared-memory pair table (16 replicas: the 32 KiB
// conflict-free table of the mma.sync path would cost the 4-stage tile its second CTA per SM)
// and scales them in T arithmetic (T(table) * T(absmax), one rounding): 6% faster than one warp
// shuffle per code with FP32 products, which was bit-identical to bitsandbytes.
//
// Orientation: the dequantized weight is the wgmma "A" operand, fed from registers (M = 64
// weight rows per warpgroup: warp w of the warpgroup owns rows 16w..16w+15, whose register
// fragment is exactly the mma.m16n8k16 A fragment a packed word decodes to), and the tokens
// are the shared-memory "B" operand (wgmma N = BLOCK_M tokens, K-major, 128-byte swizzle).
// A CTA owns BLOCK_N weight rows x BLOCK_M routed rows: WARPGROUPS consumer warpgroups, each
// holding BLOCK_N / (64 * WARPGROUPS) m64 tiles of fp32 accumulators.
//
// Pipeline: every thread issues cp.async for the gathered activation rows (the row gather of
// the masked / offsets / indexed modes is why this is not TMA); each warp copies the packed
// weight chunks and scales it decodes itself. One 64-wide k block per stage. Per k block a
// thread waits for its own copies, decodes its 4 weight words per m64 tile into 16 bf16x2
// registers (needing only a warp barrier, so this runs before the CTA barrier), then the CTA
// barrier publishes the activation rows, 4 wgmma (k16 each) per tile are issued and
// (INFLIGHT = 1) left in flight while the next block is decoded (wgmma.wait_group 1). The copy
// prefetch distance is STAGES - 2: the stage being refilled is the one whose wgmma group every
// warpgroup has retired before the barrier.
//
// ptxas serializes every wgmma of the kernel (C7513: a wait after each one) if any control
// path defines a register operand of an in-flight wgmma with another instruction, including
// paths that never run and register fences on the accumulators; the main loop is written so
// that none exists (see k_block and the pair loop). Build with -Xptxas -v: C7513 must not
// appear.
#pragma once

#include "ptx.cuh"
#include "w4a16_args.cuh"
#include "w4a16_decode.cuh"
#include "w4a16_gemm.cuh"
#include "w4a16_wgmma_args.cuh"

namespace chord {

// The grid is the mma.sync path's: w4a16_grid(args, BLOCK_M, BLOCK_N) (n block fastest); masked
// calls launch it with expected_m = 0, the buffer-wide grid (one tile per CTA).

// ZP: zero-point weights (32-bit {scale, bias} scale entries); G128: group-128 weights (one
// scale row per stage).
template <int MODE, int BLOCK_M, int BLOCK_N, int WARPGROUPS, int STAGES, bool NF4_TABLE = false, bool ZP = false,
          bool G128 = false>
struct W4A16WgmmaConfig {
  static constexpr int kThreads = w4a16_threads(4, WARPGROUPS);
  static constexpr int kStageBytes = w4a16_wgmma_stage_bytes(BLOCK_M, BLOCK_N, ZP, G128);
  static constexpr int kPipeBytes = w4a16_wgmma_pipe_bytes(BLOCK_M, BLOCK_N, STAGES, ZP, G128);
  static constexpr int kHeaderBytes = (2 * BLOCK_M + 64) * 4;
  static constexpr int kSmemBytes = w4a16_wgmma_smem_bytes(BLOCK_M, BLOCK_N, STAGES, NF4_TABLE, ZP, G128);
  static constexpr int kABytes = BLOCK_M * 128;
  static constexpr int kWBytes = BLOCK_N * 32;
  static constexpr int kTiles = BLOCK_N / (64 * WARPGROUPS);  // m64 tiles per warpgroup
  static constexpr int kAcc = BLOCK_M / 2;                     // fp32 accumulators per m64 tile
  static_assert(w4a16_wgmma_config_error(MODE, BLOCK_M, BLOCK_N, WARPGROUPS, STAGES, NF4_TABLE, ZP, G128) == nullptr,
                "invalid W4A16 WGMMA config (see w4a16_wgmma_config_error)");
  static_assert(kThreads == w4a16_wgmma_threads(WARPGROUPS), "warpgroup = 4 warps");
};

// One k block of m64 tile i of a warp's weight fragments from the stage at `stage` (tile i's
// packed chunk at w_rd + 2048 i, its scales / absmax / {scale, bias} pairs at s_rd + 128 i /
// 256 i / 256 i; BLOCK_N: the stage's weight rows, which place the second INT4 scale group row)
// -> af[k16 step][4].
// INT4: (code - 8) * scale in T (the scale's type: BF16, or FP16 for the FP16 kind); zero points:
// (code - zp) * scale (dequant_word_zp); NF4: a pair-table lookup (nf4_lane: this lane's replica)
// scaled by the absmax in T, from a table of REPLICAS replicas. Group 128: the stage holds one
// scale row, read for both 32-k halves of the block.
template <int BLOCK_N, int WEIGHT, int REPLICAS = 16>
__device__ __forceinline__ void w4a16_wgmma_decode_tile(unsigned int stage, unsigned int w_rd, unsigned int s_rd,
                                                        unsigned int nf4_lane, int i, unsigned int (&af)[4][4],
                                                        unsigned int nf4_table = 0) {
  using namespace w4a16_detail;
  constexpr int kElem = w4a16_element(WEIGHT);
  constexpr bool kG128 = w4a16_is_g128(WEIGHT);
  unsigned int q[4];
  ptx::lds128(stage + w_rd + i * 2048, q[0], q[1], q[2], q[3]);
  if constexpr (w4a16_is_nf4(WEIGHT)) {
    unsigned int a2[2];  // {absmax[g], absmax[g + 8]} as FP32
    ptx::lds64(stage + s_rd + i * 256, a2);
    const unsigned int s_g = nf4_detail::nf4_splat<kElem>(__uint_as_float(a2[0]));
    const unsigned int s_g8 = nf4_detail::nf4_splat<kElem>(__uint_as_float(a2[1]));
#pragma unroll
    for (int j = 0; j < 4; ++j)
      nf4_detail::nf4_scaled_word<kElem, REPLICAS>(q[j], s_g, s_g8, nf4_lane, af[j], nf4_table);
  } else if constexpr (w4a16_has_zero_point(WEIGHT)) {
    (void)nf4_lane;
    unsigned int p0[2], p1[2];  // {pair[g], pair[g + 8]} of the two 32-k groups
    ptx::lds64(stage + s_rd + i * 256, p0);
    if constexpr (kG128) {
      p1[0] = p0[0];
      p1[1] = p0[1];
    } else {
      ptx::lds64(stage + s_rd + i * 256 + BLOCK_N * 4, p1);
    }
    dequant_word_zp<kElem>(q[0], p0[0], p0[1], af[0]);
    dequant_word_zp<kElem>(q[1], p0[0], p0[1], af[1]);
    dequant_word_zp<kElem>(q[2], p1[0], p1[1], af[2]);
    dequant_word_zp<kElem>(q[3], p1[0], p1[1], af[3]);
  } else {
    (void)nf4_lane;
    const unsigned int s0 = ptx::lds32(stage + s_rd + i * 128);
    const unsigned int s1 = kG128 ? s0 : ptx::lds32(stage + s_rd + i * 128 + BLOCK_N * 2);
    const unsigned int s0_lo = ptx::splat_lo(s0), s0_hi = ptx::splat_hi(s0);
    const unsigned int s1_lo = ptx::splat_lo(s1), s1_hi = ptx::splat_hi(s1);
    dequant_word_splat<kElem>(q[0], s0_lo, s0_hi, af[0]);
    dequant_word_splat<kElem>(q[1], s0_lo, s0_hi, af[1]);
    dequant_word_splat<kElem>(q[2], s1_lo, s1_hi, af[2]);
    dequant_word_splat<kElem>(q[3], s1_lo, s1_hi, af[3]);
  }
}

// The same for KTILES m64 tiles -> af[i][k16 step][4].
template <int KTILES, int BLOCK_N, int WEIGHT, int REPLICAS = 16>
__device__ __forceinline__ void w4a16_wgmma_decode(unsigned int stage, unsigned int w_rd, unsigned int s_rd,
                                                   unsigned int nf4_lane, unsigned int (&af)[KTILES][4][4],
                                                   unsigned int nf4_table = 0) {
#pragma unroll
  for (int i = 0; i < KTILES; ++i)
    w4a16_wgmma_decode_tile<BLOCK_N, WEIGHT, REPLICAS>(stage, w_rd, s_rd, nf4_lane, i, af[i], nf4_table);
}

// ---------------------------------------------------------------------------------------
// The kernel body. Launch: grid = w4a16_grid(args, BLOCK_M, BLOCK_N), block = kThreads
// (128 * WARPGROUPS), dynamic smem = kSmemBytes (opt in above 48 KiB). sm_90a only: on other
// architectures the body traps (it still compiles, so one template list serves every arch).
// ---------------------------------------------------------------------------------------
//
// INFLIGHT = 1 keeps one wgmma group in flight while the next k block is decoded; INFLIGHT = 0
// retires every group before the next block (no register-operand overlap; slower).
// WEIGHT (W4A16WeightKind): INT4 group-32 with BF16 or FP16 scales, or NF4 with BF16 or FP16
// activations (the FP16 kinds run the f16 wgmma and write FP16).
template <int MODE, int BLOCK_M, int BLOCK_N, int WARPGROUPS, int STAGES, int INFLIGHT = 1,
          int WEIGHT = kW4A16WeightInt4>
__device__ __forceinline__ void w4a16_wgmma_body(const W4A16Args& args) {
  static_assert(INFLIGHT == 0 || INFLIGHT == 1, "INFLIGHT must be 0 or 1");
  static_assert(w4a16_known_weight(WEIGHT), "unknown W4A16 weight kind");
  using Cfg = W4A16WgmmaConfig<MODE, BLOCK_M, BLOCK_N, WARPGROUPS, STAGES, w4a16_is_nf4(WEIGHT),
                               w4a16_has_zero_point(WEIGHT), w4a16_is_g128(WEIGHT)>;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using namespace w4a16_detail;
  constexpr int kThreads = Cfg::kThreads;
  constexpr int kTiles = Cfg::kTiles;
  constexpr int kAcc = Cfg::kAcc;
  constexpr bool kNF4 = w4a16_is_nf4(WEIGHT);
  constexpr bool kZp = w4a16_has_zero_point(WEIGHT);
  // Group 128: one scale row per k block, that of its 128-k group (k block kb: row kb / 2).
  constexpr bool kG128 = w4a16_is_g128(WEIGHT);
  constexpr int kElem = w4a16_element(WEIGHT);
  constexpr bool kF16 = kElem == kNF4FP16;

  extern __shared__ __align__(1024) unsigned char w4a16_wgmma_smem[];
  const unsigned int raw_base = ptx::smem_addr(w4a16_wgmma_smem);
  unsigned char* pipe = w4a16_wgmma_smem + ((1024u - (raw_base & 1023u)) & 1023u);
  int* s_src = reinterpret_cast<int*>(pipe + Cfg::kPipeBytes);
  int* s_dst = s_src + BLOCK_M;
  int* s_misc = s_dst + BLOCK_M;  // 64 ints
  // NF4: the pair table after the header (16 replicas, kW4A16WgmmaNF4TableBytes).
  const unsigned int nf4_tab = ptx::smem_addr(pipe + Cfg::kPipeBytes + Cfg::kHeaderBytes);

  const int n_blocks = args.n / BLOCK_N;
  const int n_block = (int)(blockIdx.x % (unsigned int)n_blocks);
  const int tile = (int)(blockIdx.x / (unsigned int)n_blocks);

  int expert = -1;
  // One tile per CTA: masked calls take the buffer-wide schedule (a loop over tiles around this
  // body spills or serializes its wgmma at the 128-register cap; the launch sizes its grid so).
  if (!W4A16Tiles<MODE>::template resolve<BLOCK_M, kThreads, W4A16CtaSync, false>(args, tile, s_src, s_dst, s_misc,
                                                                                  expert))
    return;
  const int tid = threadIdx.x;
  if constexpr (kNF4) nf4_detail::nf4_fill_pair_table<kElem, kThreads, 16>(nf4_tab, tid);
  __syncthreads();  // not every scheduler ends on a barrier after its last s_src write; the table

  const int K = args.k, N = args.n;
  const int num_k = K / kW4A16WgmmaBlockK;

  const int wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
  const int g = lane >> 2;
  // Packed-weight chunk (16 rows x 64 k) of this warp's first m64 tile; tile i is nt0 + 4 i.
  const int nt0 = wg * kTiles * 4 + warp;

  // Copy work of one stage, split over the threads with compile-time trip counts. Per-thread
  // sources and shared-memory offsets are computed once here; per k block only a uniform k
  // offset changes and the destinations are fixed offsets from the stage base.
  //  - activations: BLOCK_M rows x 8 chunks of 16 bytes; piece i of a thread is row
  //    tid / 8 + i * (kThreads / 8), chunk tid % 8, stored at chunk (tid % 8) ^ (row % 8)
  //    (128-byte swizzle; row % 8 == (tid / 8) % 8 since kThreads / 8 is a multiple of 8);
  //    invalid rows are zero-filled;
  //  - packed weight: each warp copies the 512-byte chunks it decodes (one 16-byte piece per
  //    lane and m64 tile), so its decode needs only its own copies and a warp barrier;
  //  - scales: likewise each warp copies its own rows nt * 16 .. nt * 16 + 15 of both group
  //    rows: 64 bytes (4 pieces) per tile. NF4: the same 64 bytes are the 16 FP32 absmax of
  //    the tile's rows (one row of [K/64][N] per k block, rows permuted within 16 so that
  //    {absmax[g], absmax[g + 8]} are adjacent).
  // Narrow tiles (BLOCK_M * 8 not a multiple of kThreads) leave the last piece to the first
  // threads only; that branch is uniform per warp (a warp's 32 pieces are 4 whole rows).
  constexpr int kAChunks = BLOCK_M * 8;
  constexpr int kAPieces = (kAChunks + kThreads - 1) / kThreads;
  constexpr bool kAExact = kAChunks % kThreads == 0;
  static_assert((kThreads / 8) % 8 == 0 && kAChunks % 32 == 0, "activation copy split");

  // Activation sources as 32-bit indices of 16-byte chunks from args.a (rows are 16-byte
  // aligned, lda % 8 == 0): one LEA pair per copy from a k-block base that is uniform across
  // the CTA, and half the registers of 64-bit pointers (this loop runs at the 128-register cap
  // of two CTAs per SM). Covers activations up to 64 GiB.
  unsigned int a_chunk[kAPieces];
  unsigned int a_valid = 0;  // bit i: activation row of piece i is valid (else zero fill)
  const int a_row = tid >> 3, a_ch = tid & 7;
#pragma unroll
  for (int i = 0; i < kAPieces; ++i) {
    const int row = a_row + i * (kThreads / 8);
    const int src = row < BLOCK_M ? s_src[row] : -1;
    a_chunk[i] = src >= 0 ? (unsigned int)((unsigned long long)src * (unsigned long long)args.lda / 8ull) + a_ch : 0u;
    a_valid |= (src >= 0 ? 1u : 0u) << i;
  }
  const uint4_w* a_base = static_cast<const uint4_w*>(args.a);
  const unsigned int a_dst = a_row * 128 + ((a_ch ^ (a_row & 7)) << 4);

  const unsigned char* w_src = static_cast<const unsigned char*>(args.w) +
                               (unsigned long long)expert * (unsigned long long)N * (unsigned long long)(K / 2) +
                               ((unsigned long long)n_block * (BLOCK_N / 16) + nt0) * (unsigned long long)num_k * 512ull +
                               lane * 16;
  const unsigned long long w_tile_stride = 4ull * num_k * 512ull;  // tile i + 1 is 4 chunks on

  // Every lane copies a scale piece, lanes l and l + 4 kTiles the same 16 bytes to the same
  // place: cheaper than the branch the compiler emits around a copy by some lanes only.
  // Group 128: the one row; the lanes of the second group row copy the first's pieces again.
  const int s_tile = (lane >> 2) % kTiles, s_grp = kG128 ? 0 : (lane >> 1) & 1, s_half = lane & 1;
  // The scale bytes of one k block are (K / 64) * N * 4 either way: two BF16 group rows or
  // one FP32 absmax row. Zero points: twice that, two rows of 32-bit {scale, bias} pairs, a
  // tile's 16 rows 64 bytes per group row (4 pieces; lane l: tile (l / 8) % kTiles, group
  // (l / 4) % 2, piece l % 4; lanes l and l + 8 kTiles copy the same piece).
  const int z_tile = (lane >> 3) % kTiles, z_grp = kG128 ? 0 : (lane >> 2) & 1, z_piece = lane & 3;
  constexpr int kScaleGroup = kG128 ? 128 : 32;  // INT4: k per scale row
  const unsigned char* s_src_ptr =
      kZp ? static_cast<const unsigned char*>(args.scales) +
                (unsigned long long)expert * (unsigned long long)(K / kScaleGroup) * N * 4ull +
                (unsigned long long)n_block * BLOCK_N * 4ull + (unsigned long long)z_grp * N * 4ull +
                (nt0 + 4 * z_tile) * 64 + z_piece * 16
          : static_cast<const unsigned char*>(args.scales) +
                (unsigned long long)expert * (unsigned long long)(K / kScaleGroup) * N * 2ull +
                (kNF4 ? (unsigned long long)n_block * BLOCK_N * 4ull + (nt0 + 4 * s_tile) * 64 + (s_grp * 2 + s_half) * 16
                      : (unsigned long long)n_block * BLOCK_N * 2ull + (unsigned long long)s_grp * N * 2ull +
                            (nt0 + 4 * s_tile) * 32 + s_half * 16);
  unsigned int s_dst_off = kZp ? Cfg::kABytes + Cfg::kWBytes + z_grp * BLOCK_N * 4 + (nt0 + 4 * z_tile) * 64 +
                                     z_piece * 16
                               : Cfg::kABytes + Cfg::kWBytes +
                                     (kNF4 ? (nt0 + 4 * s_tile) * 64 + (s_grp * 2 + s_half) * 16
                                           : s_grp * BLOCK_N * 2 + (nt0 + 4 * s_tile) * 32 + s_half * 16);

  const unsigned int pipe_base = ptx::smem_addr(pipe);
  const unsigned int pipe_end = pipe_base + STAGES * Cfg::kStageBytes;

  // This thread's packed-weight piece and scale pair of m64 tile i, as offsets from the stage
  // base (the weight piece is also where this thread copies it).
  unsigned int w_rd = Cfg::kABytes + nt0 * 512 + lane * 16;
  // INT4: {s[g], s[g + 8]} of group 0 (group 1 is BLOCK_N * 2 bytes on), tile i at + 128 i;
  // NF4: {absmax[g], absmax[g + 8]}, tile i at + 256 i; zero points: {pair[g], pair[g + 8]} of
  // group 0 (group 1 BLOCK_N * 4 bytes on), tile i at + 256 i.
  unsigned int s_rd = Cfg::kABytes + Cfg::kWBytes + (nt0 * 16 + 2 * g) * (kNF4 || kZp ? 4 : 2);
  // NF4: this lane's replica of the pair table.
  unsigned int nf4_lane = kNF4 ? nf4_detail::nf4_pair_lane_base<16>(nf4_tab, lane) : 0u;

  // Opaque to the compiler: it would otherwise recompute these from threadIdx inside the loop
  // (rematerialization under the 128-register cap) instead of keeping them in registers.
  ptx::opaque(w_rd);
  ptx::opaque(s_rd);
  ptx::opaque(s_dst_off);
  if constexpr (kNF4) ptx::opaque(nf4_lane);

  // Copies the k block at the current source offsets into the stage at `st`, then steps the
  // offsets to the next block, except from the last block: past the end the last block is
  // copied again, into a stage no later block reads, so the loop needs no branch around the
  // copies.
  const uint4_w* a_k = a_base;
  unsigned int w_koff = 0, s_koff = 0;
  int load_kb = 0;
  auto load_stage = [&](unsigned int st) {
#pragma unroll
    for (int i = 0; i < kAPieces; ++i) {
      if (kAExact || i + 1 < kAPieces || tid + i * kThreads < kAChunks)
        ptx::cp_async_16(st + a_dst + i * kThreads * 16, a_k + a_chunk[i], (a_valid >> i) & 1u ? 16 : 0);
    }
#pragma unroll
    for (int i = 0; i < kTiles; ++i)
      ptx::cp_async_16(st + w_rd + i * 2048, w_src + i * w_tile_stride + w_koff, 16);
    ptx::cp_async_16(st + s_dst_off, s_src_ptr + s_koff, 16);
    const bool step = ++load_kb < num_k;
    a_k += step ? kW4A16WgmmaBlockK / 8 : 0;
    w_koff += step ? 512u : 0u;
    // Group 128: the next block's row is the next row only when it starts a 128-k group.
    if constexpr (kG128) {
      s_koff += step && (load_kb & 1) == 0 ? (kZp ? 4u : 2u) * (unsigned int)N : 0u;
    } else {
      s_koff += step ? (kZp ? 8u : 4u) * (unsigned int)N : 0u;
    }
  };

  float acc[kTiles][kAcc];
#pragma unroll
  for (int i = 0; i < kTiles; ++i)
#pragma unroll
    for (int r = 0; r < kAcc; ++r) acc[i][r] = 0.f;

  unsigned int load_st = pipe_base;
#pragma unroll
  for (int s = 0; s < STAGES - 2; ++s) {
    load_stage(load_st);
    ptx::cp_async_commit();
    load_st += Cfg::kStageBytes;
  }

  // One k block: wait for this thread's copies of the block, decode this warp's weight
  // fragments (they depend only on the warp's own copies), then the CTA barrier that publishes
  // everyone's activation rows (and retires both warpgroups' group kb - 2, whose stage is
  // refilled below), wgmma, refill.
  //
  // `af` receives the decoded weight fragments this block's wgmma group reads from registers;
  // PTX forbids writing them until that group has retired, so consecutive blocks alternate
  // between two fragment arrays (the group of block kb is retired by the wait_group 1 of block
  // kb + 1, before block kb + 2 rewrites its array). The accumulators are not touched between
  // the wgmma of consecutive blocks (no register fence there): any non-wgmma definition of a
  // wgmma input while a group is in flight makes ptxas serialize every wgmma of the kernel
  // (C7513).
  unsigned int read_st = pipe_base;
  auto k_block = [&](unsigned int(&af)[kTiles][4][4]) {
    ptx::cp_async_wait<STAGES - 3>();
    __syncwarp();  // scales were copied by other lanes of this warp
    w4a16_wgmma_decode<kTiles, BLOCK_N, WEIGHT>(read_st, w_rd, s_rd, nf4_lane, af);
    ptx::fence_proxy_async_shared();
    __syncthreads();
    ptx::wgmma_fence();
    const unsigned long long desc0 = ptx::smem_desc_sw128(read_st);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      // +32 bytes per k16 = +2 in the start-address field (bits 0-13; no carry out of it).
      const unsigned long long desc = desc0 + 2 * j;
#pragma unroll
      for (int i = 0; i < kTiles; ++i) ptx::Wgmma<BLOCK_M>::template mma<kF16>(acc[i], af[i][j], desc);
    }
    ptx::wgmma_commit();
    ptx::wgmma_wait<INFLIGHT>();
    load_stage(load_st);
    ptx::cp_async_commit();
    load_st = load_st + Cfg::kStageBytes == pipe_end ? pipe_base : load_st + Cfg::kStageBytes;
    read_st = read_st + Cfg::kStageBytes == pipe_end ? pipe_base : read_st + Cfg::kStageBytes;
  };
  // Every control-flow path must respect the fragment rule above, including paths ptxas cannot
  // rule out: with a conditional second block inside the loop, "skip it and loop back" would
  // rewrite af_even while its group is in flight, and ptxas serializes. Hence whole pairs in
  // the loop and the odd block after it.
  unsigned int af_even[kTiles][4][4], af_odd[kTiles][4][4];
  int kb = 0;
  for (; kb + 1 < num_k; kb += 2) {
    k_block(af_even);
    k_block(af_odd);
  }
  if (kb < num_k) k_block(af_even);
  ptx::wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < kTiles; ++i)
#pragma unroll
    for (int r = 0; r < kAcc; ++r) ptx::reg_fence(acc[i][r]);

  // Epilogue: accumulators (rows = weight rows, columns = tokens) -> smem [BLOCK_M][BLOCK_N + 8]
  // T (bf16, fp16 for the FP16 kinds) -> 16-byte segments of the valid output rows.
  ptx::cp_async_wait<0>();
  __syncthreads();
  constexpr int kLdc = BLOCK_N + 8;
  unsigned short* s_out = reinterpret_cast<unsigned short*>(pipe);
  // Token chunk c (8 tokens) of m64 tile i is two 8x8 fragments per warp: weight rows g and
  // g + 8 (registers v01 / v23, tokens 2t, 2t + 1). stmatrix.trans stores two chunks at once
  // as 16-byte rows [token][8 weight rows]: matrix j = lane / 8 is chunk c + j / 2, rows
  // + 8 (j % 2); lane % 8 is its token. Row stride (BLOCK_N + 8) x 2 bytes: conflict-free.
  const unsigned int out_lane = ptx::smem_addr(s_out) +
                                (((lane >> 4) * 8 + (lane & 7)) * kLdc + warp * 16 + ((lane >> 3) & 1) * 8) * 2;
#pragma unroll
  for (int i = 0; i < kTiles; ++i) {
#pragma unroll
    for (int c = 0; c < BLOCK_M / 8; c += 2) {
      unsigned int v[4];  // chunk c rows g / g + 8, chunk c + 1 rows g / g + 8
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        const float* a = &acc[i][4 * (c + h / 2) + 2 * (h % 2)];
        v[h] = ptx::pack_half2<kElem>(a[0], a[1]);
      }
      ptx::stmatrix_x4_trans(out_lane + (c * 8 * kLdc + (wg * kTiles + i) * 64) * 2, v[0], v[1], v[2], v[3]);
    }
  }
  __syncthreads();
  unsigned short* out = static_cast<unsigned short*>(args.out);
  constexpr int kOutChunksPerRow = BLOCK_N / 8;
  static_assert(BLOCK_M * kOutChunksPerRow % kThreads == 0, "epilogue copy split");
#pragma unroll
  for (int i = 0; i < BLOCK_M * kOutChunksPerRow / kThreads; ++i) {
    const int c = tid + i * kThreads;
    const int row = c / kOutChunksPerRow, ch = c % kOutChunksPerRow;
    const int dst = s_dst[row];
    if (dst >= 0) {
      const uint4_w v = *reinterpret_cast<const uint4_w*>(s_out + row * kLdc + ch * 8);
      *reinterpret_cast<uint4_w*>(out + (long long)dst * args.ldc + (long long)n_block * BLOCK_N + ch * 8) = v;
    }
  }
#else
  (void)args;
  ptx::trap();
#endif
}

}  // namespace chord
