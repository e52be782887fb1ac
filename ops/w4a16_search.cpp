#include "ops/w4a16_search.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <limits>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

#include "cache/kernel_key.hpp"
#include "core/arch.hpp"
#include "core/error.hpp"
#include "tuning_tables/tuning_table.hpp"

namespace chord {
namespace {

// The tiles timed beside the rule's: the staged 8- and 16-row tiles that were within 5% of the
// best of 144 on the most decode calls of the generalization set (H200, reading L2 flush:
// bench/results/2026-12-02-90a102a-decode-explore-report.txt), split-K where it was.
struct SearchTile {
  int block_m, block_n, block_k, stages, split_k;
};
constexpr SearchTile kSearchTiles[] = {
    {16, 128, 64, 4, 1},  {16, 128, 128, 3, 1}, {16, 256, 64, 3, 1}, {16, 256, 128, 3, 1},
    {16, 256, 128, 3, 2}, {8, 64, 256, 3, 1},   {8, 64, 256, 3, 2},  {8, 128, 128, 3, 2},
};

// Routed rows as the host knows them: the size class of the call (decode batches grow by
// powers of two in most servers' CUDA Graph sizes).
int64_t routed_rows(const W4A16Problem& p) {
  switch (p.mode) {
    case kW4A16Indexed: return p.top_k > 0 ? int64_t(p.a_rows) * p.top_k : p.capacity;
    case kW4A16Masked: return int64_t(p.num_groups) * std::max<int64_t>(p.rows_per_expert, 1);
    default: return p.a_rows;
  }
}

int ceil_log2(int64_t v) {
  int b = 0;
  while ((int64_t{1} << b) < v && b < 62) ++b;
  return b;
}

// Why the call cannot run the candidate (nullptr: it can).
const char* cannot_run(const W4A16GemmConfig& c, const W4A16Problem& p) {
  if (const char* why = c.error()) return why;
  if (const char* why = c.shape_error(p.n, p.k)) return why;
  if (p.mode == kW4A16Indexed && (p.block_size <= 0 || p.block_size % c.block_m != 0)) {
    return "BLOCK_M does not divide the routing block";
  }
  if (c.split_k > 1 && (p.arch.sm() < 90 || p.k / c.block_k < 2 * c.split_k)) {
    return "split-K needs sm_90+ and two k blocks per split";
  }
  if (c.smem_bytes() > max_shared_bytes_per_block(p.arch)) return "shared memory exceeds the GPU's per-CTA limit";
  return nullptr;
}

struct KeyHash {
  size_t operator()(const W4A16SearchKey& k) const {
    size_t h = 0;
    const auto mix = [&h](int v) { h = (h ^ static_cast<size_t>(static_cast<unsigned int>(v))) * 0x100000001b3ull; };
    for (int v : {k.sm, k.sm_count, k.mode, k.weight, k.n, k.k, k.experts, k.block_size, k.top_k, k.num_groups,
                  k.rows_log2}) {
      mix(v);
    }
    for (int v : k.rule) mix(v);
    return h;
  }
};

// Choices live as long as the process; node-based, so a returned pointer stays valid.
struct Choices {
  std::mutex mutex;
  std::unordered_map<W4A16SearchKey, W4A16GemmConfig, KeyHash> by_key;
  struct Declines {
    int count = 0;       // calls whose timer declined
    long long skip = 0;  // calls left before the next one reads its routing back
  };
  std::unordered_map<W4A16SearchKey, Declines, KeyHash> declined;  // per undecided key
};

Choices& choices() {
  static Choices c;
  return c;
}

}  // namespace

bool W4A16SearchKey::operator==(const W4A16SearchKey& o) const {
  return sm == o.sm && sm_count == o.sm_count && mode == o.mode && weight == o.weight && n == o.n && k == o.k &&
         experts == o.experts && block_size == o.block_size && top_k == o.top_k && num_groups == o.num_groups &&
         rows_log2 == o.rows_log2 && rule == o.rule;
}

std::string W4A16SearchKey::text() const {
  return fmt::format(
      "sm{} sms{} mode{} weight{} n{} k{} e{} bs{} topk{} groups{} rows2^{} "
      "rule bm{} bn{} bk{} s{} wm{} wn{} sk{} gs{} nr{}",
      sm, sm_count, mode, weight, n, k, experts, block_size, top_k, num_groups, rows_log2, rule[0], rule[1], rule[2],
      rule[3], rule[4], rule[5], rule[6], rule[7], rule[8]);
}

bool w4a16_routing_representative(const W4A16Problem& p, int active_experts, int64_t routed_rows) {
  if (routed_rows <= 0) return false;
  double expected = 0;
  if (p.mode == kW4A16Masked) {
    const double groups = std::max(p.num_groups, 1);
    expected = groups * (1.0 - std::exp(-double(routed_rows) / groups));
  } else {
    expected = w4a16_expected_active_experts(p.experts, double(routed_rows));
  }
  return active_experts >= 0.5 * expected;
}

namespace {

// A fixed-seed generator (splitmix64): the same draw on every platform and run.
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
};

}  // namespace

