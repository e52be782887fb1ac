// What a decode call pays before and around its bytes, timed as the bench times a call (after a
// read flush of the L2, CUDA events around the launch alone, median):
//   empty   an empty kernel: grids of 132-2112 CTAs of 128 threads, dynamic shared memory of
//           0-96 KiB, thread block clusters of 1, 2, 4 and 8 CTAs (the decode tiles' split-K
//           launches clusters; the grid rounded up to whole clusters);
//   read    the fastest plain read of B bytes the probe knows: one 16-byte non-coherent load per
//           thread and step, 4 loads in flight per thread, a grid of 132 x 8 CTAs of 256 threads
//           striding over the buffer. Its time against B / 4.47 TB/s is the fraction of the read
//           floor a plain read reaches at that size: a reference, not a bound (a well-scheduled
//           copy stream can beat it by a few percent).
// The decode bar (>= 85% of the floor) needs floor / (floor + fixed cost) >= 0.85 where the bytes
// stream at the floor's rate; the two tables say at which sizes the launch and the DRAM ramp
// take most of what the bar leaves (bench/bars.py --reach).
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I. lab/kernel_check/launch_cost.cu -o /tmp/lc
//   /tmp/lc
#include <algorithm>
#include <cstdio>
#include <vector>

#include "lab/kernel_check/check_harness.cuh"  // CK
#include "lab/kernel_check/stream_probe.cuh"

namespace {

using namespace stream_probe;

// Reads n 16-byte words; the XOR keeps the loads live.
__global__ void __launch_bounds__(256) read_words(const uint4* p, long long n, unsigned int* sink) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  unsigned int acc = 0;
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(v[j].x), "=r"(v[j].y), "=r"(v[j].z), "=r"(v[j].w)
                   : "l"(p + i + j * stride));
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  for (; i < n; i += stride) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

// Median over 20 reps (after 5 warm-up reps) of launch(), each after a read flush.
template <class Launch>
float time_us(const void* flush, unsigned int* sink, Launch launch) {
  return median_us([&](int) { launch_read_flush(flush, sink); }, launch, 5, 20);
}

float empty_us(const void* flush, unsigned int* sink, int grid, int smem, int cluster) {
  CK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const dim3 whole((grid + cluster - 1) / cluster * cluster);  // a whole number of clusters
  return time_us(flush, sink, [&] {
    if (cluster == 1) {
      empty_kernel<<<whole, 128, smem>>>(sink);
    } else {
      chord::check::launch_clusters(empty_kernel, whole, 128, smem, cluster, sink);
    }
  });
}

}  // namespace

int main() {
  void* flush = nullptr;
  unsigned int* sink = nullptr;
  constexpr long long kMaxRead = 512ll << 20;
  void* data = nullptr;
  CK(cudaMalloc(&flush, kFlushBytes));
  CK(cudaMemset(flush, 0, kFlushBytes));
  CK(cudaMalloc(&data, kMaxRead));
  CK(cudaMemset(data, 0x5a, kMaxRead));
  CK(cudaMalloc(&sink, 4));
  CK(cudaDeviceSynchronize());
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);

  std::printf("empty kernel, 128 threads: us by grid (rows) and dynamic shared memory / cluster (columns)\n");
  std::printf("  grid   smem0/c1  smem48K/c1  smem96K/c1  smem0/c2  smem0/c4  smem0/c8  smem96K/c4\n");
  for (int grid : {132, 264, 528, 1056, 2112}) {
    std::printf("  %4d  %8.2f  %10.2f  %10.2f  %8.2f  %8.2f  %8.2f  %10.2f\n", grid, empty_us(flush, sink, grid, 0, 1),
                empty_us(flush, sink, grid, 48 << 10, 1), empty_us(flush, sink, grid, 96 << 10, 1),
                empty_us(flush, sink, grid, 0, 2), empty_us(flush, sink, grid, 0, 4), empty_us(flush, sink, grid, 0, 8),
                empty_us(flush, sink, grid, 96 << 10, 4));
    std::fflush(stdout);
  }

  std::printf("plain read of B bytes (132 x 8 CTAs x 256 threads, 4 x 16-byte loads in flight per thread)\n");
  std::printf("  MB      us   floor us  of floor  us over floor\n");
  for (double mb : {2.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0, 96.0, 128.0, 256.0, 512.0}) {
    const long long bytes = (long long)(mb * (1 << 20)) / 16 * 16;
    const float us = time_us(flush, sink, [&] {
      read_words<<<prop.multiProcessorCount * 8, 256>>>((const uint4*)data, bytes / 16, sink);
    });
    const double floor_us = bytes / kStreamBytesPerS * 1e6;
    std::printf("  %5.0f  %7.2f  %8.2f  %7.1f%%  %8.2f\n", mb, us, floor_us, 100.0 * floor_us / us, us - floor_us);
    std::fflush(stdout);
  }
  return 0;
}
