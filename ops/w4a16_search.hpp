// The decode tile search: at the first call of a decode shape, a few mma.sync tiles beside the
// rule's are timed on the call's own inputs, and the fastest runs that shape from then on.
// The rule (tuning_tables/w4a16_resolver.hpp) picks one tile from the shape alone; on decode
// calls the best tile also depends on how the grid's CTAs fill the SMs, which a timing sees
// and a rule only estimates (docs/tuning.md, "Decode tile search").
//
// - Which calls: the rule's config is an mma.sync tile of at most 16 rows (decode), and no
//   CHORD_W4A16_* knob but CHORD_W4A16_SEARCH is set (a forced choice stays deterministic).
//   CHORD_W4A16_SEARCH=0 turns it off.
// - The shape class a choice holds for (W4A16SearchPlan::key): the arch and SM count, mode,
//   weight kind, N, K, experts, routing block, top-k, groups, the routed rows' power of two and
//   the rule's tile (which the candidates derive from, and which can change inside one power
//   of two: an n-block run from some row count on).
// - Under CUDA Graph capture nothing is timed: the call runs the rule's tile (or a choice
//   already made) and the capture stays free of synchronization.
// - A call whose routing is not representative (a warm-up on placeholder tokens) is timed on
//   synthetic uniform routing of its shape, so that a server's warm-up before each capture
//   decides the captured tile.
// - A choice is kept in memory and in the kernel cache, as an entry of its own key whose
//   payload names the tile; an entry that names no candidate of its plan is dropped as corrupt.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/disk_cache.hpp"
#include "cache/kernel_key.hpp"
#include "core/env.hpp"
#include "jit/families/w4a16.hpp"
#include "tuning_tables/w4a16_resolver.hpp"

namespace chord {

// The shape class a choice holds for.
struct W4A16SearchKey {
  int sm = 0, sm_count = 0, mode = 0, weight = 0, n = 0, k = 0, experts = 0, block_size = 0, top_k = 0,
      num_groups = 0, rows_log2 = 0;
  // The rule's tile, as w4a16_search_entry names it: BM, BN, BK, stages, warps M / N, split-K,
  // group sums, n-block run. Integers, as the rest of the key: the launch path builds a key
  // every call.
  std::array<int, 9> rule{};
  bool operator==(const W4A16SearchKey& o) const;
  std::string text() const;
};

struct W4A16SearchPlan {
  W4A16SearchKey key;
  std::vector<W4A16GemmConfig> candidates;  // the rule's config first, then the others the call can run
};

// Whether the search applies to a call whose rule chose `rule` (cheap: the launch path asks).
bool w4a16_search_applies(const W4A16Problem& problem, const W4A16GemmConfig& rule, const Environment& e);
W4A16SearchKey w4a16_search_key(const W4A16Problem& problem, const W4A16GemmConfig& rule);

// The choice made or loaded for the key in this process (nullptr: none yet).
const W4A16GemmConfig* w4a16_search_known(const W4A16SearchKey& key);

// The plan of a call the search applies to; nullopt when it does not.
std::optional<W4A16SearchPlan> w4a16_search_plan(const W4A16Problem& problem, const W4A16GemmConfig& rule,
                                                 const Environment& e);

// The cache payload that names a candidate, and the candidate a payload names (-1: none).
std::string w4a16_search_entry(const W4A16GemmConfig& c);
int w4a16_search_entry_index(const W4A16SearchPlan& plan, std::string_view entry);

// The candidate to run from the median times (us; infinity: it failed): the fastest, unless
// it beats the rule's (index 0) by less than kW4A16SearchMargin, which timing noise could do.
inline constexpr double kW4A16SearchMargin = 0.03;

// An undecided shape whose timer declined (its routing a warm-up's and no synthetic routing
// fits: top-k above this GPU's experts, or a capacity too small for the layout) runs the rule's
// tile and backs off: after its n-th decline the next 2^n - 1 calls read no routing back (n at
// most kW4A16SearchMaxBackoff), so a rank whose routing never spreads syncs on about log2 of
// its calls, not on every one, while a later representative call (real traffic after a
// warm-up, which makes one call per layer of a shape) still decides.
inline constexpr int kW4A16SearchMaxBackoff = 16;
int w4a16_search_choice(const std::vector<double>& times_us);

// Whether a call's routing is spread like real traffic, so that a tile timed on it suits the
// shape: at least half the experts (masked: groups) that uniform routing of its `routed_rows`
// (the rows its routing data holds for this GPU's experts) would reach hold rows. A warm-up
// pass on placeholder inputs (every token routed to the same experts) is not; the search times
// such a call on w4a16_synthetic_routing instead.
bool w4a16_routing_representative(const W4A16Problem& problem, int active_experts, int64_t routed_rows);

// Routing for timing a shape on uniform traffic where the call's own routing is not
// representative (a warm-up on placeholder tokens, which in a server that captures CUDA Graphs
// is the last eager call of each captured size): the rows the shape class expects, spread over
// this GPU's experts as uniform routing spreads them, from a fixed seed. Only the field of the
// call's mode is filled.
struct W4A16SyntheticRouting {
  std::vector<int32_t> masked_m;    // masked: rows of each group (at most the call's max_m)
  int32_t max_m = 0;                // masked: the groups' row stride, the largest of masked_m (A's
                                    // rows stay within the call's; the output is this size)
  std::vector<int32_t> offsets;     // offsets: each expert's end row (the last is a_rows)
  std::vector<int32_t> sorted_ids;  // indexed: `capacity` route ids, each expert's padded to the block
  std::vector<int32_t> expert_ids;  // indexed: one per block of sorted_ids (-1 past the padded routes)
  int32_t num_tokens_padded = 0;    // indexed: the valid prefix of sorted_ids
  int64_t out_rows = 0;             // rows of the output the call's mode addresses
};

// nullopt where the rows cannot be laid out in the call's own buffers (indexed: top-k above
// the experts, or padded routes past the capacity) or the mode has no routing (contiguous).
std::optional<W4A16SyntheticRouting> w4a16_synthetic_routing(const W4A16Problem& problem);

// Times every candidate on the call's inputs (on synthetic routing where the call's is not
// representative); returns one median per candidate, or nothing when no decision can be made
// now.
using W4A16CandidateTimer = std::function<std::vector<double>(const std::vector<W4A16GemmConfig>&)>;

// The config the call runs: a choice already made for the plan's key (memory, then `cache`,
// the runtime's kernel cache), else, unless `capturing`, a search now (its choice stored in
// both); under capture with no choice yet, or when the timer declines, the rule's (nothing
// kept; the next calls back off, kW4A16SearchMaxBackoff). When no candidate could be timed
// (every time infinite) the rule's tile is kept in memory only. A plan of one candidate times
// nothing.
W4A16GemmConfig w4a16_searched_config(const W4A16SearchPlan& plan, bool capturing, const W4A16CandidateTimer& timer,
                                      DiskCache& cache);

// The kernel-cache key of a plan's choice.
KernelKey w4a16_search_cache_key(const W4A16SearchPlan& plan);

// Choices made or loaded in this process, and forgetting them (tests).
size_t w4a16_search_choices();
void w4a16_search_forget_choices();

// Searches timed on synthetic routing in this process (tests: the warm-up path ran).
void w4a16_search_count_synthetic();
size_t w4a16_search_synthetic_timings();

}  // namespace chord
