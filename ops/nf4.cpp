#include "ops/nf4.hpp"

#include <cmath>

#include "jit/families/nf4.hpp"
#include "kernels_src/w4a16_args.cuh"
#include "launcher/device_context.hpp"
#include "ops/pack_launch.hpp"
#include "ops/validate.hpp"
#include "ops/w4a16.hpp"
#include "runtime/runtime.hpp"

namespace chord {
namespace {

void require_shape(int64_t experts, int64_t n, int64_t k) {
  require_range(experts, "E", 1, 1 << 16);
  require_range(n, "N", kW4A16PackN, 1 << 20);
  require_range(k, "K", kW4A16PackK, 1 << 20);
  require_multiple(n, "N", kW4A16PackN);
  require_multiple(k, "K", kW4A16PackK);
  // Flattened indices of the QuantState (bytes, blocks) stay within 32-bit row arithmetic on
  // the device only when E*N*K fits comfortably in 2^40 elements.
  CHORD_REQUIRE(k <= (int64_t{1} << 40) / experts / n, "E*N*K = {}*{}*{} is too large", experts, n, k);
}

int element_of(int dtype, const char* name) {
  CHORD_REQUIRE(dtype == CHORD_DTYPE_BF16 || dtype == CHORD_DTYPE_FP16,
                "argument '{}' = {} is invalid: CHORD_DTYPE_BF16 (0) or CHORD_DTYPE_FP16 (1)", name, dtype);
  return dtype == CHORD_DTYPE_FP16 ? kNF4FP16 : kNF4BF16;
}

}  // namespace

int64_t nf4_weight_bytes(int64_t experts, int64_t n, int64_t k) {
  return size_if_valid([&] { require_shape(experts, n, k); }, [&] { return experts * n * k / 2; });
}
int64_t nf4_absmax_bytes(int64_t experts, int64_t n, int64_t k) {
  return size_if_valid([&] { require_shape(experts, n, k); }, [&] { return experts * n * (k / kNF4BlockSize) * 4; });
}

void nf4_pack(const void* packed, const void* absmax, const void* nested_absmax, const void* nested_code,
              float offset, int64_t experts, int64_t n, int64_t k, void* weight_out, void* absmax_out,
              chord_w4a16_weight_t* weight, CUstream stream) {
  require_shape(experts, n, k);
  const bool nested = nested_absmax != nullptr;
  require_pointer(packed, "packed", 1);
  require_pointer(absmax, "absmax", nested ? 1 : 4);
  if (nested) {
    require_pointer(nested_absmax, "nested_absmax", 4);
    require_pointer(nested_code, "nested_code", 4);
    // Added to every block's absmax: NaN or infinity would make every weight one.
    CHORD_REQUIRE(std::isfinite(offset), "argument 'offset' = {} is not a finite number", offset);
  } else {
    CHORD_REQUIRE(nested_code == nullptr,
                  "argument 'nested_code' is given without 'nested_absmax': pass both (double-quantized absmax) "
                  "or neither (FP32 absmax)");
  }
  require_pointer(weight_out, "weight_out", 16);
  require_pointer(absmax_out, "absmax_out", 16);
  CHORD_REQUIRE(weight != nullptr, "argument 'weight' is a null pointer");
  const int64_t blocks = experts * n * (k / kNF4BlockSize);
  require_disjoint({{weight_out, nf4_weight_bytes(experts, n, k), "weight_out"},
                    {absmax_out, nf4_absmax_bytes(experts, n, k), "absmax_out"}},
                   {{packed, experts * n * k / 2, "packed"},
                    {absmax, blocks * (nested ? 1 : 4), "absmax"},
                    {nested_absmax, (blocks + kNF4NestedBlockSize - 1) / kNF4NestedBlockSize * 4, "nested_absmax"},
                    {nested_code, 256 * 4, "nested_code"}});
  NF4KernelConfig config;
  config.absmax_form = nested ? kNF4AbsmaxNested : kNF4AbsmaxFP32;
  NF4PackArgs args{packed,     absmax, nested_absmax,           nested_code,        weight_out, absmax_out, offset,
                   static_cast<int>(experts), static_cast<int>(n), static_cast<int>(k)};
  launch_pack_grid(config, args, stream);
  *weight = chord_w4a16_weight_t{CHORD_W4A16_MAGIC, CHORD_FORMAT_NF4, kNF4LayoutVersion,
                                 static_cast<uint32_t>(kNF4BlockSize), experts, n, k, weight_out, absmax_out};
}

void nf4_dequantize(const chord_w4a16_weight_t* weight, int dtype, void* out, CUstream stream) {
  require_w4a16_weight(weight, CHORD_FORMAT_NF4);
  NF4KernelConfig config;
  config.dequant = true;
  config.element = static_cast<NF4Element>(element_of(dtype, "dtype"));
  require_pointer(out, "out", 16);
  require_disjoint({{out, weight->experts * weight->n * weight->k * 2, "out"}},
                   {{weight->weight_dev, nf4_weight_bytes(weight->experts, weight->n, weight->k), "weight"},
                    {weight->scales_dev, nf4_absmax_bytes(weight->experts, weight->n, weight->k), "absmax"}});
  NF4DequantArgs args{weight->weight_dev, weight->scales_dev, out, static_cast<int>(weight->experts),
                      static_cast<int>(weight->n), static_cast<int>(weight->k), 0};
  launch_pack_grid(config, args, stream);
}

void nf4_offsets(const void* x, int dtype, int64_t s_rows, const chord_w4a16_weight_t* weight, const int32_t* offsets,
                 void* out, CUstream stream) {
  require_w4a16_weight(weight, CHORD_FORMAT_NF4);
  const W4A16WeightKind kind = element_of(dtype, "dtype") == kNF4FP16 ? kW4A16WeightNF4Fp16 : kW4A16WeightNF4;
  w4a16_offsets_kind(x, s_rows, weight, kind, offsets, out, stream);
}

}  // namespace chord
