// Where the W4A16 GEMM config is chosen: the candidates for a call, best first; the first one
// the call can run; then the CHORD_W4A16_* overrides and the launch shape (warps, split-K).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

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
  int top_k = 0;                // indexed: routes per row of A (0: unknown)
  W4A16WeightKind weight = kW4A16WeightInt4;  // NF4: the pair table (more shared memory)
  Arch arch;
  int sm_count = 132;
};

struct TuningTable;

// One config the resolver considers for a problem.
struct W4A16Candidate {
  enum Source { kNarrowWs, kNarrowWgmma, kTableRow, kWsPromotion, kWgmmaDefaults, kHeuristic };
  Source source = kHeuristic;
  const TuningTable* table = nullptr;  // kTableRow, and kWsPromotion of a table row: the row's table
  int row = -1;                        // its index in table->rows
  W4A16GemmConfig config;              // as the source names it, with the call's mode and weight
  W4A16GemmConfig runs;                // as the call runs it (NF4 one-role WGMMA: stages fitted)
  const char* rejected = nullptr;      // why the call cannot run it; nullptr: it can
  // A warp-specialized tile: a table's wgmma_ws row, the promotion of a BM128 WGMMA candidate, or a
  // masked call's narrow tile on that kernel.
  // A forced config (CHORD_W4A16_*) starts from the best candidate that is not one.
  bool promotion() const { return config.warp_specialized(); }
};

// The experts that `routed_rows` rows reach when each lands on one of `experts` uniformly:
// E * (1 - (1 - 1/E)^R), E at least 1.
double w4a16_expected_active_experts(int experts, double routed_rows);

// Every candidate for the problem (CHORD_W4A16_PROFILE and CHORD_W4A16_ENGINE's candidate
// choice included), best first, each with its verdict. Throws Error naming N/K
// when the shape is unsupported, and CHORD_W4A16_PROFILE when it names no table.
std::vector<W4A16Candidate> w4a16_candidates(const W4A16Problem& problem);

// Where a candidate comes from, in words: "sm90a_ep8.json row 4", "heuristic", ...
std::string w4a16_candidate_source(const W4A16Candidate& candidate);

// A valid config for the problem; throws Error naming the variable when a forced
// CHORD_W4A16_* value makes it invalid, or naming N/K when the shape is unsupported.
W4A16GemmConfig resolve_w4a16_config(const W4A16Problem& problem);

// resolve_w4a16_config's config as a call of this problem launches it: in masked mode, the form
// its hint's grid takes (w4a16_config_for_masked_grid, with the hint the operator passes:
// rows_per_expert, at most max_m). What `chord config` prints and `chord precompile` compiles.
W4A16GemmConfig resolve_w4a16_launch_config(const W4A16Problem& problem);

}  // namespace chord
