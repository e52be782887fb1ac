// W4A16 grouped MoE GEMM, mma.sync path (sm_80+): out[row][n] = sum_k A[row][k] * W[e][n][k],
// W = T((code - 8) * scale), fp32 accumulation, T output (T = BF16, or FP16 for the INT4 FP16
// weight kind; the zero-point kinds: T((code - zp) * scale); NF4: WEIGHT below).
//
// Orientation (the decode target): the dequantized weight is the MMA "A" operand (16 n-rows
// x 16 k per fragment, straight from the packed words) and the tokens are the narrow "B"
// operand (n8 of m16n8k16). A CTA owns BLOCK_N weight rows x BLOCK_M routed rows; warps split
// BLOCK_N in WARPS_N and BLOCK_M in WARPS_M. Weights, scales and the gathered activation
// rows stream through a STAGES-deep cp.async pipeline; the output tile is staged in shared
// memory and written as 16-byte row segments, only for valid rows.
//
// One kernel body serves every mode; the mode only changes the tile scheduler
// (W4A16Tiles<MODE>::resolve in w4a16_schedule.cuh), which maps blockIdx to (expert, source
// row, destination row) from the int32 routing tensors on the device.
#pragma once

#include "ptx.cuh"
#include "w4a16_args.cuh"
#include "w4a16_decode.cuh"
#include "w4a16_layout.cuh"
#include "w4a16_schedule.cuh"

