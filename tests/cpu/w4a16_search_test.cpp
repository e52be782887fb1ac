// The decode tile search's plan, choice and cache entries (ops/w4a16_search.hpp); the timing
// itself needs a GPU (tests/gpu).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/arch.hpp"
#include "core/env.hpp"
#include "jit/families/w4a16.hpp"
#include "ops/w4a16_search.hpp"
#include "runtime/runtime.hpp"
#include "test_support.hpp"
#include "tuning_tables/w4a16_resolver.hpp"

namespace {

// DeepSeek-V3 under EP8 (32 local experts) at `tokens` decode tokens, top-8, routing block 16.
chord::W4A16Problem indexed_decode(int tokens, const char* arch = "sm_90a") {
  chord::W4A16Problem p;
  p.mode = chord::kW4A16Indexed;
  p.n = 4096;
  p.k = 7168;
  p.experts = 32;
  p.a_rows = tokens;
  p.top_k = 8;
  p.block_size = 16;
  p.capacity = tokens * 8 + 32 * 15;
  p.rows_per_expert = std::max(1, tokens * 8 / 32);
  p.arch = chord::parse_arch(arch);
  p.sm_count = 132;
  return p;
}

chord::W4A16SearchPlan plan_of(const chord::W4A16Problem& p, const chord::Environment& e = {}) {
  auto plan = chord::w4a16_search_plan(p, chord::resolve_w4a16_config(p), e);
  REQUIRE(plan.has_value());
  return *plan;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

// A timer that counts its calls in `*calls` and answers `time` for every candidate, the last
// one `last` (lower: the last candidate wins).
chord::W4A16CandidateTimer counting_timer(int* calls, double time, double last) {
  return [=](const std::vector<chord::W4A16GemmConfig>& configs) {
    ++*calls;
    std::vector<double> times(configs.size(), time);
    if (!times.empty()) times.back() = last;
    return times;
  };
}

// A private kernel cache and no choices in memory, for the scope of one test.
struct FreshChoices {
  chord::test::TempDir dir;
  chord::DiskCache cache{dir.path()};
  FreshChoices() { chord::w4a16_search_forget_choices(); }
  ~FreshChoices() { chord::w4a16_search_forget_choices(); }
};

}  // namespace

TEST_CASE("search: a decode call's plan starts with the rule's tile and holds only tiles the call can run",
          "[search]") {
  for (const char* arch : {"sm_90a", "sm_80"}) {
    for (int tokens : {1, 8, 20}) {
      const chord::W4A16Problem p = indexed_decode(tokens, arch);
      const chord::W4A16GemmConfig rule = chord::resolve_w4a16_config(p);
      const chord::W4A16SearchPlan plan = plan_of(p);
      CAPTURE(arch, tokens, plan.key.text());
      REQUIRE(plan.candidates.size() >= 2);
      CHECK(plan.candidates.size() <= 9);
      CHECK(chord::w4a16_search_entry(plan.candidates[0]) == chord::w4a16_search_entry(rule));
      for (size_t i = 0; i < plan.candidates.size(); ++i) {
        const chord::W4A16GemmConfig& c = plan.candidates[i];
        CAPTURE(chord::w4a16_search_entry(c));
        CHECK_FALSE(c.wgmma());
        CHECK(c.error() == nullptr);
        CHECK(c.shape_error(p.n, p.k) == nullptr);
        CHECK(p.block_size % c.block_m == 0);
        CHECK(c.block_m >= rule.block_m);
        if (std::string(arch) == "sm_80") CHECK(c.split_k == 1);
        // distinct entries: each names one candidate
        CHECK(chord::w4a16_search_entry_index(plan, chord::w4a16_search_entry(c)) == static_cast<int>(i));
      }
    }
  }
}

TEST_CASE("search: a rule's n-block run is a candidate of its own, the other tiles run one n block per CTA",
          "[search]") {
  // Qwen3-235B TP8 down at 64 tokens: N 4096 x K 192, 128 experts, the rule's run of 4.
  chord::W4A16Problem p = indexed_decode(64);
  p.k = 192;
  p.experts = 128;
  p.top_k = 1;
  p.a_rows = 512;
  p.capacity = 512 + 128 * 15;
  p.rows_per_expert = 4;
  const chord::W4A16SearchPlan plan = plan_of(p);
  REQUIRE(plan.candidates.size() >= 2);
  CHECK(plan.candidates[0].n_run == 4);
  CHECK(chord::w4a16_search_entry(plan.candidates[0]).find(" nr4") != std::string::npos);
  for (size_t i = 1; i < plan.candidates.size(); ++i) {
    CAPTURE(chord::w4a16_search_entry(plan.candidates[i]));
    CHECK(plan.candidates[i].n_run == 1);
    CHECK(chord::w4a16_search_entry(plan.candidates[i]).find(" nr") == std::string::npos);
  }
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    CHECK(chord::w4a16_search_entry_index(plan, chord::w4a16_search_entry(plan.candidates[i])) == static_cast<int>(i));
  }
  // The same tile without the run is the second candidate: the search can keep whole tiles
  // where the call's routing makes the run slower.
  chord::W4A16GemmConfig one = plan.candidates[0];
  one.n_run = 1;
  CHECK(chord::w4a16_search_entry_index(plan, chord::w4a16_search_entry(one)) == 1);
}

