// chord.h: every entry point converts exceptions into a status and a thread-local message.
#include "chord/chord.h"

#include <string>

#include "jit/compiler.hpp"
#include "jit/error.hpp"
#include "jit/runtime.hpp"
#include "ops/int4_dequantize.hpp"

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