namespace chord {

namespace w4a16_detail {

// A 16-byte vector for the epilogues' shared -> global row segment copies.
struct alignas(16) uint4_w {
  unsigned int x, y, z, w;
};

// Every accumulator register (n tile i, token tile m, register r) of a thread with the offset of
// its value in a partial tile laid out [register][thread] (conflict-free and coalesced: the
// split-K partial sums).
template <int kNT, int kMT, int kThreads, class F>
__device__ __forceinline__ void for_each_partial(F f) {
#pragma unroll
  for (int i = 0; i < kNT; ++i)
#pragma unroll
    for (int m = 0; m < kMT; ++m)
#pragma unroll
      for (int r = 0; r < 4; ++r) f(i, m, r, ((i * kMT + m) * 4 + r) * kThreads);
}

// A compile-time int carried by a value (to instantiate a generic lambda per constant).
template <int V>
struct IntTag {
  static constexpr int value = V;
};

}  // namespace w4a16_detail

// ---------------------------------------------------------------------------------------
// Compile-time configuration.
// ---------------------------------------------------------------------------------------
// ZP: zero-point weights, whose scale entries are 32-bit {scale, bias} pairs; G128: group-128
// weights, one scale row per 128 k (at least one per stage).
template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int STAGES, int WARPS_M, int WARPS_N, bool ZP = false,
          bool G128 = false>
struct W4A16Config {
  static constexpr int kThreads = w4a16_threads(WARPS_M, WARPS_N);
  static constexpr int kSmemBytes = w4a16_smem_bytes(BLOCK_M, BLOCK_N, BLOCK_K, STAGES, false, ZP, G128);
  static constexpr int kHeaderBytes = w4a16_smem_header_bytes(BLOCK_M);
  static constexpr int kStageBytes = w4a16_smem_stage_bytes(BLOCK_M, BLOCK_N, BLOCK_K, ZP, G128);
  static constexpr int kABytes = BLOCK_M * BLOCK_K * 2;     // activations, swizzled rows
  static constexpr int kWBytes = BLOCK_N * BLOCK_K / 2;     // packed weight chunks
  static constexpr int kSBytes = w4a16_scale_rows(BLOCK_K, G128) * BLOCK_N * (ZP ? 4 : 2);  // packed scales
  static constexpr int kWM = BLOCK_M / WARPS_M;             // tokens per warp
  static constexpr int kWN = BLOCK_N / WARPS_N;             // weight rows per warp
  static constexpr int kNT = kWN / 16;                      // 16-row weight tiles per warp
  static constexpr int kMT = kWM / 8;                       // 8-token MMA column tiles per warp
  static constexpr int kKC = BLOCK_K / 64;                  // 64-k chunks per stage
  static_assert(w4a16_config_error(BLOCK_M, BLOCK_N, BLOCK_K, STAGES, WARPS_M, WARPS_N) == nullptr,
                "invalid W4A16 config (see w4a16_config_error)");
};

// ---------------------------------------------------------------------------------------
// One output tile: tile `tile` of the mode's scheduler, weight rows n_block * BLOCK_N.., k blocks
// [kb0, kb0 + num_k). `split` is the CTA's cluster rank with SPLIT_K > 1. Returns the tile the
// CTA's loop over masked tiles ends at (w4a16_tiles_done), or 0 when the scheduler gives the
// tile no rows; the same for every CTA of a cluster.
// ---------------------------------------------------------------------------------------
template <int MODE, int BLOCK_M, int BLOCK_N, int BLOCK_K, int STAGES, int WARPS_M, int WARPS_N, int PATH, int WEIGHT,
          int SPLIT_K, int GROUP_SUMS, int N_RUN = 1, int MASKED_LOOP = 0>
__device__ __forceinline__ int w4a16_gemm_tile(const W4A16Args& args, int tile, int n_block, int split, int kb0,
                                                int num_k, int runs = 1) {
  // SPLIT_K > 1 (sm_90+, launched as clusters of SPLIT_K CTAs along x): the SPLIT_K CTAs of a
  // cluster share one output tile and each reduces its slice of K; rank 0 adds the others'
  // fp32 partials from their shared memory (DSMEM) in rank order, so the result does not
  // depend on timing, and writes the tile. For decode grids too small to fill the GPU
  // (few active experts): more CTAs keep more weight bytes in flight.
  // WEIGHT (W4A16WeightKind): INT4 group-32 or group-128 with BF16 or FP16 scales (activations
  // and output of the scale's type; with or without zero points), or NF4 with one FP32 absmax per 64 k (docs/packed_layout.md, "NF4";
  // same word order, so every address below is shared) and BF16 or FP16 activations. The scale
  // tile of a stage has the same bytes either way; NF4 adds the decode's pair table after the
  // pipeline (w4a16_decode.cuh).
  // GROUP_SUMS (W4A16GroupSums): the form of the INT4 group sums (int4_group_mma,
  // int4_group_mma_zp) on the tiles that run them (kScaleInAcc, kNarrowPath); 0, the default,
  // everywhere else (CHORD_W4A16_GROUP_SUMS).
  static_assert(w4a16_known_weight(WEIGHT), "unknown W4A16 weight kind");
  // The tile schedulers give each of the BLOCK_M rows one thread (s_src / s_dst).
  static_assert(w4a16_threads(WARPS_M, WARPS_N) >= BLOCK_M, "W4A16 needs 32 * WARPS_M * WARPS_N >= BLOCK_M");
  constexpr bool kNF4 = w4a16_is_nf4(WEIGHT);
  // Zero points: each scale entry is the 32-bit pair {scale, -(M + zp)} (dequant_word_zp).
  constexpr bool kZp = w4a16_has_zero_point(WEIGHT);
  // Group 128: one scale entry per 128 k, applied to each of its four 32-k groups as a group-32
  // weight's own (the same decode and group sums, the same exactness); a 64-k chunk reads row
  // (its k) / 128, so a stage holds w4a16_scale_rows(BLOCK_K, true) rows.
  constexpr bool kG128 = w4a16_is_g128(WEIGHT);
  constexpr int kElem = w4a16_element(WEIGHT);
  constexpr int kGroup = kNF4 ? kNF4BlockSize : kG128 ? kW4A16Group128 : kW4A16GroupSize;  // k per scale
  constexpr int kSB = kNF4 || kZp ? 4 : 2;                         // bytes per scale (entry)
  constexpr int kSRows = kG128 ? w4a16_scale_rows(BLOCK_K, true) : BLOCK_K / kGroup;  // scale rows per stage
  static_assert(PATH == kW4A16PathStaged || PATH == kW4A16PathDirect, "unknown W4A16 main-loop path");
  using namespace w4a16_detail;
  using Cfg = W4A16Config<BLOCK_M, BLOCK_N, BLOCK_K, STAGES, WARPS_M, WARPS_N, kZp, kG128>;
  constexpr int kThreads = Cfg::kThreads;
  constexpr int kNT = Cfg::kNT, kMT = Cfg::kMT, kKC = Cfg::kKC;
  // INT4 tiles of 8 tokens per warp apply the scale to fp32 group sums (int4_group_mma); wider
  // token tiles amortize the per-weight decode over more MMAs and keep the bf16-dequantized
  // weights (dequant_word), bit-identical to the reference (measured on the H200: at 16 tokens
  // per warp the group sums were slower, 253.7 vs 241.6 us on masked EP8 12 tok/expert gate_up).
  // BF16 and FP16 alike (the offset form makes code - 8 exactly in either).
  constexpr bool kInt4Sums = !kNF4;
  constexpr bool kScaleInAcc = kInt4Sums && kMT == 1;
  // INT4 staged tiles of 16 tokens (one warp along M) whose tile holds <= 8 rows take the group
  // sums on the first token tile only: the second one is all zero-filled rows (ragged decode:
  // an expert below the tile's 8-row midpoint). CTA-uniform branch, decided once per tile.
  constexpr bool kNarrowPath = kInt4Sums && kMT == 2 && WARPS_M == 1 && PATH == kW4A16PathStaged;
  // NF4 likewise: 8 tokens per warp MMA unscaled table pairs into per-block fp32 sums
  // (nf4_block_mma); wider token tiles scale each table pair (nf4_scaled_word).
  constexpr bool kNF4Sum = kNF4 && kMT == 1;
  // Group 128 with whole 128-k groups per k block: the group sums chain a scale entry's four
  // 32-k groups and scale once (int4_group128_mma); the correction form keeps its per-group seeds.
  constexpr bool kLongSums = kG128 && GROUP_SUMS == kW4A16GroupSumsOffset && BLOCK_K >= kW4A16Group128;
  static_assert(w4a16_config_error(BLOCK_M, BLOCK_N, BLOCK_K, STAGES, WARPS_M, WARPS_N, kNF4, SPLIT_K, kZp, kG128) ==
                    nullptr,
                "invalid W4A16 config with NF4 weights, zero points, group 128 or split-K (see w4a16_config_error)");
  static_assert(w4a16_group_sums_error(GROUP_SUMS, WEIGHT, BLOCK_M, WARPS_M, STAGES) == nullptr,
                "a group-sums form other than 0 needs the INT4 BF16 group sums (see w4a16_group_sums_error)");
  static_assert(GROUP_SUMS == kW4A16GroupSumsOffset || kScaleInAcc || kNarrowPath,
                "GROUP_SUMS: no group sums to vary");
  // N_RUN > 1: the CTA reduces `runs` (<= N_RUN) consecutive n blocks of one tile, n_block
  // onwards, as one sequence of k blocks through the copy ring, so the ring stays full across
  // n blocks and the routing, the activation rows' addresses and the pipeline fill are paid
  // once per run instead of once per n block. Each n block's outputs are stored from the
  // registers as its last k block finishes (the ring still holds the next block's stages).
  static_assert(w4a16_n_run_error(N_RUN, PATH, SPLIT_K, kNF4) == nullptr,
                "invalid n-block run (see w4a16_n_run_error)");

  extern __shared__ __align__(128) unsigned char smem[];
  int* s_src = reinterpret_cast<int*>(smem);
  int* s_dst = s_src + BLOCK_M;
  int* s_misc = s_dst + BLOCK_M;  // 64 ints
  unsigned char* pipe = smem + Cfg::kHeaderBytes;

  // Every CTA of a cluster resolves the same tile, so all of them return here or none does.
  int expert = -1;
  if (!W4A16Tiles<MODE>::template resolve<BLOCK_M, kThreads, W4A16CtaSync, MASKED_LOOP != 0>(args, tile, s_src, s_dst,
                                                                                            s_misc, expert))
    return 0;

  bool narrow = false;  // kNarrowPath: rows 8..15 of the tile have no source
  if constexpr (kNarrowPath) {
    narrow = true;
#pragma unroll
    for (int r = 8; r < 16; ++r) narrow = narrow && s_src[r] < 0;
  }

  const int K = args.k, N = args.n;
  // The pointers below start at k block kb0.
  const int tid = threadIdx.x;

  const unsigned short* a_ptr = static_cast<const unsigned short*>(args.a);
  const unsigned short* a_k0 = a_ptr + (long long)kb0 * BLOCK_K;
  const unsigned char* w_ptr = static_cast<const unsigned char*>(args.w) +
                               (unsigned long long)expert * (unsigned long long)N * (unsigned long long)(K / 2) +
                               (unsigned long long)n_block * (BLOCK_N / 16) * (unsigned long long)(K / 64) * 512ull +
                               (unsigned long long)kb0 * Cfg::kKC * 512ull;
  const unsigned char* s_ptr = static_cast<const unsigned char*>(args.scales) +
                               (unsigned long long)expert * (unsigned long long)(K / kGroup) * N * kSB +
                               (unsigned long long)n_block * BLOCK_N * kSB +
                               (kG128 ? (unsigned long long)(kb0 * BLOCK_K / kW4A16Group128) * N * kSB
                                      : (unsigned long long)kb0 * (BLOCK_K / kGroup) * N * kSB);
  const unsigned int pipe_base = ptx::smem_addr(pipe);

  // Every copy of a k block is a fixed set of 16-byte chunks; a thread owns chunks tid,
  // tid + kThreads, ... of each tile. Their source pointers and shared-memory offsets are
  // computed once here and only advanced by a per-k-block constant in the loop, and the trip
  // counts are compile-time, so the copy issue is straight-line code.
  //
  // Activations: BLOCK_M rows x BLOCK_K, chunk index XOR (row & 7) so the ldmatrix reads of 8
  // rows at one k offset hit 8 different bank groups. Rows without a source are zero-filled.
  constexpr int kAChunksPerRow = BLOCK_K / 8;
  constexpr int kAChunks = BLOCK_M * kAChunksPerRow;
  constexpr int kAIters = (kAChunks + kThreads - 1) / kThreads;
  // When a thread's chunks are whole multiples of 8 rows apart, chunk i lands at a fixed
  // offset from chunk 0 (same column, same swizzle): one shared offset, fewer registers.
  constexpr bool kARowStride = kThreads % kAChunksPerRow == 0 && (kThreads / kAChunksPerRow) % 8 == 0;
  const unsigned short* a_src[kAIters];
  unsigned int a_dst[kARowStride ? 1 : kAIters];
  unsigned int a_valid = 0;  // bit i: chunk i has a source row (else zero-filled)
#pragma unroll
  for (int i = 0; i < kAIters; ++i) {
    const int c = tid + i * kThreads;
    const int row = c / kAChunksPerRow, ch = c % kAChunksPerRow;
    const int src = c < kAChunks ? s_src[row] : -1;
    a_src[i] = src >= 0 ? a_k0 + (long long)src * args.lda + ch * 8 : a_ptr;
    a_valid |= src >= 0 ? 1u << i : 0u;
    if (!kARowStride || i == 0) a_dst[i] = row * (BLOCK_K * 2) + ((ch ^ (row & 7)) * 16);
  }
  auto load_act = [&](int kb, int slot, int stage_bytes) {
    const unsigned int st = pipe_base + slot * stage_bytes;
#pragma unroll
    for (int i = 0; i < kAIters; ++i) {
      const unsigned int dst =
          kARowStride ? a_dst[0] + i * (kThreads / kAChunksPerRow) * (BLOCK_K * 2) : a_dst[kARowStride ? 0 : i];
      if (kAChunks % kThreads == 0 || tid + i * kThreads < kAChunks)
        ptx::cp_async_16(st + dst, a_src[i] + kb * BLOCK_K, (a_valid >> i) & 1u ? 16 : 0);
    }
  };

  // Weights: (BLOCK_N/16) x (BLOCK_K/64) chunks of 512 contiguous bytes, copied as is; chunk
  // c = (n tile, 64-k chunk, lane16). Scales: BLOCK_K/kGroup group rows of BLOCK_N scales.
  constexpr int kWChunks = BLOCK_N * BLOCK_K / 32;
  constexpr int kWIters = (kWChunks + kThreads - 1) / kThreads;
  constexpr int kSChunksPerRow = BLOCK_N * kSB / 16;
  constexpr int kSChunks = kSRows * kSChunksPerRow;
  constexpr int kSIters = (kSChunks + kThreads - 1) / kThreads;
  const unsigned char* w_src[PATH == kW4A16PathStaged ? kWIters : 1];
  const unsigned char* sc_src[PATH == kW4A16PathStaged ? kSIters : 1];
  if constexpr (PATH == kW4A16PathStaged) {
#pragma unroll
    for (int i = 0; i < kWIters; ++i) {
      const int c = tid + i * kThreads;
      const int kc = (c >> 5) % kKC, nt = (c >> 5) / kKC;
      w_src[i] = w_ptr + ((unsigned long long)nt * (K / 64) + kc) * 512ull + (c & 31) * 16;
    }
#pragma unroll
    for (int i = 0; i < kSIters; ++i) {
      const int c = tid + i * kThreads;
      const int grp = c / kSChunksPerRow, ch = c % kSChunksPerRow;
      sc_src[i] = s_ptr + (unsigned long long)grp * N * kSB + ch * 16;
    }
  }
  const unsigned long long w_kb_step = (unsigned long long)kKC * 512ull;
  const unsigned long long s_kb_step = (unsigned long long)(BLOCK_K / kGroup) * N * kSB;
  // The scale rows of k block kb from s_ptr. Group 128 with 64-k blocks: block kb0 + kb reads
  // row (kb0 + kb) / 2, so two consecutive blocks share one.
  auto s_kb_off = [&](int kb) -> unsigned long long {
    if constexpr (kG128 && BLOCK_K < kW4A16Group128) {
      return (unsigned long long)(((kb0 + kb) >> 1) - (kb0 >> 1)) * N * kSB;
    } else {
      return kb * s_kb_step;
    }
  };

  // The next n block of a run: BLOCK_N / 16 n tiles of K / 64 chunks on, BLOCK_N scales on.
  const unsigned long long w_nb_step = (unsigned long long)(BLOCK_N / 16) * (unsigned long long)(K / 64) * 512ull;
  constexpr unsigned long long kSNbStep = (unsigned long long)BLOCK_N * kSB;

  // Issue the copies of k-block kb of the run's n block nb into stage slot `slot` (staged path:
  // all three tiles; the activations depend on kb only).
  auto load_stage = [&](int kb, int slot, int nb = 0) {
    const unsigned int st = pipe_base + slot * Cfg::kStageBytes;
    load_act(kb, slot, Cfg::kStageBytes);
    const unsigned int sw = st + Cfg::kABytes;
    const unsigned long long w_off = N_RUN > 1 ? nb * w_nb_step + kb * w_kb_step : kb * w_kb_step;
#pragma unroll
    for (int i = 0; i < kWIters; ++i) {
      if (kWChunks % kThreads == 0 || tid + i * kThreads < kWChunks)
        ptx::cp_async_16(sw + (tid + i * kThreads) * 16, w_src[i] + w_off, 16);
    }
    const unsigned int ss = sw + Cfg::kWBytes;
    const unsigned long long s_off = N_RUN > 1 ? nb * kSNbStep + s_kb_off(kb) : s_kb_off(kb);
#pragma unroll
    for (int i = 0; i < kSIters; ++i) {
      if (kSChunks % kThreads == 0 || tid + i * kThreads < kSChunks)
        ptx::cp_async_16(ss + (tid + i * kThreads) * 16, sc_src[i] + s_off, 16);
    }
  };

  const int lane = tid & 31, warp = tid >> 5;
  const int warp_n = warp % WARPS_N, warp_m = warp / WARPS_N;
  const int g = lane >> 2, t = lane & 3;

  float acc[kNT][kMT][4];
#pragma unroll
  for (int i = 0; i < kNT; ++i)
#pragma unroll
    for (int m = 0; m < kMT; ++m)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][m][r] = 0.f;
  float gsum[kLongSums ? kNT : 1][kLongSums ? kMT : 1][4];  // kLongSums: the open 128-k group's sums