TEST_CASE("search: every candidate of a plan compiles for its arch", "[search]") {
  for (const char* arch : {"sm_90a", "sm_80"}) {
    const chord::W4A16SearchPlan plan = plan_of(indexed_decode(8, arch));
    for (const auto& c : plan.candidates) {
      CAPTURE(arch, chord::w4a16_search_entry(c));
      const auto kernel = chord::JitRuntime::global().compile(c.descriptor(chord::parse_arch(arch)));
      CHECK(kernel->info.arch == arch);
      CHECK(kernel->info.meta.cluster_size == static_cast<uint32_t>(c.split_k));
    }
  }
}

TEST_CASE("search: off for prefill, contiguous and WGMMA calls, with CHORD_W4A16_SEARCH=0 and under any other knob",
          "[search]") {
  const chord::W4A16Problem decode = indexed_decode(8);
  const chord::W4A16GemmConfig rule = chord::resolve_w4a16_config(decode);
  chord::Environment e;
  REQUIRE(chord::w4a16_search_plan(decode, rule, e).has_value());
  e.w4a16_search = false;
  CHECK_FALSE(chord::w4a16_search_plan(decode, rule, e).has_value());
  e = {};
  e.w4a16_bm = 16;
  CHECK_FALSE(chord::w4a16_search_plan(decode, rule, e).has_value());
  e = {};
  e.w4a16_split_k = 2;
  CHECK_FALSE(chord::w4a16_search_plan(decode, rule, e).has_value());
  e = {};
  e.w4a16_table = "heuristic";
  CHECK_FALSE(chord::w4a16_search_plan(decode, rule, e).has_value());
  e = {};
  e.w4a16_engine.candidates = chord::W4A16EngineKnob::kPortable;
  CHECK_FALSE(chord::w4a16_search_plan(decode, rule, e).has_value());

  chord::W4A16Problem prefill = indexed_decode(4096);
  prefill.block_size = 128;
  const chord::W4A16GemmConfig prefill_rule = chord::resolve_w4a16_config(prefill);
  CHECK(prefill_rule.wgmma());
  CHECK_FALSE(chord::w4a16_search_plan(prefill, prefill_rule, {}).has_value());

  chord::W4A16Problem contiguous = decode;
  contiguous.mode = chord::kW4A16Contiguous;
  chord::W4A16GemmConfig small = rule;
  small.mode = chord::kW4A16Contiguous;
  CHECK_FALSE(chord::w4a16_search_plan(contiguous, small, {}).has_value());

  // the variable itself
  chord::test::ScopedEnv off("CHORD_W4A16_SEARCH", std::string("0"));
  CHECK_FALSE(chord::read_environment().w4a16_search);
  chord::test::ScopedEnv bad("CHORD_W4A16_SEARCH", std::string("yes"));
  CHECK_THROWS(chord::read_environment());
}

TEST_CASE("search: a choice holds for the routed rows' power of two, not across shapes", "[search]") {
  CHECK(plan_of(indexed_decode(5)).key == plan_of(indexed_decode(8)).key);
  CHECK(plan_of(indexed_decode(5)).key.text() == plan_of(indexed_decode(8)).key.text());
  CHECK_FALSE(plan_of(indexed_decode(8)).key == plan_of(indexed_decode(9)).key);
  CHECK(plan_of(indexed_decode(8)).key.text() != plan_of(indexed_decode(9)).key.text());
  chord::W4A16Problem other_n = indexed_decode(8);
  other_n.n = 2048;
  CHECK_FALSE(plan_of(other_n).key == plan_of(indexed_decode(8)).key);
  chord::W4A16Problem other_gpu = indexed_decode(8);
  other_gpu.sm_count = 114;
  CHECK_FALSE(plan_of(other_gpu).key == plan_of(indexed_decode(8)).key);
  chord::W4A16Problem other_arch = indexed_decode(8, "sm_80");
  CHECK_FALSE(plan_of(other_arch).key == plan_of(indexed_decode(8)).key);
}

