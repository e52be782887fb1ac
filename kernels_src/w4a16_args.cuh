// Arguments, shape rules and launch geometry of the W4A16 grouped MoE GEMM family
// (INT4 group-32 weights x BF16 activations) and of its pack / unpack kernels.
//
// Shared verbatim by host C++ (g++ -std=c++17, no CUDA headers) and device code (NVRTC,
// no system headers): only int, unsigned int, long long, void pointers and the opaque TMA map
// appear here.
// The packed layout these arguments refer to is described in docs/packed_layout.md.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define CHORD_W4A16_HD __host__ __device__
#else
#define CHORD_W4A16_HD
#endif

namespace chord {

// ---------------------------------------------------------------------------------------
// Modes. The value is the MODE template argument of w4a16_gemm_body.
// ---------------------------------------------------------------------------------------
enum W4A16Mode : int {
  kW4A16Contiguous = 0,  // A [m, K], m_indices [m] (expert per row, -1 = padding row)
  kW4A16Masked = 1,      // A [G, max_m, K], masked_m [G]; out [G, max_m, N]
  kW4A16Offsets = 2,     // A [S, K] sorted by expert, offsets [E] cumulative end rows
  kW4A16Indexed = 3,     // vLLM moe_align_block_size: sorted_ids / expert_ids / num_tokens_padded
};

// Contiguous mode: every expert's segment of A must start at a multiple of this many rows
// (pad with m_indices = -1). Every legal BLOCK_M divides it, so one tile never spans two
// experts whatever config the resolver picks.
constexpr int kW4A16ContiguousAlign = 128;

// Packed layout granules (docs/packed_layout.md): a weight "chunk" is one 16 (n) x 64 (k)
// block = 32 lanes x 16 bytes; scales are packed [E, K/32, N] with rows permuted in 16s.
constexpr int kW4A16GroupSize = 32;
constexpr int kW4A16Group128 = 128;  // the group-128 kinds' scale group (w4a16_scale_group)
constexpr int kW4A16PackN = 16;  // the packed weight needs N % 16 == 0
constexpr int kW4A16PackK = 64;  // the packed weight needs K % 64 == 0
constexpr unsigned int kW4A16LayoutVersion = 1;

// A TMA tensor map (the driver's CUtensorMap: 128 opaque bytes, 64-byte aligned), filled on the
// host by cuTensorMapEncodeTiled; the kernel passes its parameter-space address to the copy.
struct alignas(64) W4A16TmaMap {
  unsigned long long opaque[16];
};

// ---------------------------------------------------------------------------------------
// GEMM arguments (passed by value as a __grid_constant__ kernel parameter).
// All routing tensors are int32 device tensors read on the device only.
// Unused pointers may be null. Strides are in elements (BF16) and must be multiples of 8.
// ---------------------------------------------------------------------------------------
struct W4A16Args {
  const void* a;             // bf16, rows of K (row stride lda)
  const void* w;             // packed weight, E * N * K / 2 bytes (w4a16 layout v1)
  const void* scales;        // packed scales, bf16 [E, K/32, N] (row-permuted, see docs)
  void* out;                 // bf16, rows of N (row stride ldc)
  const void* m_indices;     // CONTIGUOUS: int32 [a_rows]
  const void* masked_m;      // MASKED:     int32 [num_groups]
  const void* offsets;       // OFFSETS:    int32 [num_experts], cumulative END rows
  const void* sorted_ids;    // INDEXED:    int32 [capacity]
  const void* expert_ids;    // INDEXED:    int32 [ceil(capacity / block_size)]
  const void* num_tokens_padded;  // INDEXED: int32 [1], valid prefix of sorted_ids
  long long lda;             // activation row stride (elements), usually K
  long long ldc;             // output row stride (elements), usually N
  int n;                     // weight rows (output columns); N % BLOCK_N == 0
  int k;                     // reduction dim; K % BLOCK_K == 0
  int num_experts;           // E of the packed weight (expert ids outside [0, E) are skipped)
  int a_rows;                // CONTIGUOUS: m; OFFSETS: S; INDEXED: M (tokens); MASKED: unused
  int num_groups;            // MASKED: G (<= num_experts; group g uses expert g)
  int max_m;                 // MASKED: rows per group in A / out
  int top_k;                 // INDEXED: input row = route id / top_k (down proj: 1)
  int block_size;            // INDEXED: vLLM alignment block; must be a multiple of BLOCK_M
  int capacity;              // INDEXED: length of sorted_ids (allocated, >= valid prefix)
  int expected_m;            // MASKED: host hint, mean valid rows per group (<= 0: max_m); sizes
                             // the grid (w4a16_masked_tiles), never which rows are computed
  int mode;                  // W4A16Mode, informational (the kernel is specialised on MODE)
  // The warp-specialized kernel in contiguous / masked / offsets mode (w4a16_tma_activations):
  // A as rows of K, w4a16_a_total_rows rows, BLOCK_M x 64-element boxes with the 128-byte swizzle.
  W4A16TmaMap a_map;
  // The warp-specialized kernel: the packed weight and scales (w4a16_weight_map_shape,
  // w4a16_scale_map_shape for its BLOCK_N).
  W4A16TmaMap w_map;
  W4A16TmaMap s_map;
};

// Rows of A as one [rows, K] matrix (row stride lda): MASKED holds G groups of max_m rows.
CHORD_W4A16_HD constexpr long long w4a16_a_total_rows(int mode, int a_rows, int num_groups, int max_m) {
  return mode == kW4A16Masked ? (long long)num_groups * max_m : a_rows;
}

// The two checkpoint forms of INT4 codes, read by the pack kernels and by int4_dequant. The
// values are the C API's src_format (CHORD_W4A16_SRC_*) and the kernels' template argument.
enum Int4SourceFormat : int {
  kInt4Codes = 0,       // uint8 [rows, K], one code 0..15 per byte
  kInt4Compressed = 1,  // int32 [rows, K/8], compressed-tensors (element j in bits 4j..4j+3)
};

// GPU pack / unpack arguments.
struct W4A16PackArgs {
  const void* src;         // codes (uint8) or compressed words (int32), see Int4SourceFormat
  const void* src_scales;  // bf16 [E, N, K/G] (G = 32; the group-128 kernels: 128)
  void* dst;               // packed weight, E * N * K / 2 bytes
  void* dst_scales;        // packed scales, bf16 [E, K/G, N]
  int num_experts;
  int n;                   // N % 16 == 0
  int k;                   // K % 64 == 0
  int pad_;
};

// The zero-point pack kernels: W4A16PackArgs plus the zero points, uint8 [E, N, K/G], one
// 0..15 per byte (a struct of its own so the other pack kernels' parameters stay as they are;
// G: the kernel's group, 32 or 128, as for src_scales and dst_scales).
struct W4A16PackZpArgs {
  W4A16PackArgs base;      // dst_scales: 32-bit {scale, -(M + zp)} pairs [E, K/G, N]
  const void* zero_points;
};

struct W4A16UnpackArgs {
  const void* w;           // packed weight
  const void* scales;      // packed scales
  void* out;               // bf16 [E, N, K], dequantized: bf16((code - 8) * scale)
  int num_experts;
  int n;
  int k;
  int pad_;
};

// ---------------------------------------------------------------------------------------
// Main-loop variants. STAGED: weights, scales and activations all go through the cp.async
// shared-memory ring (prefill: WARPS_M > 1 warps share each weight fragment). DIRECT
// (decode): each warp loads its own weight fragments and scales from global memory straight
// into registers, one k-block ahead (the packed words are already in fragment order), and
// only the activation tile, shared by all warps, goes through the shared-memory ring.
// ---------------------------------------------------------------------------------------
constexpr int kW4A16PathStaged = 0;
constexpr int kW4A16PathDirect = 1;
// The JIT names a config by (BLOCK_M, BLOCK_N, BLOCK_K, STAGES, WARPS): STAGES == 2 at a decode
// tile (BLOCK_M <= 32, one warp along M) selects the direct path, which then fills the shared
// memory of two full stages with up to four activation stages. Measured on the H200
// (lab/kernel_check): since the staged copies issue as straight-line
// code, staged leads on every decode shape timed (Qwen3 1-8 tokens included); no tuning row
// picks the direct path now, the heuristic's small-expert fallback and CHORD_W4A16_STAGES=2
// still can, and kernel_check keeps it checked.
CHORD_W4A16_HD constexpr int w4a16_default_path(int block_m, int warps_m, int stages) {
  return block_m <= 32 && warps_m == 1 && stages == 2 ? kW4A16PathDirect : kW4A16PathStaged;
}

// ---------------------------------------------------------------------------------------
// Host-callable geometry. Threads = 32 * WARPS_M * WARPS_N.
// ---------------------------------------------------------------------------------------
struct W4A16Dim3 {
  unsigned int x, y, z;
};

CHORD_W4A16_HD constexpr int w4a16_threads(int warps_m, int warps_n) { return 32 * warps_m * warps_n; }

// Whether a mma.sync tile can loop over the masked compact schedule's tiles (its MASKED_LOOP form,
// W4A16Tiles<kW4A16Masked>): the tiles of fewer than 256 threads. The 256-thread tiles are compiled
// at the 128-register cap of two CTAs per SM, where the loop's called copy of the tile spills
// (32-80 bytes against 24); their masked grids cover the buffer, as the one-role WGMMA kernel's
// do.
CHORD_W4A16_HD constexpr bool w4a16_gemm_tile_loop(int warps_m, int warps_n) {
  return w4a16_threads(warps_m, warps_n) < 256;
}

// Shared memory header: src rows, dst rows, scheduler scratch (64 ints); 128-byte aligned.
CHORD_W4A16_HD constexpr int w4a16_smem_header_bytes(int block_m) {
  return ((2 * block_m + 64) * 4 + 127) / 128 * 128;
}
// Scale rows of a k block of BLOCK_K: one per 32 k, or with group-128 weights (g128) one per
// 128 k and at least one (a 64-k block reads its 128-group's row).
CHORD_W4A16_HD constexpr int w4a16_scale_rows(int block_k, bool g128 = false) {
  return g128 ? (block_k >= 128 ? block_k / 128 : 1) : block_k / 32;
}
// One pipeline stage: activation tile + weight tile + scale tile (each a multiple of 16 B).
// zp: zero-point weights, whose scale entries are 32-bit {scale, bias} pairs; g128: group-128
// weights (w4a16_scale_rows).
CHORD_W4A16_HD constexpr int w4a16_smem_stage_bytes(int block_m, int block_n, int block_k, bool zp = false,
                                                    bool g128 = false) {
  return block_m * block_k * 2 + block_n * block_k / 2 + w4a16_scale_rows(block_k, g128) * block_n * (zp ? 4 : 2);
}
// Epilogue staging tile [BLOCK_M][BLOCK_N + 8] bf16 (reuses the pipeline buffers).
CHORD_W4A16_HD constexpr int w4a16_smem_epilogue_bytes(int block_m, int block_n) {
  return block_m * (block_n + 8) * 2;
}
// NF4 weights: the decode's pair table (w4a16_decode.cuh), 256 entries x 32 banks x 4 bytes,
// placed after everything else.
constexpr int kW4A16NF4TableBytes = 256 * 32 * 4;
// Dynamic shared memory the GEMM kernel needs (the launcher opts in above 48 KiB); nf4: NF4
// weights (W4A16WeightKind other than INT4); zp: zero-point weights (twice the scale tile);
// g128: group-128 weights (w4a16_scale_rows).
CHORD_W4A16_HD constexpr int w4a16_smem_bytes(int block_m, int block_n, int block_k, int stages, bool nf4 = false,
                                              bool zp = false, bool g128 = false) {
  return w4a16_smem_header_bytes(block_m) +
         (w4a16_smem_stage_bytes(block_m, block_n, block_k, zp, g128) * stages >
                  w4a16_smem_epilogue_bytes(block_m, block_n)
              ? w4a16_smem_stage_bytes(block_m, block_n, block_k, zp, g128) * stages
              : w4a16_smem_epilogue_bytes(block_m, block_n)) +
         (nf4 ? kW4A16NF4TableBytes : 0);
}

// Why a config is invalid, or nullptr. Rules the template static_asserts as well. nf4: NF4
// weights (the pair table); split_k: CTAs per tile, whose fp32 partial tile must fit the
// pipeline's shared memory; zp: zero-point weights (their larger scale tile); g128: group-128
// weights (their smaller one).
CHORD_W4A16_HD constexpr const char* w4a16_config_error(int block_m, int block_n, int block_k, int stages,
                                                        int warps_m, int warps_n, bool nf4 = false,
                                                        int split_k = 1, bool zp = false, bool g128 = false) {
  return (block_m != 8 && block_m != 16 && block_m != 32 && block_m != 64 && block_m != 128)
             ? "BLOCK_M must be 8, 16, 32, 64 or 128"
         : (block_k != 64 && block_k != 128 && block_k != 256) ? "BLOCK_K must be 64, 128 or 256"
         : (block_n < 16 || block_n > 256 || block_n % 16 != 0) ? "BLOCK_N must be a multiple of 16 in [16, 256]"
         : (stages < 2 || stages > 8)                            ? "STAGES must be in [2, 8]"
         : (warps_m < 1 || warps_n < 1 || warps_m * warps_n > 16) ? "WARPS_M * WARPS_N must be in [1, 16]"
         : (block_m % (8 * warps_m) != 0)                        ? "BLOCK_M / WARPS_M must be a multiple of 8"
         : (block_n % (16 * warps_n) != 0)                       ? "BLOCK_N / WARPS_N must be a multiple of 16"
         : (w4a16_smem_bytes(block_m, block_n, block_k, stages, nf4, zp, g128) > 227 * 1024)
             ? "shared memory exceeds 227 KiB"
         : (split_k != 1 && split_k != 2 && split_k != 4 && split_k != 8) ? "split-K must be 1, 2, 4 or 8"
         : (split_k > 1 &&
            block_m * block_n * 4 > stages * w4a16_smem_stage_bytes(block_m, block_n, block_k, zp, g128))
             ? "split-K needs the fp32 partial tile (BLOCK_M x BLOCK_N x 4 bytes) to fit the pipeline stages"
             : nullptr;
}

// Why a CTA cannot reduce n_run consecutive n blocks of its tile through one copy ring (the
// mma.sync staged main loop, w4a16_gemm_tile), or nullptr: 1, 2, 4 or 8 n blocks of INT4
// weights (NF4's runs are not checked on a GPU), whole tiles (a run's blocks are not split
// along K).
CHORD_W4A16_HD constexpr const char* w4a16_n_run_error(int n_run, int path, int split_k, bool nf4 = false) {
  return (n_run != 1 && n_run != 2 && n_run != 4 && n_run != 8) ? "an n-block run must be 1, 2, 4 or 8 n blocks"
         : n_run == 1                                           ? nullptr
         : nf4                      ? "n-block runs serve the INT4 weight kinds"
         : path != kW4A16PathStaged ? "n-block runs need the staged main loop (STAGES > 2 at decode tiles)"
         : split_k != 1             ? "n-block runs and split-K are two schedules of one tile"
                                    : nullptr;
}

// Why a shape is unsupported by a config, or nullptr.
CHORD_W4A16_HD constexpr const char* w4a16_shape_error(int n, int k, int block_n, int block_k) {
  return (n <= 0 || n % block_n != 0)   ? "N must be a positive multiple of BLOCK_N"
         : (k <= 0 || k % block_k != 0) ? "K must be a positive multiple of BLOCK_K"
                                        : nullptr;
}

// Offsets mode: sum over experts of ceil(rows_e / BLOCK_M) <= S / BLOCK_M + (experts with
// rows), at most min(E, S) of them, and never more tiles than rows. The tight bound matters
// at decode: 1 token x top-8 over 128 experts is 8 tiles, where S/BM + E would launch 129
// tiles' CTAs that only scan the offsets and exit.
CHORD_W4A16_HD constexpr long long w4a16_offsets_tiles(int block_m, int a_rows, int num_experts) {
  return a_rows <= 0 ? 0
         : (long long)a_rows / block_m + (num_experts < a_rows ? num_experts : a_rows) < a_rows
             ? (long long)a_rows / block_m + (num_experts < a_rows ? num_experts : a_rows)
             : a_rows;
}

// Masked mode: the counts are on the device, so the grid is sized from the host's hint of the
// mean valid rows per group. The CTAs take the non-empty tiles in group order (tile slot s, then
// s + slots, ...: W4A16Tiles<kW4A16Masked>), so a grid smaller than the tiles is still correct,
// only slower; one larger than them has CTAs that find no tile. With the mean right, sum over
// groups of ceil(rows / BM) <= G * mean / BM + G: one pass. Never more than the buffer's
// G * ceil(max_m / BM) tiles (expected_m <= 0 asks for those). vLLM's batched buffers hold
// thousands of rows per group for a few valid ones: sizing by max_m launched CTAs by the
// thousand that only read a count and exit.
CHORD_W4A16_HD constexpr long long w4a16_masked_tiles(int block_m, int num_groups, int max_m, int expected_m) {
  return expected_m > 0 && ((long long)num_groups * expected_m + block_m - 1) / block_m + num_groups <
                               (long long)num_groups * ((max_m + block_m - 1) / block_m)
             ? ((long long)num_groups * expected_m + block_m - 1) / block_m + num_groups
             : (long long)num_groups * ((max_m + block_m - 1) / block_m);
}

// Whether the masked grid sized by the hint is the compact schedule's (W4A16Tiles<kW4A16Masked>):
// the hint asks for fewer tiles than the buffer holds. expected_m <= 0 is tested first: a
// buffer-wide grid's CTAs past the rows do little else before they exit.
CHORD_W4A16_HD constexpr bool w4a16_masked_compact(int block_m, int num_groups, int max_m, int expected_m) {
  return expected_m > 0 && w4a16_masked_tiles(block_m, num_groups, max_m, expected_m) <
                               w4a16_masked_tiles(block_m, num_groups, max_m, 0);
}

// Number of M tiles (an upper bound where the mode's tiling is data dependent; masked: the
// grid's slots, w4a16_masked_tiles).
CHORD_W4A16_HD constexpr long long w4a16_m_tiles(int mode, int block_m, int a_rows, int num_experts,
                                                 int num_groups, int max_m, int capacity, int expected_m = 0) {
  return mode == kW4A16Contiguous ? (a_rows + block_m - 1) / block_m
         : mode == kW4A16Masked   ? w4a16_masked_tiles(block_m, num_groups, max_m, expected_m)
         : mode == kW4A16Offsets  ? w4a16_offsets_tiles(block_m, a_rows, num_experts)
         : mode == kW4A16Indexed  ? (capacity + block_m - 1) / block_m
                                  : 0;
}

// CTAs along N of one tile: N / BLOCK_N n blocks, n_run consecutive ones per CTA (the last CTA
// takes what is left).
CHORD_W4A16_HD constexpr int w4a16_n_runs(int n, int block_n, int n_run) {
  return (n / block_n + n_run - 1) / n_run;
}

// Grid of the GEMM: 1-D, blockIdx.x = m_tile * n_runs + n run (n fastest, so the CTAs resident
// together share an activation tile and L2 serves its re-reads); n_run: n blocks per CTA (1
// but for the mma.sync n-block runs, w4a16_n_run_error). x == 0 means there is nothing to do:
// launch nothing. x must stay below 2^31.
CHORD_W4A16_HD constexpr W4A16Dim3 w4a16_grid(int mode, int block_m, int block_n, int n, int a_rows,
                                              int num_experts, int num_groups, int max_m, int capacity,
                                              int n_run = 1, int expected_m = 0) {
  return W4A16Dim3{(unsigned int)(w4a16_m_tiles(mode, block_m, a_rows, num_experts, num_groups, max_m,
                                                capacity, expected_m) *
                                  w4a16_n_runs(n, block_n, n_run)),
                   1u, 1u};
}
CHORD_W4A16_HD constexpr W4A16Dim3 w4a16_grid(const W4A16Args& args, int block_m, int block_n, int n_run = 1) {
  return w4a16_grid(args.mode, block_m, block_n, args.n, args.a_rows, args.num_experts, args.num_groups,
                    args.max_m, args.capacity, n_run, args.expected_m);
}

// Pack / unpack: 256 threads, grid-stride loops; any grid works, this one covers the work.
constexpr int kW4A16PackThreads = 256;
CHORD_W4A16_HD constexpr W4A16Dim3 w4a16_pack_grid(int num_experts, int n, int k) {
  return W4A16Dim3{(unsigned int)(((long long)num_experts * n * (k / 8) + kW4A16PackThreads - 1) /
                                          kW4A16PackThreads >
                                          65535LL * 16
                                      ? 65535LL * 16
                                      : ((long long)num_experts * n * (k / 8) + kW4A16PackThreads - 1) /
                                            kW4A16PackThreads),
                   1u, 1u};
}

}  // namespace chord