  // NF4: the pair table sits after the pipeline (and after the epilogue tile that reuses it);
  // filled below once the first copies are issued, published by the main loop's first barrier.
  const unsigned int nf4_tab = ptx::smem_addr(smem + w4a16_smem_bytes(BLOCK_M, BLOCK_N, BLOCK_K, STAGES));
  const unsigned int nf4_lane = nf4_tab + lane * 4;
  // NF4 per-weight scale: {absmax, absmax} of rows g, g + 8 in T.
  auto nf4_splats = [](const unsigned int* s2, unsigned int* sp) {
    sp[0] = nf4_detail::nf4_splat<kElem>(__uint_as_float(s2[0]));
    sp[1] = nf4_detail::nf4_splat<kElem>(__uint_as_float(s2[1]));
  };

  // Per-lane ldmatrix row/chunk selection (tokens of this warp, x4 = 16 tokens x k16).
  const int ldm_mat = lane >> 3;
  const int ldm_row_in = (ldm_mat >> 1) * 8 + (lane & 7);  // x4: matrices 2,3 are tokens +8
  const int ldm_kh = ldm_mat & 1;                           // matrices 1,3 are k + 8

  if constexpr (PATH == kW4A16PathDirect) {
    static_assert(WARPS_M == 1, "the direct path gives every warp all BLOCK_M tokens");
    constexpr int kU = kKC;  // 64-k chunks per k-block = register prefetch distance
    // The shared memory sized for STAGES full stages holds more activation-only stages:
    // use up to 4 (activations are L2 hits; more only adds cp.async groups in flight).
    constexpr int kAS0 = STAGES * Cfg::kStageBytes / Cfg::kABytes;
    constexpr int kAS = kAS0 > 4 ? (STAGES > 4 ? STAGES : 4) : kAS0;
    // Per-lane bases: n tile i of this warp, chunk 0, this lane's 16 bytes; scales of rows
    // {g, g+8} of the tile in group 0. A chunk is 512 bytes; a scale group row is 2N bytes.
    const unsigned char* wp[kNT];
    const unsigned char* sp[kNT];
#pragma unroll
    for (int i = 0; i < kNT; ++i) {
      const int nt = warp_n * kNT + i;
      wp[i] = w_ptr + (unsigned long long)nt * (unsigned long long)(K / 64) * 512ull + lane * 16;
      sp[i] = s_ptr + (nt * 16 + 2 * g) * kSB;
    }
    const unsigned long long srow = (unsigned long long)N * kSB;

    unsigned int wq[kU][kNT][4];
    unsigned int sq[kU][kNT][kZp ? 4 : 2];  // zero points: {p[g], p[g+8]} of both groups
    // Offsets of chunk u of k block kb: the weight offset folds into the load's immediate; the
    // scale offsets are warp-uniform (one multiply per k block, shared by the n tiles).
    auto load_w = [&](int kb, int u) {
      const unsigned long long w_off = (unsigned long long)(kb * kU + u) * 512ull;
      // Group 128: chunk c (from k 0) reads row c / 2 (s_ptr is at row (kb0 * kKC) / 2).
      const unsigned long long s_off =
          kG128 ? (unsigned long long)(((kb0 * kKC + kb * kU + u) >> 1) - ((kb0 * kKC) >> 1)) * srow
                : (unsigned long long)(kb * kU + u) * (kNF4 ? 1 : 2) * srow;
#pragma unroll
      for (int i = 0; i < kNT; ++i) {
        ptx::ldg_stream_v4(wp[i] + w_off, wq[u][i]);
        if constexpr (kG128 && kZp) {
          ptx::ldg_nc_v2(sp[i] + s_off, sq[u][i]);  // {p[g], p[g+8]}, both 32-k groups
          sq[u][i][2] = sq[u][i][0];
          sq[u][i][3] = sq[u][i][1];
        } else if constexpr (kG128) {
          sq[u][i][0] = ptx::ldg_nc_b32(sp[i] + s_off);  // {s[g], s[g+8]}, both 32-k groups
          sq[u][i][1] = sq[u][i][0];
        } else if constexpr (kNF4) {
          ptx::ldg_nc_v2(sp[i] + s_off, sq[u][i]);  // {a[g], a[g+8]}
        } else if constexpr (kZp) {
          ptx::ldg_nc_v2(sp[i] + s_off, sq[u][i]);  // group 0: {p[g], p[g+8]}
          ptx::ldg_nc_v2(sp[i] + s_off + srow, sq[u][i] + 2);
        } else {
          sq[u][i][0] = ptx::ldg_nc_b32(sp[i] + s_off);
          sq[u][i][1] = ptx::ldg_nc_b32(sp[i] + s_off + srow);
        }
      }
    };

#pragma unroll
    for (int s = 0; s < kAS - 1; ++s) {
      if (s < num_k) load_act(s, s, Cfg::kABytes);
      ptx::cp_async_commit();
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) load_w(0, u);
    if constexpr (kNF4) nf4_detail::nf4_fill_pair_table<kElem, kThreads>(nf4_tab, tid);

    // BLOCK_M == 8: one ldmatrix.x4 gives the B fragments of two 16-k steps (matrices
    // 0,1 = k 0..15 of step j, 2,3 = step j + 1; 8 token rows each).
    const int pair_row = lane & 7;
    const int pair_ch = lane >> 3;

    int slot = 0;
    for (int kb = 0; kb < num_k; ++kb) {
      ptx::cp_async_wait<kAS - 2>();
      __syncthreads();
      {
        const int next = kb + kAS - 1;
        int next_slot = slot + kAS - 1;
        next_slot = next_slot >= kAS ? next_slot - kAS : next_slot;
        if (next < num_k) load_act(next, next_slot, Cfg::kABytes);
        ptx::cp_async_commit();
      }
      const unsigned int sa = pipe_base + slot * Cfg::kABytes;
      const bool more = kb + 1 < num_k;
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        unsigned int cw[kNT][4], cs[kNT][kZp ? 4 : 2];
#pragma unroll
        for (int i = 0; i < kNT; ++i) {
#pragma unroll
          for (int r = 0; r < 4; ++r) cw[i][r] = wq[u][i][r];
          cs[i][0] = sq[u][i][0];
          cs[i][1] = sq[u][i][1];
          if constexpr (kZp) {
            cs[i][2] = sq[u][i][2];
            cs[i][3] = sq[u][i][3];
          }
        }
        if (more) load_w(kb + 1, u);  // refill this slot one k-block ahead

        unsigned int b[4][kMT][2];
        if constexpr (kMT == 1) {
#pragma unroll
          for (int jp = 0; jp < 2; ++jp) {
            const int ch = u * 8 + jp * 4 + pair_ch;
            ptx::ldmatrix_x4(sa + pair_row * (BLOCK_K * 2) + ((ch ^ (pair_row & 7)) * 16), b[2 * jp][0][0],
                        b[2 * jp][0][1], b[2 * jp + 1][0][0], b[2 * jp + 1][0][1]);
          }
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int kchunk = (u * 64 + j * 16) / 8;
#pragma unroll
            for (int p = 0; p < kMT / 2; ++p) {
              const int row = p * 16 + ldm_row_in;
              const int ch = kchunk + ldm_kh;
              ptx::ldmatrix_x4(sa + row * (BLOCK_K * 2) + ((ch ^ (row & 7)) * 16), b[j][2 * p][0], b[j][2 * p][1],
                          b[j][2 * p + 1][0], b[j][2 * p + 1][1]);
            }
            if constexpr (kMT % 2 == 1) {
              const int row = (kMT - 1) * 8 + (lane & 7);
              const int ch = kchunk + ldm_kh;
              ptx::ldmatrix_x2(sa + row * (BLOCK_K * 2) + ((ch ^ (row & 7)) * 16), b[j][kMT - 1][0], b[j][kMT - 1][1]);
            }
          }
        }
        if constexpr (kNF4Sum) {
          nf4_detail::nf4_block_mma<kElem, kNT>(acc, cw, cs, b, nf4_lane);
        } else if constexpr (kScaleInAcc) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            unsigned int bh[2][kMT][2], w2[kNT][2], s2[kNT];
#pragma unroll
            for (int jj = 0; jj < 2; ++jj)
#pragma unroll
              for (int m = 0; m < kMT; ++m) {
                bh[jj][m][0] = b[2 * h + jj][m][0];
                bh[jj][m][1] = b[2 * h + jj][m][1];
              }
            if constexpr (kLongSums) {
              // A k block starts a 128-k group and holds whole ones: chunk u is half u & 1 of one.
#pragma unroll
              for (int i = 0; i < kNT; ++i) {
                w2[i][0] = cw[i][2 * h];
                w2[i][1] = cw[i][2 * h + 1];
              }
              int4_group128_mma<kNT, kMT, kMT, kZp, kElem>(acc, gsum, w2, cs, bh, (u & 1) * 2 + h);
            } else if constexpr (kZp) {
              unsigned int p2[kNT][2];  // {scale, bias} pairs of rows g, g + 8
#pragma unroll
              for (int i = 0; i < kNT; ++i) {
                w2[i][0] = cw[i][2 * h];
                w2[i][1] = cw[i][2 * h + 1];
                p2[i][0] = cs[i][2 * h];
                p2[i][1] = cs[i][2 * h + 1];
              }
              int4_group_mma_zp<kNT, kMT, kMT, GROUP_SUMS, kElem>(acc, w2, p2, bh);
            } else {
#pragma unroll
              for (int i = 0; i < kNT; ++i) {
                w2[i][0] = cw[i][2 * h];
                w2[i][1] = cw[i][2 * h + 1];
                s2[i] = cs[i][h];
              }
              int4_group_mma<kNT, kMT, kMT, GROUP_SUMS, kElem>(acc, w2, s2, bh);
            }
          }
        } else {
#pragma unroll
          for (int i = 0; i < kNT; ++i) {
            if constexpr (kNF4) {
              unsigned int sp[2];
              nf4_splats(cs[i], sp);
#pragma unroll
              for (int j = 0; j < 4; ++j) {
                unsigned int af[4];
                nf4_detail::nf4_scaled_word<kElem>(cw[i][j], sp[0], sp[1], nf4_lane, af);
#pragma unroll
                for (int m = 0; m < kMT; ++m) ptx::mma_t<kElem>(acc[i][m], af, b[j][m][0], b[j][m][1]);
              }
            } else if constexpr (kZp) {
#pragma unroll
              for (int j = 0; j < 4; ++j) {
                unsigned int af[4];
                dequant_word_zp<kElem>(cw[i][j], cs[i][j & 2], cs[i][(j & 2) + 1], af);
#pragma unroll
                for (int m = 0; m < kMT; ++m) ptx::mma_t<kElem>(acc[i][m], af, b[j][m][0], b[j][m][1]);
              }
            } else {
#pragma unroll
              for (int h = 0; h < 2; ++h) {
                const unsigned int s_lo = ptx::splat_lo(cs[i][h]);
                const unsigned int s_hi = ptx::splat_hi(cs[i][h]);
#pragma unroll
                for (int jj = 0; jj < 2; ++jj) {
                  const int j = 2 * h + jj;
                  unsigned int af[4];
                  dequant_word_splat<kElem>(cw[i][j], s_lo, s_hi, af);
#pragma unroll
                  for (int m = 0; m < kMT; ++m) ptx::mma_t<kElem>(acc[i][m], af, b[j][m][0], b[j][m][1]);
                }
              }
            }
          }
        }
      }
      slot = slot + 1 == kAS ? 0 : slot + 1;
    }
  } else {
  // k blocks through the ring: num_k per n block of the run.
  const int total_k = N_RUN > 1 ? runs * num_k : num_k;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if constexpr (N_RUN > 1) {
      if (s < total_k) load_stage(s % num_k, s, s / num_k);
    } else if (s < num_k) {
      load_stage(s, s);
    }
    ptx::cp_async_commit();
  }
  if constexpr (kNF4) nf4_detail::nf4_fill_pair_table<kElem, kThreads>(nf4_tab, tid);

  // N_RUN > 1: the (k block, n block) of the next copy and of the k block being reduced.
  int load_kb = N_RUN > 1 ? (STAGES - 1) % num_k : 0, load_nb = N_RUN > 1 ? (STAGES - 1) / num_k : 0;
  int run_kb = 0, run_nb = 0;
  // N_RUN > 1: n block nb's accumulators straight to its output rows (the epilogue's shared
  // memory tile would overlap the ring, which still holds the next n block's stages). Decode
  // outputs are a few KiB per n block, so the 2-byte stores cost little.
  auto store_run = [&](int nb) {
    unsigned short* out = static_cast<unsigned short*>(args.out);
#pragma unroll
    for (int m = 0; m < kMT; ++m) {
      const int tok = warp_m * Cfg::kWM + m * 8 + 2 * t;
      const int d0 = s_dst[tok], d1 = s_dst[tok + 1];
#pragma unroll
      for (int i = 0; i < kNT; ++i) {
        const long long col = (long long)nb * BLOCK_N + (warp_n * kNT + i) * 16 + g;
        const unsigned int v01 = ptx::pack_half2<kElem>(acc[i][m][0], acc[i][m][1]);  // row g, tokens 2t, 2t+1
        const unsigned int v23 = ptx::pack_half2<kElem>(acc[i][m][2], acc[i][m][3]);  // row g+8
        if (d0 >= 0) {
          out[(long long)d0 * args.ldc + col] = (unsigned short)(v01 & 0xffffu);
          out[(long long)d0 * args.ldc + col + 8] = (unsigned short)(v23 & 0xffffu);
        }
        if (d1 >= 0) {
          out[(long long)d1 * args.ldc + col] = (unsigned short)(v01 >> 16);
          out[(long long)d1 * args.ldc + col + 8] = (unsigned short)(v23 >> 16);
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[i][m][r] = 0.f;
      }
    }
  };

  int slot = 0;
  for (int kb = 0; kb < total_k; ++kb) {
    ptx::cp_async_wait<STAGES - 2>();
    __syncthreads();
    {
      const int next = kb + STAGES - 1;
      int next_slot = slot + STAGES - 1;
      next_slot = next_slot >= STAGES ? next_slot - STAGES : next_slot;
      if constexpr (N_RUN > 1) {
        if (next < total_k) load_stage(load_kb, next_slot, load_nb);
        if (++load_kb == num_k) {
          load_kb = 0;
          ++load_nb;
        }
      } else if (next < num_k) {
        load_stage(next, next_slot);
      }
      ptx::cp_async_commit();
    }
    const unsigned int sa = pipe_base + slot * Cfg::kStageBytes;
    const unsigned int sw = sa + Cfg::kABytes;
    const unsigned int ss = sw + Cfg::kWBytes;

#pragma unroll
    for (int kc = 0; kc < kKC; ++kc) {
      unsigned int wq[kNT][4];
      unsigned int sc[kNT][kZp ? 4 : 2];  // zero points: {p[g], p[g+8]} of both groups
#pragma unroll
      for (int i = 0; i < kNT; ++i) {
        const int nt = warp_n * kNT + i;
        ptx::lds128(sw + ((nt * kKC + kc) * 32 + lane) * 16, wq[i][0], wq[i][1], wq[i][2], wq[i][3]);
        if constexpr (kG128 && kZp) {
          // Row kc / 2 of the stage holds this chunk's 128-k group (BLOCK_K 64: row 0).
          ptx::lds64(ss + ((kc >> 1) * BLOCK_N + nt * 16 + 2 * g) * 4, sc[i]);
          sc[i][2] = sc[i][0];
          sc[i][3] = sc[i][1];
        } else if constexpr (kG128) {
          sc[i][0] = ptx::lds32(ss + ((kc >> 1) * BLOCK_N + nt * 16 + 2 * g) * 2);
          sc[i][1] = sc[i][0];
        } else if constexpr (kNF4) {
          ptx::lds64(ss + (kc * BLOCK_N + nt * 16 + 2 * g) * 4, sc[i]);  // {a[g], a[g+8]}
        } else if constexpr (kZp) {
#pragma unroll
          for (int h = 0; h < 2; ++h) ptx::lds64(ss + ((kc * 2 + h) * BLOCK_N + nt * 16 + 2 * g) * 4, sc[i] + 2 * h);
        } else {
#pragma unroll
          for (int h = 0; h < 2; ++h) sc[i][h] = ptx::lds32(ss + ((kc * 2 + h) * BLOCK_N + nt * 16 + 2 * g) * 2);
        }
      }
      // Token fragments of k16 step j of this chunk (ldmatrix x4: two 8-token tiles at once).
      auto load_b = [&](int j, unsigned int (&b)[kMT][2]) {
        const int kchunk = (kc * 64 + j * 16) / 8;  // 16-byte chunk of the activation row
#pragma unroll
        for (int p = 0; p < kMT / 2; ++p) {
          const int row = warp_m * Cfg::kWM + p * 16 + ldm_row_in;
          const int ch = kchunk + ldm_kh;
          ptx::ldmatrix_x4(sa + row * (BLOCK_K * 2) + ((ch ^ (row & 7)) * 16), b[2 * p][0], b[2 * p][1], b[2 * p + 1][0],
                      b[2 * p + 1][1]);
        }
        if constexpr (kMT % 2 == 1) {
          const int row = warp_m * Cfg::kWM + (kMT - 1) * 8 + (lane & 7);
          const int ch = kchunk + ldm_kh;
          ptx::ldmatrix_x2(sa + row * (BLOCK_K * 2) + ((ch ^ (row & 7)) * 16), b[kMT - 1][0], b[kMT - 1][1]);
        }
      };
      // INT4 group sums over the first tag.value token tiles (two 32-k groups per chunk).
      auto int4_group_sums = [&](auto tag) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          unsigned int b[2][kMT][2], w2[kNT][2], s2[kNT];
          load_b(2 * h, b[0]);
          load_b(2 * h + 1, b[1]);
          if constexpr (kLongSums) {
            // A k block starts a 128-k group and holds whole ones: chunk kc is half kc & 1 of one.
#pragma unroll
            for (int i = 0; i < kNT; ++i) {
              w2[i][0] = wq[i][2 * h];
              w2[i][1] = wq[i][2 * h + 1];
            }
            int4_group128_mma<kNT, kMT, decltype(tag)::value, kZp, kElem>(acc, gsum, w2, sc, b, (kc & 1) * 2 + h);
          } else if constexpr (kZp) {
            unsigned int p2[kNT][2];  // {scale, bias} pairs of rows g, g + 8
#pragma unroll
            for (int i = 0; i < kNT; ++i) {
              w2[i][0] = wq[i][2 * h];
              w2[i][1] = wq[i][2 * h + 1];
              p2[i][0] = sc[i][2 * h];
              p2[i][1] = sc[i][2 * h + 1];
            }
            int4_group_mma_zp<kNT, kMT, decltype(tag)::value, GROUP_SUMS, kElem>(acc, w2, p2, b);
          } else {
#pragma unroll
            for (int i = 0; i < kNT; ++i) {
              w2[i][0] = wq[i][2 * h];
              w2[i][1] = wq[i][2 * h + 1];
              s2[i] = sc[i][h];
            }
            int4_group_mma<kNT, kMT, decltype(tag)::value, GROUP_SUMS, kElem>(acc, w2, s2, b);
          }
        }
      };
      if constexpr (kNF4Sum) {
        unsigned int b[4][kMT][2];
#pragma unroll
        for (int j = 0; j < 4; ++j) load_b(j, b[j]);
        nf4_detail::nf4_block_mma<kElem, kNT>(acc, wq, sc, b, nf4_lane);
      } else if constexpr (kScaleInAcc) {
        int4_group_sums(IntTag<kMT>{});
      } else if (kNarrowPath && narrow) {
        int4_group_sums(IntTag<1>{});
      } else {
        unsigned int sp[kNT][2];
        if constexpr (kNF4) {
#pragma unroll
          for (int i = 0; i < kNT; ++i) nf4_splats(sc[i], sp[i]);
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          unsigned int b[kMT][2];
          load_b(j, b);
#pragma unroll
          for (int i = 0; i < kNT; ++i) {
            unsigned int af[4];
            if constexpr (kNF4) {
              nf4_detail::nf4_scaled_word<kElem>(wq[i][j], sp[i][0], sp[i][1], nf4_lane, af);
            } else if constexpr (kZp) {
              dequant_word_zp<kElem>(wq[i][j], sc[i][j & 2], sc[i][(j & 2) + 1], af);
            } else {
              dequant_word<kElem>(wq[i][j], sc[i][j >> 1], af);
            }
#pragma unroll
            for (int m = 0; m < kMT; ++m) ptx::mma_t<kElem>(acc[i][m], af, b[m][0], b[m][1]);
          }
        }
      }
    }
    slot = slot + 1 == STAGES ? 0 : slot + 1;
    if constexpr (N_RUN > 1) {
      if (++run_kb == num_k) {
        run_kb = 0;
        store_run(n_block + run_nb);
        ++run_nb;
      }
    }
  }
  }

  ptx::cp_async_wait<0>();
  if constexpr (N_RUN > 1) return w4a16_tiles_done<MODE, MASKED_LOOP != 0>(s_misc);  // every n block of the run is stored
  __syncthreads();
  if constexpr (SPLIT_K > 1) {
    // Ranks 1.. leave their partials in their own pipeline smem, [register][thread] so the
    // stores and rank 0's remote loads are conflict-free; rank 0 reads them through DSMEM.
    float* s_part = reinterpret_cast<float*>(pipe);
    if (split != 0) {
      for_each_partial<kNT, kMT, kThreads>([&](int i, int m, int r, int at) { s_part[at + tid] = acc[i][m][r]; });
    }
    ptx::cluster_sync();
    if (split == 0) {
      const unsigned int mine = ptx::smem_addr(s_part) + tid * 4u;
#pragma unroll 1
      for (int rank = 1; rank < SPLIT_K; ++rank) {
        const unsigned int peer = ptx::cluster_map_shared(mine, rank);
        for_each_partial<kNT, kMT, kThreads>(
            [&](int i, int m, int r, int at) { acc[i][m][r] += ptx::ld_shared_cluster_f32(peer + at * 4u); });
      }
    }
    ptx::cluster_sync();  // the peers' shared memory must outlive rank 0's reads
    if (split != 0) return w4a16_tiles_done<MODE, MASKED_LOOP != 0>(s_misc);
  }

  // Epilogue: fragments -> smem [BLOCK_M][BLOCK_N + 8] bf16 -> 16-byte row segments.
  constexpr int kLdc = BLOCK_N + 8;
  unsigned short* s_out = reinterpret_cast<unsigned short*>(pipe);