TEST_CASE("search: a choice holds for one rule tile, where the rule changes inside a power of two", "[search]") {
  // Qwen3-235B TP8 down (N 4096 x K 192, 128 experts): 320 and 448 routed rows share a power of
  // two, and the rule runs whole tiles at the first and runs of 4 at the second.
  auto tp8_down = [](int routes) {
    chord::W4A16Problem p = indexed_decode(64);
    p.k = 192;
    p.experts = 128;
    p.top_k = 1;
    p.a_rows = routes;
    p.capacity = routes + 128 * 15;
    p.rows_per_expert = routes / 128;
    return p;
  };
  const chord::W4A16SearchPlan whole = plan_of(tp8_down(320)), run = plan_of(tp8_down(448));
  REQUIRE(whole.candidates[0].n_run == 1);
  REQUIRE(run.candidates[0].n_run == 4);
  CHECK(whole.key.rows_log2 == run.key.rows_log2);
  CHECK_FALSE(whole.key == run.key);
  CHECK(chord::w4a16_search_cache_key(whole).hex() != chord::w4a16_search_cache_key(run).hex());

  // Each keeps its own choice: the run's plan does not reuse (or reject) the whole tile's.
  FreshChoices fresh;
  chord::test::CaptureStderr warnings;
  int timed = 0;
  const auto pick_last = counting_timer(&timed, 10.0, 5.0);
  const std::string whole_last = chord::w4a16_search_entry(whole.candidates.back());
  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(whole, false, pick_last, fresh.cache)) == whole_last);
  CHECK(chord::w4a16_search_known(run.key) == nullptr);
  const std::string run_last = chord::w4a16_search_entry(run.candidates.back());
  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(run, false, pick_last, fresh.cache)) == run_last);
  CHECK(timed == 2);
  chord::w4a16_search_forget_choices();  // a later process finds both in the cache, with no warning
  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(whole, false, pick_last, fresh.cache)) == whole_last);
  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(run, false, pick_last, fresh.cache)) == run_last);
  CHECK(timed == 2);
  CHECK(warnings.text().empty());
}

TEST_CASE("search: two searches of one shape keep the first choice made, in memory and in the cache", "[search]") {
  FreshChoices fresh;
  const chord::W4A16SearchPlan plan = plan_of(indexed_decode(3));
  REQUIRE(plan.candidates.size() >= 3);
  const std::string rule = chord::w4a16_search_entry(plan.candidates.front());
  const std::string last = chord::w4a16_search_entry(plan.candidates.back());
  // The outer search's timing runs while another search of the shape (as from another thread)
  // decides first, for the rule's tile; the outer one's timing favours the last candidate.
  int timed = 0;
  const auto rule_wins = counting_timer(&timed, 5.0, 10.0);
  const auto racing = [&](const std::vector<chord::W4A16GemmConfig>& configs) {
    CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(plan, false, rule_wins, fresh.cache)) == rule);
    std::vector<double> times(configs.size(), 10.0);
    times.back() = 5.0;
    return times;
  };
  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(plan, false, racing, fresh.cache)) == rule);
  CHECK(timed == 1);
  REQUIRE(chord::w4a16_search_known(plan.key) != nullptr);
  CHECK(chord::w4a16_search_entry(*chord::w4a16_search_known(plan.key)) == rule);
  chord::w4a16_search_forget_choices();  // the cache holds the same choice
  int again = 0;
  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(plan, false, counting_timer(&again, 10.0, 5.0),
                                                               fresh.cache)) == rule);
  CHECK(again == 0);
  CHECK(rule != last);
}

TEST_CASE("search: the rule's tile stays unless another is faster by the margin", "[search]") {
  CHECK(chord::w4a16_search_choice({10.0, 9.8, 10.5}) == 0);
  CHECK(chord::w4a16_search_choice({10.0, 9.5, 9.6}) == 1);
  CHECK(chord::w4a16_search_choice({10.0, 9.6, 9.5}) == 2);
  CHECK(chord::w4a16_search_choice({kInf, 12.0, 11.0}) == 2);
  CHECK(chord::w4a16_search_choice({10.0, kInf}) == 0);
  CHECK(chord::w4a16_search_choice({kInf, kInf}) == 0);
  CHECK(chord::w4a16_search_choice({}) == 0);
}

