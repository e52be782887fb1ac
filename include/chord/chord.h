/* chord: mixture-of-experts GEMM kernels with 4-bit weights and BF16 or FP16 activations.
 * C API. All pointers named *_dev are device pointers; `stream` is a CUstream (or
 * cudaStream_t; NULL = the legacy default stream) of the current CUDA context (another
 * context's stream is CHORD_ERROR_INVALID_ARGUMENT). A thread with no current context gets
 * the stream's context, or for the default stream device 0's primary context where the
 * process already uses it, made current as the CUDA runtime's first call on a thread would.
 * No entry point synchronizes the host, allocates device memory or reads device memory
 * from the host on a cache-hit call, so calls can be captured in a CUDA Graph; the one
 * exception is the first eager call of a decode shape, which times a few tiles on its own
 * inputs (the decode tile search, docs/tuning.md; never under capture; where that call's
 * routing is a warm-up's that no synthetic routing can stand in for, later eager calls, ever
 * further apart, read their routing back until one decides the shape).
 * Every function returns a chord_status_t; on failure chord_last_error() (thread-local)
 * names the bad argument and nothing has been launched. No operator works in place: an
 * output that overlaps another buffer of the call is CHORD_ERROR_INVALID_ARGUMENT. */
#ifndef CHORD_CHORD_H
#define CHORD_CHORD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CHORD_API_VERSION 1

#if defined(__GNUC__)
#define CHORD_EXPORT __attribute__((visibility("default")))
#else
#define CHORD_EXPORT
#endif

typedef enum chord_status {
  CHORD_SUCCESS = 0,
  CHORD_ERROR_INVALID_ARGUMENT = 1, /* bad shape, pointer, alignment, value */
  CHORD_ERROR_UNSUPPORTED = 2,      /* valid input this build/GPU does not support */
  CHORD_ERROR_NO_DRIVER = 3,        /* libcuda.so.1 missing or cuInit failed */
  CHORD_ERROR_CUDA = 4,             /* a CUDA driver call failed */
  CHORD_ERROR_COMPILE = 5,          /* NVRTC failed; the message has the log */
  CHORD_ERROR_ENVIRONMENT = 6,      /* a CHORD_* environment variable is invalid */
  CHORD_ERROR_INTERNAL = 7
} chord_status_t;

typedef void* chord_stream_t; /* CUstream */

/* Version of this header the library was built with (compare with CHORD_API_VERSION). */
CHORD_EXPORT int chord_api_version(void);
/* Library version string, e.g. "0.1.0". */
CHORD_EXPORT const char* chord_version(void);
/* Message of the last failed call on this thread ("" if none). */
CHORD_EXPORT const char* chord_last_error(void);
CHORD_EXPORT const char* chord_status_string(chord_status_t status);

/* INT4 group-32 dequantization: out[e][n][k] = (code - 8) * scale[e][n][k/32], the
 * product rounded to BF16. Shapes: E >= 0, N >= 0, K a multiple of 32 (a call with E, N or
 * K = 0 writes nothing and succeeds).
 *   codes_dev:   uint8 [E, N, K], one code (0..15) per byte (only the low nibble is read)
 *   packed_dev:  int32 [E, N, K/8], compressed-tensors pack-quantized form: element j of
 *                each group of 8 in bits 4j..4j+3, values stored with the +8 offset
 *   scales_dev:  bf16 [E, N, K/32]
 *   out_dev:     bf16 [E, N, K]
 * Alignment: out 16 bytes, codes 8, packed 4, scales 2. */
CHORD_EXPORT chord_status_t chord_int4_dequantize_codes(const void* codes_dev, const void* scales_dev,
                                                        void* out_dev, int64_t E, int64_t N, int64_t K,
                                                        chord_stream_t stream);
CHORD_EXPORT chord_status_t chord_int4_dequantize_compressed(const void* packed_dev, const void* scales_dev,
                                                             void* out_dev, int64_t E, int64_t N, int64_t K,
                                                             chord_stream_t stream);


