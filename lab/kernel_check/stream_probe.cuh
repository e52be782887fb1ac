// What the copy-stream probes (stream_sweep.cu, decode_parts.cu, launch_cost.cu) share: the
// few-expert decode shapes they stream, their bytes against the read floor, the 16-byte async
// copy, and the L2 flush by reading.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "lab/kernel_check/check_harness.cuh"  // CK

namespace stream_probe {

constexpr double kStreamBytesPerS = 4.47e12;  // the read floor's rate (docs/shapes.md)

struct Shape {
  const char* name;
  int experts, n, k;

  // The packed INT4 weights and bf16 group-32 scales of the active experts (the probes stream
  // both).
  long long weight_bytes() const { return (long long)experts * n * k / 2; }
  long long scale_bytes() const { return (long long)experts * (k / 32) * n * 2; }
  double bytes() const { return (double)weight_bytes() + (double)scale_bytes(); }
  double floor_us() const { return bytes() / kStreamBytesPerS * 1e6; }
};

// Active experts x N x K of decode calls measured at 40-60% of their floor (generalization set).
constexpr Shape kShapes[] = {
    {"dsv3 EP8 T=1 gate_up (8 x 4096 x 7168)", 8, 4096, 7168},
    {"mixtral TP1 T=1 down (2 x 4096 x 14336)", 2, 4096, 14336},
    {"maverick EP8 T=1 down (1 x 5120 x 8192)", 1, 5120, 8192},
    {"q235 EP8 T=8 gate_up (16 x 3072 x 4096)", 16, 3072, 4096},
    {"masked EP8 gate_up (48 x 4096 x 7168)", 48, 4096, 7168},
};

__device__ __forceinline__ void cp16(unsigned int dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

constexpr long long kFlushBytes = 256ll << 20;

// Reads the flush buffer: L2 ends up holding clean lines, so the timed kernel's misses evict
// without a write-back. A memset leaves L2 full of dirty lines whose write-back the next kernel
// pays for in DRAM time.
__global__ void read_flush(const uint4* p, long long n, unsigned int* sink) {
  unsigned int acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

// The fixed cost every call carries: a launch whose CTAs do nothing.
__global__ void empty_kernel(unsigned int* sink) {
  if (threadIdx.x == 1024) sink[0] = 0;
}

inline void launch_read_flush(const void* flush, unsigned int* sink) {
  read_flush<<<132 * 8, 256>>>((const uint4*)flush, kFlushBytes / 16, sink);
}

// Median us of launch() over `reps` reps after `warmup` more, each after flush(); the events
// bracket the launch only, as the bench brackets a call.
template <class Flush, class Launch>
float median_us(Flush flush, Launch launch, int warmup = 3, int reps = 12) {
  cudaEvent_t a, e;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&e));
  std::vector<float> t;
  for (int r = 0; r < warmup + reps; ++r) {
    flush(r);
    CK(cudaEventRecord(a));
    launch();
    CK(cudaEventRecord(e));
    CK(cudaEventSynchronize(e));
    CK(cudaGetLastError());
    float ms;
    CK(cudaEventElapsedTime(&ms, a, e));
    if (r >= warmup) t.push_back(ms * 1000.f);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(e));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace stream_probe