TEST_CASE("search: a choice is timed once and kept in memory and in the cache, and capture times nothing", "[search]") {
  FreshChoices fresh;
  chord::DiskCache& cache = fresh.cache;
  const chord::W4A16SearchPlan plan = plan_of(indexed_decode(3));
  int timed = 0;
  const auto pick_last = counting_timer(&timed, 10.0, 5.0);
  const std::string last = chord::w4a16_search_entry(plan.candidates.back());
  const std::string rule = chord::w4a16_search_entry(plan.candidates.front());

  // under capture, no choice yet: the rule's tile, nothing timed or stored
  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(plan, true, pick_last, cache)) == rule);
  CHECK(timed == 0);
  CHECK(chord::w4a16_search_choices() == 0);

  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(plan, false, pick_last, cache)) == last);
  CHECK(timed == 1);
  REQUIRE(chord::w4a16_search_known(plan.key) != nullptr);
  CHECK(chord::w4a16_search_entry(*chord::w4a16_search_known(plan.key)) == last);
  CHECK(chord::w4a16_search_known(plan_of(indexed_decode(30)).key) == nullptr);
  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(plan, true, pick_last, cache)) == last);
  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(plan, false, pick_last, cache)) == last);
  CHECK(timed == 1);

  // a new process (memory forgotten) finds the choice in the cache
  chord::w4a16_search_forget_choices();
  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(plan, true, pick_last, cache)) == last);
  CHECK(timed == 1);
}

TEST_CASE("search: a cache entry that names no candidate of the plan is dropped and the shape searched again",
          "[search]") {
  FreshChoices fresh;
  chord::DiskCache& cache = fresh.cache;
  const chord::W4A16SearchPlan plan = plan_of(indexed_decode(2));
  for (const std::string forged : {std::string("bm4096 bn8 bk8 s1 wm1 wn1 sk64 gs0"), std::string(),
                                   std::string("\x00\xff garbage", 10)}) {
    cache.store(chord::w4a16_search_cache_key(plan), std::vector<char>(forged.begin(), forged.end()));
    int timed = 0;
    const auto rule_wins = counting_timer(&timed, 10.0, 10.0);
    chord::test::CaptureStderr warnings;
    const chord::W4A16GemmConfig c = chord::w4a16_searched_config(plan, false, rule_wins, cache);
    CHECK(chord::w4a16_search_entry(c) == chord::w4a16_search_entry(plan.candidates.front()));
    CHECK(timed == 1);
    chord::w4a16_search_forget_choices();
    // the search stored its own choice over the forged entry
    int again = 0;
    const auto count = counting_timer(&again, 10.0, 10.0);
    chord::w4a16_searched_config(plan, false, count, cache);
    CHECK(again == 0);
    chord::w4a16_search_forget_choices();
  }
}

TEST_CASE("search: a timer that answers for the wrong number of candidates keeps the rule's tile", "[search]") {
  FreshChoices fresh;
  chord::DiskCache& cache = fresh.cache;
  const chord::W4A16SearchPlan plan = plan_of(indexed_decode(4));
  const auto short_answer = [](const std::vector<chord::W4A16GemmConfig>&) { return std::vector<double>{1.0}; };
  const auto c = chord::w4a16_searched_config(plan, false, short_answer, cache);
  CHECK(chord::w4a16_search_entry(c) == chord::w4a16_search_entry(plan.candidates.front()));
}

TEST_CASE("search: a plan of one tile times nothing and keeps that tile", "[search]") {
  FreshChoices fresh;
  chord::DiskCache& cache = fresh.cache;
  chord::W4A16SearchPlan plan = plan_of(indexed_decode(16));
  plan.candidates.resize(1);
  const auto never = [](const std::vector<chord::W4A16GemmConfig>& configs) {
    FAIL("timed a plan of one tile");
    return std::vector<double>(configs.size(), 1.0);
  };
  const auto c = chord::w4a16_searched_config(plan, false, never, cache);
  CHECK(chord::w4a16_search_entry(c) == chord::w4a16_search_entry(plan.candidates.front()));
  CHECK(chord::w4a16_search_known(plan.key) != nullptr);
}

