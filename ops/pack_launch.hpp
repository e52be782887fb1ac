// The launch shape the packing kernels share (INT4 and NF4 pack, unpack, dequantize): a
// grid-stride loop over the packed words of an E x N x K weight.
#pragma once
#include <cuda.h>

#include "kernels_src/w4a16_args.cuh"
#include "launcher/device_context.hpp"
#include "runtime/runtime.hpp"

namespace chord {

template <typename Config, typename Args>
void launch_pack_grid(const Config& config, const Args& args, CUstream stream) {
  DeviceContext device = current_device_context(stream);
  const LoadedKernel& kernel = JitRuntime::global().kernel(config.descriptor(device.arch), device.context);
  W4A16Dim3 grid = w4a16_pack_grid(args.num_experts, args.n, args.k);
  kernel.launch(LaunchGrid{grid.x, grid.y, grid.z}, stream, &args);
}

}  // namespace chord
