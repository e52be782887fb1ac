// chord.h: every entry point converts exceptions into a status and a thread-local message.
#include "chord/chord.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "jit/compiler.hpp"
#include "core/error.hpp"
#include "jit/families/activation.hpp"
#include "runtime/runtime.hpp"
#include "ops/activation.hpp"
#include "ops/int4_dequantize.hpp"
#include "ops/nf4.hpp"
#include "ops/routing_check.hpp"
#include "tuning_tables/tuning_table.hpp"
#include "ops/w4a16.hpp"
#include "kernels_src/w4a16_args.cuh"

#ifndef CHORD_VERSION_STRING
#define CHORD_VERSION_STRING "0.0.0"
#endif

namespace {

thread_local std::string g_last_error;

template <typename Body>
chord_status_t guarded(Body&& body) {
  try {
    body();
    g_last_error.clear();
    return CHORD_SUCCESS;
  } catch (const chord::Error& e) {
    g_last_error = e.what();
    return e.status();
  } catch (const std::exception& e) {
    g_last_error = std::string("internal error: ") + e.what();
    return CHORD_ERROR_INTERNAL;
  }
}

// A text answer in the C API's convention: at most `capacity` bytes including the NUL (none
// when capacity is 0), the full length returned.
int64_t copy_text(const std::string& text, char* buffer, int64_t capacity) {
  if (capacity > 0) {
    const size_t copied = std::min(text.size(), static_cast<size_t>(capacity - 1));
    text.copy(buffer, copied);
    buffer[copied] = '\0';
  }
  return static_cast<int64_t>(text.size());
}

}  // namespace