TEST_CASE("search: routing that leaves most experts empty is not representative, and a timer that declines "
          "leaves the shape to a later call, backing off",
          "[search]") {
  // 64 tokens x top-8 over 32 experts reach about 32 experts when uniform; the placeholder
  // routing of a warm-up pass sends every token to the same 8.
  const chord::W4A16Problem p = indexed_decode(64);
  CHECK(chord::w4a16_routing_representative(p, 32, 512));
  CHECK(chord::w4a16_routing_representative(p, 17, 512));
  CHECK_FALSE(chord::w4a16_routing_representative(p, 8, 512));
  CHECK_FALSE(chord::w4a16_routing_representative(p, 0, 0));
  // One token: 8 experts of 8 routes is all there can be.
  CHECK(chord::w4a16_routing_representative(indexed_decode(1), 8, 8));
  // Under expert parallelism only this GPU's routes count: 40 of them reach about 23 experts.
  CHECK(chord::w4a16_routing_representative(p, 20, 40));
  chord::W4A16Problem masked = p;
  masked.mode = chord::kW4A16Masked;
  masked.num_groups = 32;
  CHECK(chord::w4a16_routing_representative(masked, 30, 256));
  CHECK_FALSE(chord::w4a16_routing_representative(masked, 4, 256));

  FreshChoices fresh;
  chord::DiskCache& cache = fresh.cache;
  const chord::W4A16SearchPlan plan = plan_of(p);
  int declined = 0;
  const auto declines = [&declined](const std::vector<chord::W4A16GemmConfig>&) {
    ++declined;
    return std::vector<double>{};
  };
  const std::string rule = chord::w4a16_search_entry(plan.candidates.front());
  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(plan, false, declines, cache)) == rule);
  CHECK(chord::w4a16_search_known(plan.key) == nullptr);
  int timed = 0;
  const auto pick_last = counting_timer(&timed, 10.0, 1.0);
  // After one decline the next call backs off (the rule's tile, nothing read); the one after
  // times the candidates and decides.
  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(plan, false, pick_last, cache)) == rule);
  CHECK(timed == 0);
  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(plan, false, pick_last, cache)) ==
        chord::w4a16_search_entry(plan.candidates.back()));
  CHECK(timed == 1);

  // A shape whose calls keep declining (a rank whose routing never spreads, or the warm-up's
  // one call per layer): after its n-th decline the next 2^n - 1 calls read no routing back,
  // so 100 calls time (and sync) on 6 of them; a representative call after that decides.
  const chord::W4A16SearchPlan other = plan_of(indexed_decode(20));
  REQUIRE_FALSE(other.key == plan.key);
  declined = 0;
  for (int call = 0; call < 100; ++call) {
    CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(other, false, declines, cache)) ==
          chord::w4a16_search_entry(other.candidates.front()));
  }
  CHECK(declined == 6);  // calls 1, 3, 7, 15, 31, 63
  CHECK(chord::w4a16_search_known(other.key) == nullptr);
  CHECK_FALSE(cache.load(chord::w4a16_search_cache_key(other)).has_value());
  timed = 0;
  for (int call = 0; call < 64 && timed == 0; ++call) chord::w4a16_searched_config(other, false, pick_last, cache);
  CHECK(timed == 1);  // call 127 reads its routing again, finds it representative and decides
  CHECK(chord::w4a16_search_known(other.key) != nullptr);
}

TEST_CASE("search: when nothing could be timed the rule's tile runs, kept in memory but not in the cache",
          "[search]") {
  FreshChoices fresh;
  chord::DiskCache& cache = fresh.cache;
  const chord::W4A16SearchPlan plan = plan_of(indexed_decode(6));
  int timed = 0;
  const auto all_failed = counting_timer(&timed, kInf, kInf);
  const std::string rule = chord::w4a16_search_entry(plan.candidates.front());
  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(plan, false, all_failed, cache)) == rule);
  CHECK(chord::w4a16_search_entry(chord::w4a16_searched_config(plan, false, all_failed, cache)) == rule);
  CHECK(timed == 1);
  CHECK_FALSE(cache.load(chord::w4a16_search_cache_key(plan)).has_value());
}