/* ---------------------------------------------------------------------------------------
 * W4A16 grouped GEMM: INT4 weights, group 32 or 128 (packed once, on the GPU) x BF16 or FP16
 * activations, FP32 accumulation. One packed layout serves every mode.
 * docs/packed_layout.md describes it.
 * The weight's format names the 16-bit type of its scales, which is also the type of the
 * activations and outputs every INT4 operator below reads and writes:
 *   CHORD_FORMAT_INT4_G32       BF16 scales, BF16 activations / outputs
 *   CHORD_FORMAT_INT4_G32_FP16  FP16 scales, FP16 activations / outputs (GPTQ / AWQ
 *                               checkpoints keep their FP16 scales unrounded)
 * and likewise the zero-point and group-128 formats below (each names its scale type).
 * The activation pointers are untyped: passing FP16 data with a BF16 weight (or the reverse)
 * cannot be detected here and gives wrong numbers (the Python layer checks the pairing).
 * ------------------------------------------------------------------------------------- */

#define CHORD_W4A16_MAGIC 0x43573441u /* "CW4A" */
#define CHORD_FORMAT_INT4_G32 1
#define CHORD_FORMAT_INT4_G32_FP16 3
/* Asymmetric INT4 (AWQ, GPTQ sym=false, compressed-tensors symmetric=false): the same packed
 * weight, W = T((code - zp) * scale) with a zero point zp (0..15) per row and 32-k group. The
 * scales buffer holds 32-bit {scale, -(M + zp)} entries in T (M = 128 for BF16, 1024 for
 * FP16): chord_w4a16_zp_scale_bytes(), twice chord_w4a16_scale_bytes(). Packed by
 * chord_w4a16_pack_zp; every INT4 operator takes them. */
#define CHORD_FORMAT_INT4_G32_ZP 4      /* BF16 scales / activations / outputs */
#define CHORD_FORMAT_INT4_G32_ZP_FP16 5 /* FP16 scales / activations / outputs */
/* Group 128 (GPTQ / AWQ / compressed-tensors group 128): the same packed weight and the four
 * INT4 variants above with one scale (or {scale, bias} entry) per row and 128-k group: the
 * scales buffer is a quarter of the group-32 one, chord_w4a16_format_scale_bytes(). Tag
 * group_size 128; needs K % 128 == 0. Packed by chord_w4a16_pack / chord_w4a16_pack_zp with
 * CHORD_W4A16_SRC_GROUP_128; every INT4 operator takes them. */
#define CHORD_FORMAT_INT4_G128 6         /* BF16 scales / activations / outputs */
#define CHORD_FORMAT_INT4_G128_FP16 7    /* FP16 */
#define CHORD_FORMAT_INT4_G128_ZP 8      /* BF16, zero points */
#define CHORD_FORMAT_INT4_G128_ZP_FP16 9 /* FP16, zero points */

/* A packed weight: device buffers plus the tag every operator checks before launching. */
typedef struct chord_w4a16_weight {
  uint32_t magic;          /* CHORD_W4A16_MAGIC */
  uint32_t format;         /* CHORD_FORMAT_INT4_G32[_ZP][_FP16], CHORD_FORMAT_INT4_G128[_ZP][_FP16] or
                              CHORD_FORMAT_NF4 */
  uint32_t layout_version; /* chord_w4a16_layout_version() */
  uint32_t group_size;     /* 32 (128 for the CHORD_FORMAT_INT4_G128* formats, 64 for NF4) */
  int64_t experts, n, k;   /* logical weight [E, N, K] */
  void* weight_dev;        /* chord_w4a16_weight_bytes() bytes, 16-byte aligned */
  void* scales_dev;        /* chord_w4a16_format_scale_bytes(format, ...) bytes, 16-byte aligned */
} chord_w4a16_weight_t;

CHORD_EXPORT uint32_t chord_w4a16_layout_version(void);
/* Buffer sizes of a packed weight; -1 for a shape the operators reject (E in [1, 65536],
 * N a multiple of 16, K a multiple of 64, N and K <= 2^20). */
CHORD_EXPORT int64_t chord_w4a16_weight_bytes(int64_t E, int64_t N, int64_t K);
CHORD_EXPORT int64_t chord_w4a16_scale_bytes(int64_t E, int64_t N, int64_t K);
/* The scales buffer of the zero-point formats: E * N * K/32 entries of 4 bytes. */
CHORD_EXPORT int64_t chord_w4a16_zp_scale_bytes(int64_t E, int64_t N, int64_t K);
/* The scales buffer of any INT4 format: E * N * K/G entries (G = 32, or 128 for the
 * CHORD_FORMAT_INT4_G128* formats) of 2 bytes, 4 with zero points; -1 for another format or a
 * shape the format rejects (group 128: K % 128 != 0 too). */