std::optional<W4A16SyntheticRouting> w4a16_synthetic_routing(const W4A16Problem& p) {
  SplitMix rng{0x5eed0c40d5ull};
  W4A16SyntheticRouting r;
  if (p.mode == kW4A16Masked) {
    if (p.num_groups <= 0 || p.max_m <= 0) return std::nullopt;
    const int64_t room = int64_t(p.num_groups) * p.max_m;
    const int64_t rows = std::min(room, int64_t(p.num_groups) * std::max<int64_t>(p.rows_per_expert, 1));
    r.masked_m.assign(static_cast<size_t>(p.num_groups), 0);
    for (int64_t i = 0; i < rows; ++i) {
      int g = rng.below(p.num_groups);
      while (r.masked_m[g] >= p.max_m) g = (g + 1) % p.num_groups;  // a full group: the next one
      ++r.masked_m[g];
    }
    // A server's masked buffers hold every token a rank may receive (hundreds of rows per group);
    // the search's output needs only the rows it lays out.
    r.max_m = std::max(1, *std::max_element(r.masked_m.begin(), r.masked_m.end()));
    r.out_rows = int64_t(p.num_groups) * r.max_m;
    return r;
  }
  if (p.experts <= 0 || p.a_rows <= 0) return std::nullopt;
  if (p.mode == kW4A16Offsets) {
    std::vector<int32_t> count(static_cast<size_t>(p.experts), 0);
    for (int i = 0; i < p.a_rows; ++i) ++count[rng.below(p.experts)];
    r.offsets.resize(count.size());
    int32_t end = 0;
    for (size_t e = 0; e < count.size(); ++e) r.offsets[e] = end += count[e];
    r.out_rows = p.a_rows;
    return r;
  }
  if (p.mode != kW4A16Indexed || p.top_k <= 0 || p.top_k > p.experts || p.block_size <= 0 || p.capacity <= 0 ||
      int64_t(p.a_rows) * p.top_k >= INT32_MAX) {
    return std::nullopt;
  }
  std::vector<std::vector<int32_t>> routes_of(static_cast<size_t>(p.experts));
  // Each token's top-k distinct experts; a route's id is token * top_k + slot, as vLLM numbers them.
  for (int t = 0; t < p.a_rows; ++t) {
    std::vector<int> picked;
    while (static_cast<int>(picked.size()) < p.top_k) {
      const int e = rng.below(p.experts);
      if (std::find(picked.begin(), picked.end(), e) == picked.end()) picked.push_back(e);
    }
    for (int slot = 0; slot < p.top_k; ++slot) routes_of[picked[slot]].push_back(t * p.top_k + slot);
  }
  const int32_t routes = p.a_rows * p.top_k;
  r.sorted_ids.assign(static_cast<size_t>(p.capacity), routes);  // vLLM's padding value
  r.expert_ids.assign(static_cast<size_t>((p.capacity + p.block_size - 1) / p.block_size), -1);
  int64_t at = 0;
  for (int e = 0; e < p.experts; ++e) {
    const auto& ids = routes_of[e];
    if (ids.empty()) continue;
    const int64_t padded = (int64_t(ids.size()) + p.block_size - 1) / p.block_size * p.block_size;
    if (at + padded > p.capacity) return std::nullopt;
    std::copy(ids.begin(), ids.end(), r.sorted_ids.begin() + at);
    for (int64_t b = at / p.block_size; b < (at + padded) / p.block_size; ++b) r.expert_ids[b] = e;
    at += padded;
  }
  r.num_tokens_padded = static_cast<int32_t>(at);
  r.out_rows = routes;
  return r;
}

