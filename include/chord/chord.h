/* chord: mixture-of-experts GEMM kernels with 4-bit weights and BF16 activations.
 * C API. All pointers named *_dev are device pointers; `stream` is a CUstream (or
 * cudaStream_t; NULL = the legacy default stream) of the current CUDA context.
 * No entry point synchronizes the host, allocates device memory or reads device memory
 * from the host on a cache-hit call, so calls can be captured in a CUDA Graph.
 * Every function returns a chord_status_t; on failure chord_last_error() (thread-local)
 * names the bad argument and nothing has been launched. */
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
 * product rounded to BF16. Shapes: E >= 1, N >= 1, K a positive multiple of 32.
 *   codes_dev:   uint8 [E, N, K], one code (0..15) per byte (only the low nibble is read)
 *   packed_dev:  int32 [E, N, K/8], compressed-tensors pack-quantized form: element j of
 *                each group of 8 in bits 4j..4j+3, values stored with the +8 offset
 *   scales_dev:  bf16 [E, N, K/32]
 *   out_dev:     bf16 [E, N, K]
 * All pointers 16-byte aligned (scales 2-byte aligned). */
CHORD_EXPORT chord_status_t chord_int4_dequantize_codes(const void* codes_dev, const void* scales_dev,
                                                        void* out_dev, int64_t E, int64_t N, int64_t K,
                                                        chord_stream_t stream);
CHORD_EXPORT chord_status_t chord_int4_dequantize_compressed(const void* packed_dev, const void* scales_dev,
                                                             void* out_dev, int64_t E, int64_t N, int64_t K,
                                                             chord_stream_t stream);

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
