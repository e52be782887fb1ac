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

// The grid and the stream's workspace for a stream-K launch of `kernel` on `args`, or nullopt
// where the call must run whole tiles instead:
//  - its allocated routing (capacity, groups x max_m) has more tile positions than the kernel
//    scans (kW4A16StreamKPositionsPerThread per thread) or than the grid's CTAs can record
//    (kW4A16StreamKMaxTiles - 1 each);
//  - the workspace would have to grow and may_allocate is false (a call during CUDA Graph
//    capture), or the allocation fails.
// A new workspace has its flags cleared on the stream. Workspaces live as long as the process:
// a captured graph keeps their addresses. Each (context, stream) has its own, and so does each
// thread on CU_STREAM_PER_THREAD; launches on one stream run in order, so they do not race on
// it. Two streams that use one workspace at once (a graph replayed on another stream than its
// capture stream while that one runs calls) would corrupt its flags.
std::optional<W4A16StreamKLaunch> w4a16_stream_k_launch(const DeviceContext& device, const LoadedKernel& kernel,
                                                        const W4A16GemmConfig& config, const W4A16Args& args,
                                                        CUstream stream, bool may_allocate);

}  // namespace chord
