// Host-callable geometry and config rules of the W4A16 WGMMA prefill kernel
// (kernels_src/w4a16_wgmma.cuh); plain C++ for the host, also compiled by NVRTC.
#pragma once

#include "w4a16_args.cuh"

namespace chord {

// One pipeline stage covers this many k: one 128-byte swizzle row of bf16 activations.
constexpr int kW4A16WgmmaBlockK = 64;

CHORD_W4A16_HD constexpr int w4a16_wgmma_threads(int warpgroups) { return 128 * warpgroups; }

// One stage: activations [BLOCK_M][64] bf16 (128-byte rows, 16-byte chunk c of row r at chunk
// c ^ (r % 8): the wgmma 128-byte swizzle), packed weight BLOCK_N/16 chunks of 512 bytes, two
// scale rows of BLOCK_N bf16 (zp: zero-point weights, 32-bit {scale, bias} entries; g128:
// group-128 weights, one row, the 128-k group's, which two consecutive k blocks share). Rounded
// up to 1024 bytes so every activation tile starts on a swizzle-atom boundary (the hardware
// swizzles on absolute address bits).
CHORD_W4A16_HD constexpr int w4a16_wgmma_stage_bytes(int block_m, int block_n, bool zp = false, bool g128 = false) {
  return (block_m * 128 + block_n * 32 + (g128 ? 1 : 2) * block_n * (zp ? 4 : 2) + 1023) / 1024 * 1024;
}
// Epilogue staging tile [BLOCK_M][BLOCK_N + 8] bf16 (reuses the pipeline buffers).
CHORD_W4A16_HD constexpr int w4a16_wgmma_epilogue_bytes(int block_m, int block_n) {
  return block_m * (block_n + 8) * 2;
}
CHORD_W4A16_HD constexpr int w4a16_wgmma_pipe_bytes(int block_m, int block_n, int stages, bool zp = false,
                                                    bool g128 = false) {
  return w4a16_wgmma_stage_bytes(block_m, block_n, zp, g128) * stages > w4a16_wgmma_epilogue_bytes(block_m, block_n)
             ? w4a16_wgmma_stage_bytes(block_m, block_n, zp, g128) * stages
             : w4a16_wgmma_epilogue_bytes(block_m, block_n);
}
// NF4 weights: the decode's pair table with 16 replicas (w4a16_decode.cuh), 16 KiB, so that the
// 4-stage BM128 BN128 tile keeps two CTAs per SM.
constexpr int kW4A16WgmmaNF4TableBytes = 256 * 16 * 4;
// Dynamic shared memory: 1024 bytes of alignment slack (dynamic shared memory is only
// guaranteed 16-byte alignment), the pipeline, the scheduler header (src rows, dst rows,
// 64 scratch ints), then for NF4 weights the pair table.
CHORD_W4A16_HD constexpr int w4a16_wgmma_smem_bytes(int block_m, int block_n, int stages, bool nf4 = false,
                                                    bool zp = false, bool g128 = false) {
  return 1024 + w4a16_wgmma_pipe_bytes(block_m, block_n, stages, zp, g128) + (2 * block_m + 64) * 4 +
         (nf4 ? kW4A16WgmmaNF4TableBytes : 0);
}

// Why a config is invalid for a mode, or nullptr. The template static_asserts the same rules.
CHORD_W4A16_HD constexpr const char* w4a16_wgmma_config_error(int mode, int block_m, int block_n, int warpgroups,
                                                              int stages, bool nf4 = false, bool zp = false,
                                                              bool g128 = false) {
  return (block_m != 16 && block_m != 32 && block_m != 48 && block_m != 64 && block_m != 96 && block_m != 128 &&
          block_m != 256)
             ? "BLOCK_M (wgmma N) must be 16, 32, 48, 64, 96, 128 or 256"
         : (warpgroups != 1 && warpgroups != 2)               ? "WARPGROUPS must be 1 or 2"
         : (block_n != 64 * warpgroups && block_n != 128 * warpgroups)
             ? "BLOCK_N must be 64 or 128 per warpgroup (one or two m64 tiles)"
         : (stages < 3 || stages > 8) ? "STAGES must be in [3, 8]"
         : (block_m > w4a16_wgmma_threads(warpgroups))
             ? "BLOCK_M must not exceed the thread count (the schedulers fill one row per thread)"
         : (mode == kW4A16Contiguous && kW4A16ContiguousAlign % block_m != 0)
             ? "CONTIGUOUS needs BLOCK_M to divide kW4A16ContiguousAlign (128)"
         : (block_m / 2 * (block_n / (64 * warpgroups)) > 128)
             ? "more than 128 fp32 accumulators per thread"
         : (w4a16_wgmma_smem_bytes(block_m, block_n, stages, nf4, zp, g128) > 227 * 1024)
             ? "shared memory exceeds 227 KiB"
             : nullptr;
}

// Warp-specialized variant (w4a16_wgmma_ws.cuh): one producer and two consumer warpgroups, one
// CTA per SM. Its tiles have 128 tokens; masked calls may also take 32, 48, 64 or 96 (INT4: the
// tiles of a few dozen rows per group in vLLM's batched buffers, where the persistent tile loop
// takes only the groups' non-empty tiles; docs/kernels.md).
constexpr int kW4A16WgmmaWsBlockM = 128;
constexpr int kW4A16WgmmaWsThreads = 384;
// The warp-specialized kernel copies the activation rows with TMA (one BLOCK_M-row x 64-element
// box per stage, from args.a_map) in CONTIGUOUS, MASKED and OFFSETS mode, where a tile's rows are one
// consecutive range of A. INDEXED gathers its rows with cp.async (TMA boxes of one row each
// measured 1.4-1.8x slower). With the weights and scales loaded by TMA as well, a CONTIGUOUS
// stage is all TMA (one producer thread, no proxy fence): 1.7-1.8% faster than cp.async rows on
// EP8 512 rows/expert (H200, bench --against).
CHORD_W4A16_HD constexpr bool w4a16_tma_activations(int mode) {
  return mode == kW4A16Contiguous || mode == kW4A16Masked || mode == kW4A16Offsets;
}
// The warp-specialized kernel's TMA boxes of the packed weight and scales, one of each per stage
// (args.w_map, args.s_map; the host encodes them from these shapes, row-major, row stride = cols,
// no swizzle). Weight: a row is one 16-row tile of N across K (K / 64 runs of 512 bytes as
// uint32), a box the BLOCK_N / 16 runs of one k block. Scales: INT4 the two BF16 group rows of a
// k block (zero points: the two rows of 32-bit {scale, bias} pairs; group 128: the one row of
// the k block's 128-group), NF4 its one FP32 absmax row, BLOCK_N columns. Each lands as the
// stage lays it out.
struct W4A16MapShape {
  long long rows, cols;
  int element_bytes, box_rows, box_cols;
};
CHORD_W4A16_HD constexpr W4A16MapShape w4a16_weight_map_shape(int experts, int n, int k, int block_n) {
  return {(long long)experts * (n / 16), (long long)(k / kW4A16WgmmaBlockK) * 128, 4, block_n / 16, 128};
}
// Group 128 (g128): one row of [E * K/128, N] per box, which two consecutive k blocks share.
CHORD_W4A16_HD constexpr W4A16MapShape w4a16_scale_map_shape(int experts, int n, int k, int block_n, bool nf4,
                                                             bool zp = false, bool g128 = false) {
  return nf4    ? W4A16MapShape{(long long)experts * (k / kW4A16WgmmaBlockK), n, 4, 1, block_n}
         : g128 ? W4A16MapShape{(long long)experts * (k / 128), n, zp ? 4 : 2, 1, block_n}
                : W4A16MapShape{(long long)experts * (k / 32), n, zp ? 4 : 2, 2, block_n};
}
// Tile slots between the producer and the consumers: how many tiles the producer may resolve
// ahead (short K: a tile's resolve must not wait for the epilogue two tiles back).
constexpr int kW4A16WgmmaWsSlots = 4;
// mbarriers: full and empty per stage and per tile slot (8 bytes each), 16-byte aligned.
CHORD_W4A16_HD constexpr int w4a16_wgmma_ws_barrier_bytes(int stages) {
  return ((2 * stages + 2 * kW4A16WgmmaWsSlots) * 8 + 15) / 16 * 16;
}
// INT4 BN256 at <= 4 stages (short K: TP8's down, four k blocks a tile) stores its output
// through the TMA engine: each consumer warpgroup stages its BLOCK_M tokens x 128 outputs in shared
// memory (token rows padded to 272 bytes against bank conflicts) and issues one bulk copy per
// token row, which completes while the next tile runs. Other configs store from registers
// through a 512-byte transpose buffer per consumer warp.
constexpr int kW4A16WsStoreRowBytes = 272;
CHORD_W4A16_HD constexpr bool w4a16_wgmma_ws_async_stores(int block_n, int stages, bool nf4) {
  return block_n == 256 && stages <= 4 && !nf4;
}
CHORD_W4A16_HD constexpr int w4a16_wgmma_ws_epi_bytes(int block_m, int block_n, int stages, bool nf4) {
  return w4a16_wgmma_ws_async_stores(block_n, stages, nf4) ? 2 * block_m * kW4A16WsStoreRowBytes : 8 * 512;
}
// The stages, the barriers, the tile slots of BLOCK_M output rows + 4 ints, the producer's BLOCK_M
// source rows, 64 scheduler ints, the epilogue staging (above), the NF4 pair table (BN256: 64 KiB of
// 256-byte entries, BN128: 32 KiB; 256 bytes of alignment slack); 1024 bytes of alignment
// slack.
CHORD_W4A16_HD constexpr int w4a16_wgmma_ws_smem_bytes(int block_m, int block_n, int stages, bool nf4,
                                                       bool zp = false, bool g128 = false) {
  return 1024 + w4a16_wgmma_stage_bytes(block_m, block_n, zp, g128) * stages + w4a16_wgmma_ws_barrier_bytes(stages) +
         (kW4A16WgmmaWsSlots * (block_m + 4) + block_m + 64) * 4 + w4a16_wgmma_ws_epi_bytes(block_m, block_n, stages, nf4) +
         (nf4 ? 256 * (block_n == 256 ? 64 : 32) * 4 + 256 : 0);
}
CHORD_W4A16_HD constexpr const char* w4a16_wgmma_ws_config_error(int mode, int block_m, int block_n, int stages,
                                                                 bool nf4, bool zp = false, bool g128 = false) {
  return (block_m != kW4A16WgmmaWsBlockM && block_m != 32 && block_m != 48 && block_m != 64 && block_m != 96)
             ? "the warp-specialized WGMMA kernel has 128-token tiles (masked INT4: also 32, 48, 64, 96)"
         : (block_m != kW4A16WgmmaWsBlockM && (mode != kW4A16Masked || nf4))
             ? "the warp-specialized WGMMA kernel has 128-token tiles outside masked INT4 calls"
         : (block_n != 128 && block_n != 256) ? "BLOCK_N must be 128 or 256 (one or two m64 tiles per consumer)"
         : (stages < 3 || stages > 12)      ? "STAGES must be in [3, 12]"
         : (mode == kW4A16Contiguous && kW4A16ContiguousAlign % block_m != 0) ? "CONTIGUOUS needs 128-row alignment"
         : (w4a16_wgmma_ws_smem_bytes(block_m, block_n, stages, nf4, zp, g128) > 227 * 1024)
             ? "shared memory exceeds 227 KiB"
             : nullptr;
}

// Shape rules: N % BLOCK_N == 0, K % 64 == 0 (the packed layout already needs K % 64 == 0).
// INDEXED additionally needs block_size % BLOCK_M == 0 (runtime argument).
CHORD_W4A16_HD constexpr const char* w4a16_wgmma_shape_error(int n, int k, int block_n) {
  return (n <= 0 || n % block_n != 0)                ? "N must be a positive multiple of BLOCK_N"
         : (k <= 0 || k % kW4A16WgmmaBlockK != 0) ? "K must be a positive multiple of 64"
                                                    : nullptr;
}

}  // namespace chord