CHORD_EXPORT int64_t chord_w4a16_format_scale_bytes(uint32_t format, int64_t E, int64_t N, int64_t K);
/* Rows each expert's segment is padded to in the contiguous mode. */
CHORD_EXPORT int64_t chord_w4a16_contiguous_alignment(void);

/* Packs checkpoint weights. src_format: CHORD_W4A16_SRC_CODES (0) = uint8 codes [E,N,K]
 * (one code per byte), CHORD_W4A16_SRC_COMPRESSED (1) = compressed-tensors int32 [E,N,K/8];
 * either OR CHORD_W4A16_SRC_SCALES_FP16 when scales_dev is FP16. scales_dev: bf16 (fp16 with
 * the flag) [E,N,K/32], stored unchanged. *weight gets format CHORD_FORMAT_INT4_G32
 * (CHORD_FORMAT_INT4_G32_FP16 with the flag). The caller allocates weight_out_dev /
 * scales_out_dev (sizes above: the same for both scale types); *weight is filled in.
 * Needs N % 16 == 0 and K % 64 == 0. */
#define CHORD_W4A16_SRC_CODES 0
#define CHORD_W4A16_SRC_COMPRESSED 1
#define CHORD_W4A16_SRC_SCALES_FP16 0x10
/* Group 128: scales_dev [E,N,K/128] (chord_w4a16_pack_zp: zero_points_dev [E,N,K/128] too),
 * K % 128 == 0; *weight gets the CHORD_FORMAT_INT4_G128* format of the same scale type and
 * zero points, and scales_out_dev must hold chord_w4a16_format_scale_bytes() of it. A coarser
 * group (a multiple of 128, or channel-wise with K % 128 == 0) is repeated per 128 by the
 * caller; group 64 is repeated per 32 (no flag). */
#define CHORD_W4A16_SRC_GROUP_128 0x20
CHORD_EXPORT chord_status_t chord_w4a16_pack(const void* src_dev, int src_format, const void* scales_dev, int64_t E,
                                             int64_t N, int64_t K, void* weight_out_dev, void* scales_out_dev,
                                             chord_w4a16_weight_t* weight, chord_stream_t stream);

/* chord_w4a16_pack with a zero point per (row, 32-k group): zero_points_dev uint8 [E, N, K/32],
 * one value 0..15 per byte (only the low nibble is read; an AWQ / GPTQ group of 64 is repeated
 * per 32; group 128: CHORD_W4A16_SRC_GROUP_128, [E, N, K/128]). src_format and scales_dev as
 * for chord_w4a16_pack. *weight gets format
 * CHORD_FORMAT_INT4_G32_ZP (CHORD_FORMAT_INT4_G32_ZP_FP16 with CHORD_W4A16_SRC_SCALES_FP16);
 * scales_out_dev must hold chord_w4a16_zp_scale_bytes() bytes (group 128: the
 * CHORD_FORMAT_INT4_G128_ZP* format, chord_w4a16_format_scale_bytes() of it). A separate entry point (not a
 * flag of chord_w4a16_pack) because the zero points are one more pointer: the existing entry
 * point and its ABI are unchanged. */
CHORD_EXPORT chord_status_t chord_w4a16_pack_zp(const void* src_dev, int src_format, const void* scales_dev,
                                                const void* zero_points_dev, int64_t E, int64_t N, int64_t K,
                                                void* weight_out_dev, void* scales_out_dev,
                                                chord_w4a16_weight_t* weight, chord_stream_t stream);

/* The logical weight T [E, N, K] = T((code - 8) * scale), one rounding; T = bf16 for
 * CHORD_FORMAT_INT4_G32, fp16 for CHORD_FORMAT_INT4_G32_FP16. Zero-point formats:
 * T((code - zp) * scale), the difference exact, one rounding. Group-128 formats: the same with
 * the scale (and zero point) of the element's 128-k group. */
