// Operators of NF4 weights (chord.h: chord_nf4_*): pack a bitsandbytes QuantState into the
// packed NF4 layout, dequantize it, and the offsets-mode grouped GEMM over it (ops/w4a16.cpp).
#pragma once
#include <cstdint>

#include <cuda.h>

#include "chord/chord.h"
#include "kernels_src/nf4_args.cuh"

namespace chord {

int64_t nf4_weight_bytes(int64_t experts, int64_t n, int64_t k);
int64_t nf4_absmax_bytes(int64_t experts, int64_t n, int64_t k);

// nested_absmax == nullptr: absmax is FP32 [E*N*K/64]; otherwise absmax is uint8 [E*N*K/64],
// nested_absmax FP32 [ceil(E*N*K/64 / 256)], nested_code FP32 [256], plus offset.
void nf4_pack(const void* packed, const void* absmax, const void* nested_absmax, const void* nested_code,
              float offset, int64_t experts, int64_t n, int64_t k, void* weight_out, void* absmax_out,
              chord_w4a16_weight_t* weight, CUstream stream);
void nf4_dequantize(const chord_w4a16_weight_t* weight, int dtype, void* out, CUstream stream);
void nf4_offsets(const void* x, int dtype, int64_t s_rows, const chord_w4a16_weight_t* weight, const int32_t* offsets,
                 void* out, CUstream stream);

}  // namespace chord