TEST_CASE("search: synthetic routing spreads the shape's rows like uniform traffic, within the call's buffers",
          "[search]") {
  // Indexed: 64 tokens x top-8 over 32 experts, block 16, vLLM's capacity.
  chord::W4A16Problem p = indexed_decode(64);
  const auto r = chord::w4a16_synthetic_routing(p);
  REQUIRE(r.has_value());
  const int routes = 64 * 8;
  CHECK(r->out_rows == routes);
  REQUIRE(r->sorted_ids.size() == static_cast<size_t>(p.capacity));
  REQUIRE(r->expert_ids.size() == static_cast<size_t>((p.capacity + 15) / 16));
  CHECK(r->num_tokens_padded % 16 == 0);
  CHECK(r->num_tokens_padded <= p.capacity);
  std::vector<int> seen(routes, 0);
  std::vector<int> expert_of(routes, -1);
  std::vector<char> active(32, 0);
  for (int i = 0; i < p.capacity; ++i) {
    const int id = r->sorted_ids[i];
    const int block = i / 16;
    if (i >= r->num_tokens_padded) {
      CHECK(id == routes);  // padding past the valid prefix
      CHECK(r->expert_ids[block] == -1);
      continue;
    }
    REQUIRE(r->expert_ids[block] >= 0);
    REQUIRE(r->expert_ids[block] < 32);
    if (id == routes) continue;  // a block's padding
    REQUIRE(id >= 0);
    REQUIRE(id < routes);
    ++seen[id];
    expert_of[id] = r->expert_ids[block];
    active[r->expert_ids[block]] = 1;
  }
  for (int id = 0; id < routes; ++id) CHECK(seen[id] == 1);  // every route once
  for (int t = 0; t < 64; ++t) {                              // a token's experts are distinct
    std::vector<int> experts(expert_of.begin() + t * 8, expert_of.begin() + t * 8 + 8);
    std::sort(experts.begin(), experts.end());
    CHECK(std::adjacent_find(experts.begin(), experts.end()) == experts.end());
  }
  int active_count = 0;
  for (char a : active) active_count += a;
  CHECK(chord::w4a16_routing_representative(p, active_count, routes));
  // The same draw every time.
  CHECK(chord::w4a16_synthetic_routing(p)->sorted_ids == r->sorted_ids);
  // No layout past the capacity, or with more routes per token than experts.
  chord::W4A16Problem tight = p;
  tight.capacity = routes;  // no room for the blocks' padding
  CHECK_FALSE(chord::w4a16_synthetic_routing(tight).has_value());
  chord::W4A16Problem wide = p;
  wide.top_k = 33;
  CHECK_FALSE(chord::w4a16_synthetic_routing(wide).has_value());

  // Masked: the groups' expected rows, each group within max_m.
  chord::W4A16Problem m = p;
  m.mode = chord::kW4A16Masked;
  m.num_groups = 32;
  m.max_m = 12;
  m.rows_per_expert = 8;
  const auto masked = chord::w4a16_synthetic_routing(m);
  REQUIRE(masked.has_value());
  REQUIRE(masked->masked_m.size() == 32);
  int total = 0, groups_with_rows = 0;
  for (int rows : masked->masked_m) {
    CHECK(rows >= 0);
    CHECK(rows <= 12);
    total += rows;
    groups_with_rows += rows > 0;
  }
  CHECK(total == 32 * 8);
  CHECK(masked->max_m == *std::max_element(masked->masked_m.begin(), masked->masked_m.end()));
  CHECK(masked->out_rows == 32 * masked->max_m);
  CHECK(chord::w4a16_routing_representative(m, groups_with_rows, total));
  m.rows_per_expert = 20;  // more than the groups hold: every group full
  const auto full = chord::w4a16_synthetic_routing(m);
  REQUIRE(full.has_value());
  for (int rows : full->masked_m) CHECK(rows == 12);
  CHECK(full->max_m == 12);
  m.max_m = 4096;  // a server's dispatch buffer: the output stays the size of the rows laid out
  m.rows_per_expert = 8;
  CHECK(chord::w4a16_synthetic_routing(m)->out_rows < 32 * 32);

  // Offsets: ascending end rows, the last at the call's rows.
  chord::W4A16Problem o = p;
  o.mode = chord::kW4A16Offsets;
  o.a_rows = 100;
  const auto offsets = chord::w4a16_synthetic_routing(o);
  REQUIRE(offsets.has_value());
  REQUIRE(offsets->offsets.size() == 32);
  CHECK(std::is_sorted(offsets->offsets.begin(), offsets->offsets.end()));
  CHECK(offsets->offsets.back() == 100);
  CHECK(offsets->out_rows == 100);

  chord::W4A16Problem c = p;
  c.mode = chord::kW4A16Contiguous;
  CHECK_FALSE(chord::w4a16_synthetic_routing(c).has_value());
}