CHORD_EXPORT chord_status_t chord_w4a16_dequantize(const chord_w4a16_weight_t* weight, void* out_dev,
                                                   chord_stream_t stream);

/* In the four modes below a and out are T, the weight format's type (see above).
 * Contiguous: a [m, K], m_indices [m] int32 (expert per row, -1 = padding row; each
 * expert's segment starts at a multiple of chord_w4a16_contiguous_alignment()).
 * out [m, N]; padding rows are left untouched. */
CHORD_EXPORT chord_status_t chord_w4a16_contiguous(const void* a_dev, int64_t m, const chord_w4a16_weight_t* weight,
                                                   const int32_t* m_indices_dev, void* out_dev, chord_stream_t stream);

/* Masked: a [G, max_m, K], masked_m [G] int32 (valid rows of group g, expert g), out
 * [G, max_m, N]; rows past masked_m[g] untouched. expected_m: host hint, the mean rows per
 * group (<= 0 means max_m); it picks the config and sizes the grid, whose CTAs take the groups'
 * non-empty tiles in turn, so a hint below the rows costs time, never rows. On the kernels that
 * take one tile per CTA (sm_90a's one-role WGMMA tiles, 32-128 rows; the 256-thread mma.sync
 * tiles) the grid covers all max_m rows of every group, so there a max_m far above the rows
 * costs time. */
CHORD_EXPORT chord_status_t chord_w4a16_masked(const void* a_dev, int64_t G, int64_t max_m,
                                               const chord_w4a16_weight_t* weight, const int32_t* masked_m_dev,
                                               int64_t expected_m, void* out_dev, chord_stream_t stream);

/* Offsets (torch._grouped_mm convention): a [S, K] sorted by expert, offsets [E] int32
 * cumulative end rows (offsets[E-1] <= S), out [S, N]. */
CHORD_EXPORT chord_status_t chord_w4a16_offsets(const void* a_dev, int64_t S, const chord_w4a16_weight_t* weight,
                                                const int32_t* offsets_dev, void* out_dev, chord_stream_t stream);

/* Indexed (vLLM moe_align_block_size): a [M, K]; sorted_ids [capacity] route ids
 * (token*top_k + k; ids >= M*top_k are padding); expert_ids [ceil(capacity/block_size)]
 * (-1 = expert not on this rank); num_tokens_padded [1] valid prefix of sorted_ids.
 * Input row = id / top_k (down projection: top_k = 1 with a [M*top_k, K]).
 * out [M*top_k, N]: only valid routes' rows are written. block_size: the alignment the
 * routing was built with (a multiple of 8). */
CHORD_EXPORT chord_status_t chord_w4a16_indexed(const void* a_dev, int64_t M, const chord_w4a16_weight_t* weight,
                                                const int32_t* sorted_ids_dev, int64_t capacity,
                                                const int32_t* expert_ids_dev, const int32_t* num_tokens_padded_dev,
                                                int64_t top_k, int64_t block_size, void* out_dev,
                                                chord_stream_t stream);

/* ---------------------------------------------------------------------------------------
 * NF4 weights (bitsandbytes format: 64-element blocks along K, high nibble = first element,
 * absmax FP32 or double-quantized). Packed once on the GPU into a chord_w4a16_weight_t with
 * format CHORD_FORMAT_NF4 (docs/packed_layout.md, "NF4"): the same fragment order as INT4
 * with the absmax resolved to FP32 at pack time. INT4 operators reject NF4 weights and the
 * NF4 operators reject INT4 weights (either scale type).
 * ------------------------------------------------------------------------------------- */

#define CHORD_FORMAT_NF4 2
#define CHORD_DTYPE_BF16 0
#define CHORD_DTYPE_FP16 1

CHORD_EXPORT uint32_t chord_nf4_layout_version(void);
/* Bytes of the packed weight (E*N*K/2) and of the packed FP32 absmax (E*N*K/16); -1 for a
 * shape chord_nf4_pack rejects (E in [1, 65536], N a multiple of 16, K of 64, N and K <= 2^20,
 * E*N*K <= 2^40), so a negative or overflowed size is never returned. */
