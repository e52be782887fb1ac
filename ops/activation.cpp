#include "ops/activation.hpp"

#include <algorithm>
#include <climits>

#include "jit/families/activation.hpp"
#include "kernels_src/activation_args.cuh"
#include "runtime/runtime.hpp"
#include "launcher/device_context.hpp"
#include "ops/validate.hpp"

namespace chord {

void moe_activation(const ActivationCall& call, CUstream stream) {
  require_range(call.kind, "kind", CHORD_ACTIVATION_UNARY, CHORD_ACTIVATION_BINARY_INTERLEAVED);
  CHORD_REQUIRE(call.dtype == CHORD_DTYPE_BF16 || call.dtype == CHORD_DTYPE_FP16,
                "argument 'dtype' = {} is neither CHORD_DTYPE_BF16 nor CHORD_DTYPE_FP16", call.dtype);
  const uint64_t hash = register_activation_expression(call.expression);
  // Row indices are int32 on the device, and INT_MAX is the kernel's "no limit": at most INT_MAX rows.
  require_range(call.rows, "rows", 0, int64_t{INT_MAX});
  require_range(call.in_cols, "in_cols", 8, int64_t{1} << 20);
  const bool unary = call.kind == CHORD_ACTIVATION_UNARY;
  if (!unary) require_multiple(call.in_cols, "in_cols", 2);
  const int64_t n = unary ? call.in_cols : call.in_cols / 2;
  CHORD_REQUIRE(n % 8 == 0, "the activation's output width {} (in_cols {}) must be a multiple of 8", n, call.in_cols);
  require_range(call.out_rows, "out_rows", 0, int64_t{INT_MAX});
  CHORD_REQUIRE(!(call.scatter_idx && call.group_rows), "scatter_idx and group_rows are exclusive layouts");
  if (call.scatter_idx) {
    require_range(call.scatter_cols, "scatter_cols", 1, 1024);
  } else {
    CHORD_REQUIRE(call.out_rows >= call.rows, "out has {} rows, fewer than the input's {}", call.out_rows, call.rows);
  }
  if (call.group_rows) {
    require_range(call.groups, "groups", 1, int64_t{1} << 20);
    CHORD_REQUIRE(call.rows % call.groups == 0, "rows {} are not a whole number of rows per group for {} groups",
                  call.rows, call.groups);
  }
  if (call.rows == 0 || call.out_rows == 0) return;
  require_pointer(call.in, "in", 16);
  require_pointer(call.out, "out", 16);
  if (call.scatter_idx) require_pointer(call.scatter_idx, "scatter_idx", 4);
  if (call.group_rows) require_pointer(call.group_rows, "group_rows", 4);
  if (call.num_valid) require_pointer(call.num_valid, "num_valid", 4);
  require_disjoint({{call.out, call.out_rows * n * 2, "out"}},
                   {{call.in, call.rows * call.in_cols * 2, "in"},
                    // Sizes of unused layouts stay 0: their counts are unchecked (and may overflow).
                    {call.scatter_idx, call.scatter_idx ? call.rows * call.scatter_cols * 4 : 0, "scatter_idx"},
                    {call.group_rows, call.group_rows ? call.groups * 4 : 0, "group_rows"},
                    {call.num_valid, 4, "num_valid"}});

  DeviceContext device = current_device_context(stream);
  ActivationConfig config;
  config.kind = call.kind;
  config.dtype = call.dtype;
  config.expression_hash = hash;
  const LoadedKernel& kernel = JitRuntime::global().kernel(config.descriptor(device.arch), device.context);

  ActivationArgs args{};
  args.in = call.in;
  args.out = call.out;
  args.scatter_idx = call.scatter_idx;
  args.group_rows = call.group_rows;
  args.num_valid = call.num_valid;
  args.rows = call.rows;
  args.out_rows = call.out_rows;
  args.in_cols = static_cast<int>(call.in_cols);
  args.n = static_cast<int>(n);
  args.scatter_cols = call.scatter_idx ? static_cast<int>(call.scatter_cols) : 1;
  args.rows_per_group = call.group_rows ? static_cast<int>(call.rows / call.groups) : 1;
  // Enough CTAs to keep every SM's memory pipe busy; each walks pairs of rows.
  const int64_t pairs = call.rows * args.scatter_cols;
  const int64_t blocks = std::min<int64_t>(pairs, static_cast<int64_t>(device.sm_count) * 16);
  kernel.launch(LaunchGrid{static_cast<uint32_t>(blocks), 1, 1}, stream, &args);
}

}  // namespace chord
