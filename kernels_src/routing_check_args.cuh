// Arguments of the routing check kernel; shared by host C++ and NVRTC.
#pragma once

namespace chord {

// What a check found first; codes index kRoutingViolationNames (ops/routing_check.cpp).
enum RoutingViolation : int {
  kRoutingOk = 0,
  kRoutingPaddedOverCapacity = 1,   // indexed: num_tokens_padded > capacity or < 0
  kRoutingNegativeRouteId = 2,      // indexed: sorted_ids[i] < 0
  kRoutingExpertOutOfRange = 3,     // indexed expert_ids / contiguous m_indices outside [-1, E)
  kRoutingMaskedOutOfRange = 4,     // masked: masked_m[g] outside [0, max_m]
  kRoutingOffsetsDecreasing = 5,    // offsets: offsets[e] < offsets[e-1] or < 0
  kRoutingOffsetsOverRows = 6,      // offsets: offsets[E-1] > S
  kRoutingSegmentMisaligned = 7,    // contiguous: an aligned block holds two experts
};

struct RoutingCheckArgs {
  const void* ids;         // indexed: sorted_ids; contiguous: m_indices; masked: masked_m; offsets: offsets
  const void* expert_ids;  // indexed only
  const void* num_tokens_padded;  // indexed only
  int mode;                // W4A16Mode
  int count;               // entries of `ids` (capacity, m, G, E)
  int num_experts;
  int limit;               // masked: max_m; offsets: S
  int block_size;          // indexed: routing block; contiguous: segment alignment
  int pad_;
};

}  // namespace chord
