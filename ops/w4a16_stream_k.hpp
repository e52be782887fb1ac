// Launching the stream-K schedule of the mma.sync decode tiles (kernels_src/w4a16_gemm.cuh,
// w4a16_stream_k_body): its grid, the CTAs the GPU holds at once, and the workspace its CTAs
// share a tile's partial sums through, one per stream.
#pragma once
#include <optional>

#include <cuda.h>

#include "jit/families/w4a16.hpp"
#include "launcher/device_context.hpp"
#include "launcher/kernel_module.hpp"

namespace chord {

struct W4A16StreamKLaunch {
  unsigned int grid = 0;     // CTAs: the SMs x the CTAs of this kernel one SM holds
  void* workspace = nullptr;  // fp32 partial tiles, 2 x grid x BLOCK_M x BLOCK_N
  void* flags = nullptr;      // one uint32 per CTA, zero between launches
};

// Whether the call's routing fits the kernel's scan of tile positions (at most
// kW4A16StreamKPositionsPerThread per thread), judged from the allocated routing (capacity,
// groups x max_m), so that no launch can hold more.
bool w4a16_stream_k_fits(const W4A16GemmConfig& config, const W4A16Args& args);

// The grid and the stream's workspace for a stream-K launch of `kernel`. The workspace grows
// (a new allocation, its flags cleared on the stream) only where may_allocate: a call during
// CUDA Graph capture gets nullopt when it would have to grow, and runs whole tiles instead.
// Workspaces live as long as the process: a captured graph keeps their addresses. Two streams
// never share one; launches on one stream run in order, so they do not race on it.
std::optional<W4A16StreamKLaunch> w4a16_stream_k_launch(const DeviceContext& device, const LoadedKernel& kernel,
                                                        const W4A16GemmConfig& config, CUstream stream,
                                                        bool may_allocate);

}  // namespace chord