#pragma unroll
  for (int i = 0; i < kNT; ++i) {
    const int n_loc = (warp_n * kNT + i) * 16 + g;
#pragma unroll
    for (int m = 0; m < kMT; ++m) {
      const int tok = warp_m * Cfg::kWM + m * 8 + 2 * t;
      const unsigned int v01 = ptx::pack_half2<kElem>(acc[i][m][0], acc[i][m][1]);  // row g, tokens 2t, 2t+1
      const unsigned int v23 = ptx::pack_half2<kElem>(acc[i][m][2], acc[i][m][3]);  // row g+8
      s_out[tok * kLdc + n_loc] = (unsigned short)(v01 & 0xffffu);
      s_out[(tok + 1) * kLdc + n_loc] = (unsigned short)(v01 >> 16);
      s_out[tok * kLdc + n_loc + 8] = (unsigned short)(v23 & 0xffffu);
      s_out[(tok + 1) * kLdc + n_loc + 8] = (unsigned short)(v23 >> 16);
    }
  }
  __syncthreads();
  unsigned short* out = static_cast<unsigned short*>(args.out);
  constexpr int kOutChunksPerRow = BLOCK_N / 8;
#pragma unroll
  for (int c = tid; c < BLOCK_M * kOutChunksPerRow; c += kThreads) {
    const int row = c / kOutChunksPerRow, ch = c % kOutChunksPerRow;
    const int dst = s_dst[row];
    if (dst >= 0) {
      const uint4_w v = *reinterpret_cast<const uint4_w*>(s_out + row * kLdc + ch * 8);
      *reinterpret_cast<uint4_w*>(out + (long long)dst * args.ldc + (long long)n_block * BLOCK_N + ch * 8) = v;
    }
  }
  return w4a16_tiles_done<MODE, MASKED_LOOP != 0>(s_misc);
}