extern "C" {

int chord_api_version(void) { return CHORD_API_VERSION; }

const char* chord_version(void) { return CHORD_VERSION_STRING; }

const char* chord_last_error(void) { return g_last_error.c_str(); }

const char* chord_status_string(chord_status_t status) {
  switch (status) {
    case CHORD_SUCCESS: return "success";
    case CHORD_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case CHORD_ERROR_UNSUPPORTED: return "unsupported";
    case CHORD_ERROR_NO_DRIVER: return "CUDA driver unavailable";
    case CHORD_ERROR_CUDA: return "CUDA error";
    case CHORD_ERROR_COMPILE: return "kernel compilation failed";
    case CHORD_ERROR_ENVIRONMENT: return "invalid environment variable";
    case CHORD_ERROR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

chord_status_t chord_int4_dequantize_codes(const void* codes_dev, const void* scales_dev, void* out_dev, int64_t E,
                                           int64_t N, int64_t K, chord_stream_t stream) {
  return guarded([&] {
    chord::int4_dequantize(chord::kInt4Codes, codes_dev, scales_dev, out_dev, E, N, K, static_cast<CUstream>(stream));
  });
}

chord_status_t chord_int4_dequantize_compressed(const void* packed_dev, const void* scales_dev, void* out_dev,
                                                int64_t E, int64_t N, int64_t K, chord_stream_t stream) {
  return guarded([&] {
    chord::int4_dequantize(chord::kInt4Compressed, packed_dev, scales_dev, out_dev, E, N, K,
                           static_cast<CUstream>(stream));
  });
}

chord_status_t chord_moe_activation(int kind, const char* expression, int dtype, const void* in_dev, int64_t rows,
                                    int64_t in_cols, void* out_dev, int64_t out_rows, const int32_t* scatter_idx_dev,
                                    int64_t scatter_cols, const int32_t* group_rows_dev, int64_t groups,
                                    const int32_t* num_valid_dev, chord_stream_t stream) {
  return guarded([&] {
    CHORD_REQUIRE(expression != nullptr, "argument 'expression' is a null pointer");
    chord::ActivationCall call;
    call.kind = kind;
    call.expression.assign(expression, strnlen(expression, chord::kMaxActivationExpression + 1));
    call.dtype = dtype;
    call.in = in_dev;
    call.rows = rows;
    call.in_cols = in_cols;
    call.out = out_dev;
    call.out_rows = out_rows;
    call.scatter_idx = scatter_idx_dev;
    call.scatter_cols = scatter_cols;
    call.group_rows = group_rows_dev;
    call.groups = groups;
    call.num_valid = num_valid_dev;
    chord::moe_activation(call, static_cast<CUstream>(stream));
  });
}

uint32_t chord_w4a16_layout_version(void) { return chord::kW4A16LayoutVersion; }
int64_t chord_w4a16_weight_bytes(int64_t E, int64_t N, int64_t K) { return chord::w4a16_weight_bytes(E, N, K); }
int64_t chord_w4a16_scale_bytes(int64_t E, int64_t N, int64_t K) { return chord::w4a16_scale_bytes(E, N, K); }
int64_t chord_w4a16_zp_scale_bytes(int64_t E, int64_t N, int64_t K) { return chord::w4a16_zp_scale_bytes(E, N, K); }
int64_t chord_w4a16_format_scale_bytes(uint32_t format, int64_t E, int64_t N, int64_t K) {
  return chord::w4a16_format_scale_bytes(format, E, N, K);
}
int64_t chord_w4a16_contiguous_alignment(void) { return chord::kW4A16ContiguousAlign; }

chord_status_t chord_w4a16_pack(const void* src_dev, int src_format, const void* scales_dev, int64_t E, int64_t N,
                                int64_t K, void* weight_out_dev, void* scales_out_dev, chord_w4a16_weight_t* weight,
                                chord_stream_t stream) {
  return guarded([&] {
    chord::w4a16_pack(src_dev, src_format, scales_dev, E, N, K, weight_out_dev, scales_out_dev, weight,
                      static_cast<CUstream>(stream));
  });
}

chord_status_t chord_w4a16_pack_zp(const void* src_dev, int src_format, const void* scales_dev,
                                   const void* zero_points_dev, int64_t E, int64_t N, int64_t K, void* weight_out_dev,
                                   void* scales_out_dev, chord_w4a16_weight_t* weight, chord_stream_t stream) {
  return guarded([&] {
    chord::w4a16_pack_zp(src_dev, src_format, scales_dev, zero_points_dev, E, N, K, weight_out_dev, scales_out_dev,
                         weight, static_cast<CUstream>(stream));
  });
}

chord_status_t chord_w4a16_dequantize(const chord_w4a16_weight_t* weight, void* out_dev, chord_stream_t stream) {
  return guarded([&] { chord::w4a16_dequantize(weight, out_dev, static_cast<CUstream>(stream)); });
}

chord_status_t chord_w4a16_contiguous(const void* a_dev, int64_t m, const chord_w4a16_weight_t* weight,
                                      const int32_t* m_indices_dev, void* out_dev, chord_stream_t stream) {
  return guarded(
      [&] { chord::w4a16_contiguous(a_dev, m, weight, m_indices_dev, out_dev, static_cast<CUstream>(stream)); });
}

chord_status_t chord_w4a16_masked(const void* a_dev, int64_t G, int64_t max_m, const chord_w4a16_weight_t* weight,
                                  const int32_t* masked_m_dev, int64_t expected_m, void* out_dev,
                                  chord_stream_t stream) {
  return guarded([&] {
    chord::w4a16_masked(a_dev, G, max_m, weight, masked_m_dev, expected_m, out_dev, static_cast<CUstream>(stream));
  });
}

chord_status_t chord_w4a16_offsets(const void* a_dev, int64_t S, const chord_w4a16_weight_t* weight,
                                   const int32_t* offsets_dev, void* out_dev, chord_stream_t stream) {
  return guarded([&] { chord::w4a16_offsets(a_dev, S, weight, offsets_dev, out_dev, static_cast<CUstream>(stream)); });
}

chord_status_t chord_w4a16_indexed(const void* a_dev, int64_t M, const chord_w4a16_weight_t* weight,
                                   const int32_t* sorted_ids_dev, int64_t capacity, const int32_t* expert_ids_dev,
                                   const int32_t* num_tokens_padded_dev, int64_t top_k, int64_t block_size,
                                   void* out_dev, chord_stream_t stream) {
  return guarded([&] {
    chord::w4a16_indexed(a_dev, M, weight, sorted_ids_dev, capacity, expert_ids_dev, num_tokens_padded_dev, top_k,
                         block_size, out_dev, static_cast<CUstream>(stream));
  });
}

uint32_t chord_nf4_layout_version(void) { return chord::kNF4LayoutVersion; }
int64_t chord_nf4_weight_bytes(int64_t E, int64_t N, int64_t K) { return chord::nf4_weight_bytes(E, N, K); }
int64_t chord_nf4_absmax_bytes(int64_t E, int64_t N, int64_t K) { return chord::nf4_absmax_bytes(E, N, K); }

chord_status_t chord_nf4_pack(const void* packed_dev, const void* absmax_dev, const void* nested_absmax_dev,
                              const void* nested_code_dev, float offset, int64_t E, int64_t N, int64_t K,
                              void* weight_out_dev, void* absmax_out_dev, chord_w4a16_weight_t* weight,
                              chord_stream_t stream) {
  return guarded([&] {
    chord::nf4_pack(packed_dev, absmax_dev, nested_absmax_dev, nested_code_dev, offset, E, N, K, weight_out_dev,
                    absmax_out_dev, weight, static_cast<CUstream>(stream));
  });
}

chord_status_t chord_nf4_dequantize(const chord_w4a16_weight_t* weight, int dtype, void* out_dev,
                                    chord_stream_t stream) {
  return guarded([&] { chord::nf4_dequantize(weight, dtype, out_dev, static_cast<CUstream>(stream)); });
}

chord_status_t chord_nf4_offsets(const void* x_dev, int dtype, int64_t S, const chord_w4a16_weight_t* weight,
                                 const int32_t* offsets_dev, void* out_dev, chord_stream_t stream) {
  return guarded(
      [&] { chord::nf4_offsets(x_dev, dtype, S, weight, offsets_dev, out_dev, static_cast<CUstream>(stream)); });
}

int64_t chord_w4a16_tuning_json(const char* arch, int64_t E, int64_t N, int64_t K, int64_t top_k, char* buffer,
                                int64_t capacity) {
  std::string text;
  chord_status_t status = guarded([&] {
    CHORD_REQUIRE(E > 0 && E <= (1 << 20), "argument 'E' = {} is out of range", E);
    CHORD_REQUIRE(top_k > 0 && top_k <= 1024, "argument 'top_k' = {} is out of range", top_k);
    CHORD_REQUIRE(N > 0 && N <= (1 << 24), "argument 'N' = {} is out of range (1..2^24)", N);
    CHORD_REQUIRE(K > 0 && K <= (1 << 24), "argument 'K' = {} is out of range (1..2^24)", K);
    CHORD_REQUIRE(capacity >= 0, "argument 'capacity' = {} is negative", capacity);
    CHORD_REQUIRE(capacity == 0 || buffer != nullptr, "argument 'buffer' is a null pointer");
    const chord::Arch target = chord::parse_arch(arch != nullptr ? arch : "sm_90a");
    const std::string split = chord::detect_split(target, static_cast<int>(N), static_cast<int>(K));
    if (split.empty()) return;  // no table holds the shape: an empty answer, not an error
    text = chord::export_vllm_tuning(target, split, static_cast<int>(E), static_cast<int>(top_k), static_cast<int>(N),
                                     static_cast<int>(K));
  });
  if (status != CHORD_SUCCESS) return -1;
  return copy_text(text, buffer, capacity);
}

int64_t chord_w4a16_last_kernel(char* buffer, int64_t capacity) {
  std::string text;
  chord_status_t status = guarded([&] {
    CHORD_REQUIRE(capacity >= 0, "argument 'capacity' = {} is negative", capacity);
    CHORD_REQUIRE(capacity == 0 || buffer != nullptr, "argument 'buffer' is a null pointer");
    text = chord::w4a16_last_kernel();
  });
  if (status != CHORD_SUCCESS) return -1;
  return copy_text(text, buffer, capacity);
}

chord_status_t chord_routing_check_report(chord_routing_report_t* report) {
  if (report != nullptr) *report = chord_routing_report_t{0, 0, 0, 0};
  return guarded([&] { chord::routing_check_report(report); });
}

void chord_get_jit_stats(chord_jit_stats_t* stats) {
  if (stats == nullptr) return;
  chord::JitStats s{};
  try {
    s = chord::JitRuntime::global().stats();
  } catch (const std::exception&) {  // e.g. invalid CHORD_CACHE_DIR: report zeros
  }
  stats->nvrtc_compiles = chord::nvrtc_compile_count();
  stats->disk_hits = s.disk_hits;
  stats->disk_rebuilds = s.disk_rebuilds;
  stats->memory_hits = s.memory_hits;
}

}  // extern "C"
