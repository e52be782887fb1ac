// Operators of the W4A16 grouped GEMM family (chord.h: chord_w4a16_*).
#pragma once

#include <climits>
#include <cstdint>
#include <string>

#include <cuda.h>

#include "chord/chord.h"
#include "kernels_src/weight_kind_args.cuh"

namespace chord {

// The operators' bounds on a call (checked before any launch; `chord config` takes the same):
// experts, N and K of a packed weight, and rows of A (a tile added to a row count stays in int).
constexpr int64_t kW4A16MaxExperts = int64_t{1} << 16;
constexpr int64_t kW4A16MaxNK = int64_t{1} << 20;
constexpr int64_t kW4A16MaxRows = INT_MAX / 2;

// The packed-weight tag check: magic, format, layout version, group size, shape, pointers.
void require_w4a16_weight(const chord_w4a16_weight_t* weight, uint32_t format);
// The same for either INT4 format; returns the weight kind the format runs as.
W4A16WeightKind require_int4_weight(const chord_w4a16_weight_t* weight);

int64_t w4a16_weight_bytes(int64_t experts, int64_t n, int64_t k);
int64_t w4a16_scale_bytes(int64_t experts, int64_t n, int64_t k);
int64_t w4a16_zp_scale_bytes(int64_t experts, int64_t n, int64_t k);  // {scale, bias} pairs
int64_t w4a16_format_scale_bytes(uint32_t format, int64_t experts, int64_t n, int64_t k);  // any INT4 format

void w4a16_pack(const void* src, int src_format, const void* scales, int64_t experts, int64_t n, int64_t k,
                void* weight_out, void* scales_out, chord_w4a16_weight_t* weight, CUstream stream);
// chord_w4a16_pack with zero points (uint8 [E, N, K/32], 0..15): formats CHORD_FORMAT_INT4_G32_ZP*.
void w4a16_pack_zp(const void* src, int src_format, const void* scales, const void* zero_points, int64_t experts,
                   int64_t n, int64_t k, void* weight_out, void* scales_out, chord_w4a16_weight_t* weight,
                   CUstream stream);
void w4a16_dequantize(const chord_w4a16_weight_t* weight, void* out, CUstream stream);

void w4a16_contiguous(const void* a, int64_t m, const chord_w4a16_weight_t* weight, const int32_t* m_indices,
                      void* out, CUstream stream);
void w4a16_masked(const void* a, int64_t groups, int64_t max_m, const chord_w4a16_weight_t* weight,
                  const int32_t* masked_m, int64_t expected_m, void* out, CUstream stream);
void w4a16_offsets(const void* a, int64_t s_rows, const chord_w4a16_weight_t* weight, const int32_t* offsets,
                   void* out, CUstream stream);
// Offsets mode for a weight whose tag the caller checked, run as `kind` (which also names the
// activation / output type).
void w4a16_offsets_kind(const void* a, int64_t s_rows, const chord_w4a16_weight_t* weight, W4A16WeightKind kind,
                        const int32_t* offsets, void* out, CUstream stream);
void w4a16_indexed(const void* a, int64_t m, const chord_w4a16_weight_t* weight, const int32_t* sorted_ids,
                   int64_t capacity, const int32_t* expert_ids, const int32_t* num_tokens_padded, int64_t top_k,
                   int64_t block_size, void* out, CUstream stream);

// The kernel name (as `chord config` prints it) of the config the calling thread's last W4A16
// GEMM call chose, on any mode and weight kind; empty before the thread's first call.
std::string w4a16_last_kernel();

}  // namespace chord
