// Routing validation without a host sync: checks the device routing tensors of a W4A16
// call and records the first violation in chord_routing_violation (a module global the
// host reads only when asked, through chord_routing_check_report()).
#pragma once
#include "routing_check_args.cuh"
#include "w4a16_args.cuh"

// {code, index, value, mode}; code 0 = clean. First writer wins. One per loaded module,
// i.e. per CUDA context.
extern "C" {
__device__ int chord_routing_violation[4];
}

namespace chord {

__device__ __forceinline__ void report_violation(int code, int index, int value, int mode) {
  if (atomicCAS(&chord_routing_violation[0], 0, code) == 0) {
    chord_routing_violation[1] = index;
    chord_routing_violation[2] = value;
    chord_routing_violation[3] = mode;
  }
}

__device__ __forceinline__ void routing_check_body(const RoutingCheckArgs& a) {
  const int* ids = static_cast<const int*>(a.ids);
  const int stride = gridDim.x * blockDim.x;
  const int first = blockIdx.x * blockDim.x + threadIdx.x;
  if (a.mode == kW4A16Indexed) {
    const int padded = *static_cast<const int*>(a.num_tokens_padded);
    if (first == 0 && (padded < 0 || padded > a.count)) report_violation(kRoutingPaddedOverCapacity, 0, padded, a.mode);
    const int valid = padded < 0 ? 0 : (padded < a.count ? padded : a.count);
    const int* experts = static_cast<const int*>(a.expert_ids);
    for (int i = first; i < valid; i += stride) {
      if (ids[i] < 0) report_violation(kRoutingNegativeRouteId, i, ids[i], a.mode);
      if (i % a.block_size == 0) {
        const int e = experts[i / a.block_size];
        if (e < -1 || e >= a.num_experts) report_violation(kRoutingExpertOutOfRange, i / a.block_size, e, a.mode);
      }
    }
  } else if (a.mode == kW4A16Contiguous) {
    for (int i = first; i < a.count; i += stride) {
      const int e = ids[i];
      if (e < -1 || e >= a.num_experts) report_violation(kRoutingExpertOutOfRange, i, e, a.mode);
      const int lead = ids[i - i % a.block_size];
      if (e >= 0 && lead >= 0 && lead != e) report_violation(kRoutingSegmentMisaligned, i, e, a.mode);
      if (e >= 0 && lead < 0) report_violation(kRoutingSegmentMisaligned, i, e, a.mode);
    }
  } else if (a.mode == kW4A16Masked) {
    for (int g = first; g < a.count; g += stride) {
      if (ids[g] < 0 || ids[g] > a.limit) report_violation(kRoutingMaskedOutOfRange, g, ids[g], a.mode);
    }
  } else if (a.mode == kW4A16Offsets) {
    for (int e = first; e < a.count; e += stride) {
      const int previous = e == 0 ? 0 : ids[e - 1];
      if (ids[e] < previous) report_violation(kRoutingOffsetsDecreasing, e, ids[e], a.mode);
      if (e == a.count - 1 && ids[e] > a.limit) report_violation(kRoutingOffsetsOverRows, e, ids[e], a.mode);
    }
  }
}

}  // namespace chord