CHORD_EXPORT int64_t chord_nf4_weight_bytes(int64_t E, int64_t N, int64_t K);
CHORD_EXPORT int64_t chord_nf4_absmax_bytes(int64_t E, int64_t N, int64_t K);

/* Packs a bitsandbytes QuantState of experts [E, N, K] (blocksize 64):
 *   packed_dev         uint8 [E*N*K/2] (quantize_4bit's output, quant_type "nf4")
 *   nested_absmax_dev  NULL: absmax_dev is FP32 [E*N*K/64] (compress_statistics=False);
 *                      else absmax_dev is uint8 [E*N*K/64], nested_absmax_dev FP32
 *                      [ceil(E*N*K/64 / 256)] (state2.absmax), nested_code_dev FP32 [256]
 *                      (state2.code) and offset the FP32 offset (compress_statistics=True),
 *                      which must be finite (CHORD_ERROR_INVALID_ARGUMENT otherwise).
 * The absmax is resolved once, in FP32, as dequantize_4bit does: code[q] * absmax2 + offset.
 * weight_out_dev / absmax_out_dev: caller-allocated (sizes above), 16-byte aligned; *weight
 * is filled in. Needs N % 16 == 0 and K % 64 == 0 (the GEMM also needs N, K multiples of
 * its tile: N % 16 and K % 64 always suffice for the configs it picks; see the error). */
CHORD_EXPORT chord_status_t chord_nf4_pack(const void* packed_dev, const void* absmax_dev,
                                           const void* nested_absmax_dev, const void* nested_code_dev, float offset,
                                           int64_t E, int64_t N, int64_t K, void* weight_out_dev,
                                           void* absmax_out_dev, chord_w4a16_weight_t* weight,
                                           chord_stream_t stream);

/* The logical weight [E, N, K] in dtype (CHORD_DTYPE_BF16 / _FP16), bit-identical to
 * bitsandbytes' dequantize_4bit: dtype(table[code] * absmax), the product in FP32. */
CHORD_EXPORT chord_status_t chord_nf4_dequantize(const chord_w4a16_weight_t* weight, int dtype, void* out_dev,
                                                 chord_stream_t stream);

/* Grouped GEMM, offsets convention (torch._grouped_mm): x [S, K] in dtype sorted by expert,
 * offsets [E] int32 cumulative end rows (offsets[E-1] <= S; rows past it are not written),
 * out [S, N] in dtype: out[rows of e] = x[rows of e] @ W[e]^T with W the dequantized weight,
 * FP32 accumulation. Prefill tiles (sm_90a WGMMA) use W exactly as chord_nf4_dequantize gives
 * it; the mma.sync tiles round the table value (and on wide tiles the absmax) to dtype first,
 * a difference of a few 1e-3 relative (docs/packed_layout.md, "NF4"). */
CHORD_EXPORT chord_status_t chord_nf4_offsets(const void* x_dev, int dtype, int64_t S,
                                              const chord_w4a16_weight_t* weight, const int32_t* offsets_dev,
                                              void* out_dev, chord_stream_t stream);

/* The MoE activation pass between the gate_up and down GEMMs, in one kernel:
 * out[dst, j] = f(a, b), f the CUDA C++ expression `expression` in `float a, b` (compiled
 * into the kernel with NVRTC on first use; the text is part of the kernel's cache key),
 * evaluated in FP32 from the 16-bit inputs and rounded once to dtype.
 *   kind CHORD_ACTIVATION_UNARY: a = in[r, j], n = in_cols (b is 0);
 *        CHORD_ACTIVATION_BINARY_SPLIT: a = in[r, j], b = in[r, n + j], n = in_cols / 2;
 *        CHORD_ACTIVATION_BINARY_INTERLEAVED: a = in[r, 2j], b = in[r, 2j + 1], n = in_cols / 2.
 * in [rows, in_cols], out [out_rows, n], both dtype, n a multiple of 8, not overlapping.
 * Rows: dst = r (out_rows >= rows); or, with scatter_idx [rows, scatter_cols] int32, every
 * scatter_idx[r, c] in [0, out_rows) receives row r (others are skipped); or, with group_rows [groups] int32, rows are
 * `groups` equal blocks and row i of block g is written only if i < group_rows[g].
 * num_valid (one int32 on the device, may be NULL): rows (or, with scatter_idx,
 * destinations) >= *num_valid are skipped. Rows not written keep their contents. No host
 * synchronization. The expression may not contain '#', the digraphs %: <% %>, quotes,
 * backslashes, comments or unmatched brackets (CHORD_ERROR_INVALID_ARGUMENT); one that does not compile returns
 * CHORD_ERROR_COMPILE with NVRTC's log in chord_last_error(). */
