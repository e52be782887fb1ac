// Evicts the L2 before a timed launch (the decode tile search, ops/w4a16_search.cpp): reads a
// zeroed buffer larger than the L2 and stores nothing, so that the timed kernel starts from
// DRAM like a call in a model does, without dirty lines to write back while it runs (a memset
// would leave them). The store under an impossible condition keeps the loads.
#pragma once
#include "l2_flush_args.cuh"

namespace chord {

__device__ __forceinline__ void l2_flush_body(const L2FlushArgs& a) {
  const uint4* words = static_cast<const uint4*>(a.buffer);
  const long long stride = (long long)gridDim.x * blockDim.x;
  unsigned int x = 0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.count; i += stride) {
    const uint4 v = words[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == a.never) *static_cast<unsigned int*>(a.sink) = x;
}

}  // namespace chord