bool w4a16_search_applies(const W4A16Problem& p, const W4A16GemmConfig& rule, const Environment& e) {
  return e.w4a16_search && !e.w4a16_overridden() && !rule.wgmma() && rule.block_m <= 16 &&
         p.mode != kW4A16Contiguous;
}

W4A16SearchKey w4a16_search_key(const W4A16Problem& p, const W4A16GemmConfig& rule) {
  W4A16SearchKey key;
  key.sm = p.arch.sm() * 2 + (p.arch.family_specific ? 1 : 0);
  key.sm_count = p.sm_count;
  key.mode = int(p.mode);
  key.weight = int(p.weight);
  key.n = p.n;
  key.k = p.k;
  key.experts = p.experts;
  key.block_size = p.mode == kW4A16Indexed ? p.block_size : 0;
  key.top_k = p.mode == kW4A16Indexed ? p.top_k : 0;
  key.num_groups = p.mode == kW4A16Masked ? p.num_groups : 0;
  key.rows_log2 = ceil_log2(routed_rows(p));
  key.rule = {rule.block_m, rule.block_n, rule.block_k, rule.stages, rule.warps_m,
              rule.warps_n, rule.split_k, rule.group_sums, rule.n_run};
  return key;
}

const W4A16GemmConfig* w4a16_search_known(const W4A16SearchKey& key) {
  Choices& memo = choices();
  std::lock_guard<std::mutex> lock(memo.mutex);
  auto it = memo.by_key.find(key);
  return it == memo.by_key.end() ? nullptr : &it->second;
}

std::optional<W4A16SearchPlan> w4a16_search_plan(const W4A16Problem& p, const W4A16GemmConfig& rule,
                                                 const Environment& e) {
  if (!w4a16_search_applies(p, rule, e)) return std::nullopt;
  W4A16SearchPlan plan;
  plan.key = w4a16_search_key(p, rule);
  plan.candidates.push_back(rule);
  if (rule.n_run > 1) {  // the rule's tile without its run: runs lose where the routing is skewed
    W4A16GemmConfig whole = rule;
    whole.n_run = 1;
    plan.candidates.push_back(whole);
  }
  for (const SearchTile& t : kSearchTiles) {
    if (t.block_m < rule.block_m) continue;  // more M tiles per expert: its weights read twice
    W4A16GemmConfig c = rule;
    c.block_m = t.block_m;
    c.block_n = t.block_n;
    c.block_k = t.block_k;
    c.stages = t.stages;
    c.warps_m = 1;
    c.warps_n = 4;
    c.group_sums = kW4A16GroupSumsOffset;
    c.n_run = 1;
    c = w4a16_config_for_weight(c, p.weight);
    c.split_k = t.split_k;
    if (cannot_run(c, p) != nullptr) continue;
    // Two candidates are the same when they are the same kernel.
    const KernelDescriptor kernel = c.descriptor(p.arch);
    const bool seen = std::any_of(plan.candidates.begin(), plan.candidates.end(),
                                  [&](const W4A16GemmConfig& have) { return have.descriptor(p.arch) == kernel; });
    if (!seen) plan.candidates.push_back(c);
  }
  return plan;
}

std::string w4a16_search_entry(const W4A16GemmConfig& c) {
  // A run of n blocks is named only where there is one, so that entries from before runs still
  // name their candidates.
  return fmt::format("bm{} bn{} bk{} s{} wm{} wn{} sk{} gs{}{}", c.block_m, c.block_n, c.block_k, c.stages, c.warps_m,
                     c.warps_n, c.split_k, c.group_sums, c.n_run > 1 ? fmt::format(" nr{}", c.n_run) : "");
}

int w4a16_search_entry_index(const W4A16SearchPlan& plan, std::string_view entry) {
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    if (entry == w4a16_search_entry(plan.candidates[i])) return static_cast<int>(i);
  }
  return -1;
}