// This CTA's tile, `later` tiles past its first, all from blockIdx: CTA c takes n blocks
// N_RUN * (c % n_runs).. of tile c / n_runs (w4a16_n_runs); cluster rank `split` of SPLIT_K takes
// its slice of the k blocks.
template <int MODE, int BLOCK_M, int BLOCK_N, int BLOCK_K, int STAGES, int WARPS_M, int WARPS_N, int PATH, int WEIGHT,
          int SPLIT_K, int GROUP_SUMS, int N_RUN, int MASKED_LOOP>
__device__ __forceinline__ int w4a16_gemm_cta_tile(const W4A16Args& args, int later) {
  const int n_blocks = args.n / BLOCK_N;
  const int n_runs = w4a16_n_runs(args.n, BLOCK_N, N_RUN);
  const unsigned int cta = blockIdx.x / SPLIT_K;
  const int split = (int)(blockIdx.x % SPLIT_K);  // == %cluster_ctarank: clusters are SPLIT_K x 1 x 1
  const int kb_tile = args.k / BLOCK_K;
  const int kb0 = (int)((long long)kb_tile * split / SPLIT_K);
  const int kb1 = (int)((long long)kb_tile * (split + 1) / SPLIT_K);
  const int n_block = (int)(cta % (unsigned int)n_runs) * N_RUN;
  const int runs = n_blocks - n_block < N_RUN ? n_blocks - n_block : N_RUN;
  return w4a16_gemm_tile<MODE, BLOCK_M, BLOCK_N, BLOCK_K, STAGES, WARPS_M, WARPS_N, PATH, WEIGHT, SPLIT_K, GROUP_SUMS,
                         N_RUN, MASKED_LOOP>(args, (int)(cta / (unsigned int)n_runs) + later, n_block, split, kb0,
                                             kb1 - kb0, runs);
}

