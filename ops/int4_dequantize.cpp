#include "ops/int4_dequantize.hpp"

#include <algorithm>

#include "jit/families/int4_dequant.hpp"
#include "launcher/device_context.hpp"
#include "ops/validate.hpp"
#include "runtime/runtime.hpp"

namespace chord {

void int4_dequantize(Int4SourceFormat format, const void* weight, const void* scales, void* out, int64_t experts,
                     int64_t n, int64_t k, CUstream stream) {
  const char* weight_name = format == kInt4Codes ? "codes" : "packed";
  constexpr int64_t kMaxElements = int64_t{1} << 40;
  require_range(experts, "E", 0, 1 << 20);
  require_range(n, "N", 0, 1 << 24);
  require_range(k, "K", 0, 1 << 24);
  require_multiple(k, "K", 32);
  CHORD_REQUIRE(experts == 0 || n == 0 || k <= kMaxElements / experts / n,
                "E*N*K = {}*{}*{} exceeds the supported {} elements", experts, n, k, kMaxElements);
  if (experts == 0 || n == 0 || k == 0) return;  // nothing to write
  require_pointer(weight, weight_name, format == kInt4Codes ? 8 : 4);
  require_pointer(scales, "scales", 2);
  require_pointer(out, "out", 16);
  require_disjoint({{out, experts * n * k * 2, "out"}},
                   {{weight, format == kInt4Codes ? experts * n * k : experts * n * k / 2, weight_name},
                    {scales, experts * n * (k / 32) * 2, "scales"}});

  DeviceContext device = current_device_context(stream);
  Int4DequantConfig config;
  config.format = format;
  const LoadedKernel& kernel = JitRuntime::global().kernel(config.descriptor(device.arch), device.context);

  Int4DequantArgs args{weight, scales, out, experts * n, static_cast<int>(k)};
  const int64_t words = experts * n * (k / 8);
  const int64_t blocks = std::min<int64_t>((words + config.threads - 1) / config.threads,
                                           static_cast<int64_t>(device.sm_count) * 32);
  kernel.launch(LaunchGrid{static_cast<uint32_t>(blocks), 1, 1}, stream, &args);
}

}  // namespace chord