int w4a16_search_choice(const std::vector<double>& times_us) {
  if (times_us.empty()) return 0;
  int best = 0;
  for (size_t i = 1; i < times_us.size(); ++i) {
    if (times_us[i] < times_us[best]) best = static_cast<int>(i);
  }
  if (best != 0 && std::isfinite(times_us[0]) && times_us[best] > times_us[0] * (1.0 - kW4A16SearchMargin)) return 0;
  return std::isfinite(times_us[best]) ? best : 0;
}

KernelKey w4a16_search_cache_key(const W4A16SearchPlan& plan) {
  // v3: the key names the rule's tile (v2 entries of a power of two whose rule changes inside it
  // named tiles of the other rule's plan). v2: a rule's n-block run and its tile without the run
  // are candidates (choices made before never timed the run).
  return make_kernel_key("w4a16 decode tile search v3\n" + plan.key.text(), {}, "", {});
}

W4A16GemmConfig w4a16_searched_config(const W4A16SearchPlan& plan, bool capturing, const W4A16CandidateTimer& timer,
                                      DiskCache& disk) {
  if (const W4A16GemmConfig* known = w4a16_search_known(plan.key)) return *known;
  Choices& memo = choices();
  if (plan.candidates.size() < 2) {
    std::lock_guard<std::mutex> lock(memo.mutex);
    return memo.by_key.emplace(plan.key, plan.candidates.front()).first->second;
  }
  const KernelKey key = w4a16_search_cache_key(plan);
  int index = -1;
  // An entry is untrusted input: it may only name one of the plan's candidates.
  const auto check = [&](const std::vector<char>& payload, const std::string& entry_path) {
    index = w4a16_search_entry_index(plan, std::string_view(payload.data(), payload.size()));
    if (index < 0) fail(CHORD_ERROR_INVALID_ARGUMENT, "{}: names no decode tile of this shape", entry_path);
  };
  if (!disk.load(key, check)) index = -1;
  bool store = false;
  if (index < 0) {
    if (capturing) return plan.candidates.front();
    {
      std::lock_guard<std::mutex> lock(memo.mutex);
      auto it = memo.declined.find(plan.key);
      if (it != memo.declined.end() && it->second.skip > 0) {  // backing off: no routing read
        --it->second.skip;
        return plan.candidates.front();
      }
    }
    const std::vector<double> times = timer(plan.candidates);
    if (times.empty()) {  // nothing to time on now: decide at a later call, backing off
      std::lock_guard<std::mutex> lock(memo.mutex);
      Choices::Declines& d = memo.declined[plan.key];
      d.count = std::min(d.count + 1, kW4A16SearchMaxBackoff);
      d.skip = (1LL << d.count) - 1;
      return plan.candidates.front();
    }
    index = times.size() == plan.candidates.size() ? w4a16_search_choice(times) : 0;
    // Nothing timed (every candidate failed, or the timing itself): the rule's tile for this
    // process only, so that a later process searches again.
    store = std::any_of(times.begin(), times.end(), [](double t) { return std::isfinite(t); });
  }
  W4A16GemmConfig chosen;
  {
    // Another thread may have decided the shape meanwhile: the first choice holds, in memory and
    // in the cache alike.
    std::lock_guard<std::mutex> lock(memo.mutex);
    const auto [at, first] = memo.by_key.emplace(plan.key, plan.candidates[index]);
    chosen = at->second;
    store = store && first;
  }
  if (store) {
    const std::string text = w4a16_search_entry(chosen);
    disk.store(key, std::vector<char>(text.begin(), text.end()));
  }
  return chosen;
}

size_t w4a16_search_choices() {
  std::lock_guard<std::mutex> lock(choices().mutex);
  return choices().by_key.size();
}

namespace {
std::atomic<size_t> g_synthetic_timings{0};
}  // namespace

void w4a16_search_count_synthetic() { ++g_synthetic_timings; }

size_t w4a16_search_synthetic_timings() { return g_synthetic_timings.load(); }

void w4a16_search_forget_choices() {
  std::lock_guard<std::mutex> lock(choices().mutex);
  choices().by_key.clear();
  choices().declined.clear();
}

}  // namespace chord
