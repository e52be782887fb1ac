// Operator: INT4 group-32 weights -> BF16 (chord.h: chord_int4_dequantize_*).
#pragma once
#include <cstdint>

#include <cuda.h>

#include "kernels_src/int4_dequant_args.cuh"

namespace chord {

void int4_dequantize(Int4SourceFormat format, const void* weight, const void* scales, void* out, int64_t experts,
                     int64_t n, int64_t k, CUstream stream);

}  // namespace chord