// A masked_loop CTA's tiles after its first: a call, so that the first tile's inlined code stays
// close to the one-tile form (a loop around the inlined tile holds values across tiles: 129 ->
// 174 registers on the BM16 x BN256 decode tile; the call costs a few bytes of saves outside the
// main loop). It derives its n blocks and k slice again, so that only the loop's count and
// position live across the first tile.
template <int MODE, int BLOCK_M, int BLOCK_N, int BLOCK_K, int STAGES, int WARPS_M, int WARPS_N, int PATH, int WEIGHT,
          int SPLIT_K, int GROUP_SUMS, int N_RUN>
__device__ __noinline__ int w4a16_gemm_next_tile(const W4A16Args& args, int later) {
  return w4a16_gemm_cta_tile<MODE, BLOCK_M, BLOCK_N, BLOCK_K, STAGES, WARPS_M, WARPS_N, PATH, WEIGHT, SPLIT_K,
                             GROUP_SUMS, N_RUN, 1>(args, later);
}

// ---------------------------------------------------------------------------------------
// The kernel body. Launch: grid = w4a16_grid(..., N_RUN) x SPLIT_K (clusters of SPLIT_K along x),
// block = kThreads, dynamic smem = w4a16_smem_bytes(..., NF4 weights) (the pair table).
// MASKED_LOOP (masked mode, fewer than 256 threads): the grid follows the hint
// (w4a16_masked_tiles) and the CTAs take the compact schedule's tiles in turn; without it every
// CTA takes one tile, and a masked grid must cover the buffer (expected_m = 0).
// ---------------------------------------------------------------------------------------
template <int MODE, int BLOCK_M, int BLOCK_N, int BLOCK_K, int STAGES, int WARPS_M, int WARPS_N,
          int PATH = w4a16_default_path(BLOCK_M, WARPS_M, STAGES), int WEIGHT = kW4A16WeightInt4,
          int SPLIT_K = 1, int GROUP_SUMS = kW4A16GroupSumsOffset, int N_RUN = 1, int MASKED_LOOP = 0>
