// Where the W4A16 GEMM config is chosen: tuning table -> heuristic -> CHORD_W4A16_* env.
#pragma once
#include <cstdint>

#include "core/arch.hpp"
#include "jit/families/w4a16.hpp"

namespace chord {

struct W4A16Problem {
  W4A16Mode mode = kW4A16Contiguous;
  int64_t rows_per_expert = 0;  // expected routed rows per active expert (host hint)
  int n = 0, k = 0, experts = 0;
  int block_size = 0;           // indexed: the routing alignment (block_m must divide it)
  // Routing geometry as the operator knows it on the host (W4A16Args fields of the same
  // names): bounds the tile count for the split-K choice.
  int a_rows = 0, num_groups = 0, max_m = 0, capacity = 0;
  W4A16WeightKind weight = kW4A16WeightInt4;  // NF4: the pair table (more shared memory)
  Arch arch;
  int sm_count = 132;
};

// A valid config for the problem; throws Error naming the variable when a forced
// CHORD_W4A16_* value makes it invalid, or naming N/K when the shape is unsupported.
W4A16GemmConfig resolve_w4a16_config(const W4A16Problem& problem);

}  // namespace chord
