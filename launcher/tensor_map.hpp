// TMA tensor maps (cuTensorMapEncodeTiled) for 2-D row-major tiles, passed to kernels by
// value as __grid_constant__ parameters.
#pragma once
#include <cstdint>

#include <cuda.h>

namespace chord {

// rows x cols elements of `element_bytes` each, row stride in elements; a box of
// box_rows x box_cols, with the given shared-memory swizzle.
CUtensorMap make_tensor_map_2d(const void* base, CUtensorMapDataType type, uint64_t rows, uint64_t cols,
                               uint64_t row_stride_elements, uint32_t box_rows, uint32_t box_cols,
                               CUtensorMapSwizzle swizzle);

}  // namespace chord