__device__ __forceinline__ void w4a16_gemm_body(const W4A16Args& args) {
  static_assert(MASKED_LOOP == 0 || (MODE == kW4A16Masked && w4a16_gemm_tile_loop(WARPS_M, WARPS_N)),
                "a masked tile loop needs a masked tile of fewer than 256 threads (w4a16_gemm_tile_loop)");
  const int tiles = w4a16_gemm_cta_tile<MODE, BLOCK_M, BLOCK_N, BLOCK_K, STAGES, WARPS_M, WARPS_N, PATH, WEIGHT,
                                        SPLIT_K, GROUP_SUMS, N_RUN, MASKED_LOOP>(args, 0);
  if constexpr (MASKED_LOOP != 0) {
    // The grid's slots take the groups' non-empty tiles in turn (w4a16_masked_tiles); the
    // barrier keeps the next tile's routing and copies off the shared memory the last one's
    // epilogue still reads.
    const unsigned int n_runs = (unsigned int)w4a16_n_runs(args.n, BLOCK_N, N_RUN);
    const int first = (int)(blockIdx.x / SPLIT_K / n_runs), slots = (int)(gridDim.x / SPLIT_K / n_runs);
    for (int later = slots; first + later < tiles; later += slots) {
      __syncthreads();
      w4a16_gemm_next_tile<MODE, BLOCK_M, BLOCK_N, BLOCK_K, STAGES, WARPS_M, WARPS_N, PATH, WEIGHT, SPLIT_K, GROUP_SUMS,
                           N_RUN>(args, later);
    }
  } else {
    (void)tiles;
  }
}

}  // namespace chord