#define CHORD_ACTIVATION_UNARY 0
#define CHORD_ACTIVATION_BINARY_SPLIT 1
#define CHORD_ACTIVATION_BINARY_INTERLEAVED 2

CHORD_EXPORT chord_status_t chord_moe_activation(int kind, const char* expression, int dtype, const void* in_dev,
                                                 int64_t rows, int64_t in_cols, void* out_dev, int64_t out_rows,
                                                 const int32_t* scatter_idx_dev, int64_t scatter_cols,
                                                 const int32_t* group_rows_dev, int64_t groups,
                                                 const int32_t* num_valid_dev, chord_stream_t stream);

/* The W4A16 tuning table of a shape (profile detected from N, K) in the (min_m, max_m,
 * config) form vLLM's Humming backend reads, M in tokens, as JSON:
 *   [[min_m, max_m, {"block_size_m": .., "block_m": .., "block_n": .., ...}], ...]
 * block_size_m is the routing alignment to pass to moe_align_block_size; the kernel uses a
 * BLOCK_M dividing it for both projections (the other fields: the INT4 tile it runs for this
 * N, K). arch: "sm_90a" etc. (NULL = "sm_90a").
 * Writes at most `capacity` bytes including the NUL; returns the full length (excluding
 * the NUL); 0 (and an empty string) when no table holds the shape, so the caller uses its
 * own rule; -1 with chord_last_error() set for bad arguments. */
CHORD_EXPORT int64_t chord_w4a16_tuning_json(const char* arch, int64_t E, int64_t N, int64_t K, int64_t top_k,
                                             char* buffer, int64_t capacity);

/* The kernel that served the calling thread's last W4A16 GEMM call that got to its launch (any
 * mode, INT4 or NF4; a call refused before it leaves the previous name),
 * named as `chord config` names it: the tile the call ran, which the decode tile search may
 * have chosen over the rule's (docs/tuning.md); the call launched it unless it had no rows.
 * Per thread, no GPU work. Writes at most `capacity` bytes including the NUL; returns the full
 * length (excluding the NUL); 0 (and an empty string) before the thread's first such call;
 * -1 with chord_last_error() set when buffer is NULL with capacity > 0 or capacity < 0. */
CHORD_EXPORT int64_t chord_w4a16_last_kernel(char* buffer, int64_t capacity);

/* Routing validation. With CHORD_VALIDATE_ROUTING=1 every W4A16 call first enqueues a small
 * check of its device routing tensors (no host sync) that records the first violation in
 * the current context. chord_routing_check_report() synchronizes the context, returns and
 * clears it: CHORD_SUCCESS when clean, CHORD_ERROR_INVALID_ARGUMENT with the details in
 * chord_last_error() and *report otherwise. report may be NULL. */
typedef struct chord_routing_report {
  int32_t violation; /* 0 = none; see chord_last_error() for the text */
  int32_t index;     /* element of the routing tensor */
  int32_t value;     /* its value */
  int32_t mode;      /* 0 contiguous, 1 masked, 2 offsets, 3 indexed */
} chord_routing_report_t;
CHORD_EXPORT chord_status_t chord_routing_check_report(chord_routing_report_t* report);

/* JIT statistics of this process (for tests and tuning). */
typedef struct chord_jit_stats {
  uint64_t nvrtc_compiles;    /* NVRTC invocations */
  uint64_t disk_hits;         /* cubins loaded from the disk cache */
  uint64_t disk_rebuilds;     /* corrupt or truncated entries rebuilt */
  uint64_t memory_hits;       /* launches served by the in-memory memo */
} chord_jit_stats_t;
CHORD_EXPORT void chord_get_jit_stats(chord_jit_stats_t* stats);

#ifdef __cplusplus
}
#endif

#endif /* CHORD_CHORD_H */
