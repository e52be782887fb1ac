#include "launcher/tensor_map.hpp"

#include "core/error.hpp"
#include "launcher/driver_api.hpp"

namespace chord {

namespace {
uint32_t element_size(CUtensorMapDataType type) {
  switch (type) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16: return 2;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32: return 4;
    default: fail(CHORD_ERROR_INTERNAL, "tensor map: unsupported data type {}", static_cast<int>(type));
  }
}
}  // namespace

CUtensorMap make_tensor_map_2d(const void* base, CUtensorMapDataType type, uint64_t rows, uint64_t cols,
                               uint64_t row_stride_elements, uint32_t box_rows, uint32_t box_cols,
                               CUtensorMapSwizzle swizzle) {
  CUtensorMap map;
  cuuint64_t dims[2] = {cols, rows};
  cuuint64_t strides[1] = {row_stride_elements * element_size(type)};
  cuuint32_t box[2] = {box_cols, box_rows};
  cuuint32_t element_strides[2] = {1, 1};
  CHORD_CU(driver().cuTensorMapEncodeTiled(&map, type, 2, const_cast<void*>(base), dims, strides, box,
                                           element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return map;
}

}  // namespace chord
