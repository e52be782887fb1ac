#include "tuning_tables/w4a16_resolver.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/arch.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "tuning_tables/tuning_table.hpp"

// Config choice, as candidates -> best:
//  1. candidates, best first: the rows of the call's tuning table that apply to it (file order:
//     measured data), then the one-role WGMMA defaults for prefill-sized calls, then the
//     heuristic. Each one-role BM128 WGMMA candidate is preceded by its warp-specialized tile
//     where that kernel measured faster (ws_promotes). CHORD_W4A16_ENGINE=prefer_wgmma ranks the
//     WGMMA candidates before the mma.sync ones.
//  2. legality: a candidate the call cannot run is rejected, with the reason (engine not on
//     this GPU or turned off by CHORD_W4A16_ENGINE=portable, invalid with the call's weight
//     kind, N/K, indexed routing block).
//  3. best: the first candidate not rejected; the heuristic, last, when every one is.
//  4. a forced engine (CHORD_W4A16_ENGINE=mma_sync|wgmma|wgmma_ws) and CHORD_W4A16_BM/BN/BK/
//     STAGES/WARPS_N start from the best one-role candidate (a forced config is validated, not
//     filtered: a value the kernel cannot run is an error).
//  5. launch shape: warps along M for narrow prefill tiles, split-K for decode grids.
//  6. the group-sum form: the default, or CHORD_W4A16_GROUP_SUMS where the tile runs the INT4
//     group sums and can take that form.
// Zero-point weights (kW4A16WeightInt4Zp*) take the INT4 candidates on every engine (their
// larger scale tiles may cost a one-role WGMMA tile a stage: w4a16_config_for_weight), and so
// do the group-128 kinds (kW4A16WeightInt4G128*, kW4A16WeightInt4ZpG128*: smaller scale tiles,
// the group-32 kind's config).
namespace chord {
namespace {

// The M tiles a decode call is expected to run (the CTAs that stream weights; the grid's other
// tiles exit at once), from what the host knows: routed rows R over E experts land on
// E * (1 - (1 - 1/E)^R) distinct experts under uniform routing, each with ceil(rows / BM)
// tiles; masked calls run every group. 0 when the grid's count is exact (contiguous: the
// caller's rows are the tiles) or the call's routed rows are unknown.
double expected_active_tiles(const W4A16Problem& p, int block_m) {
  double routed = 0;
  if (p.mode == kW4A16Contiguous) return 0;
  if (p.mode == kW4A16Masked) {
    if (p.num_groups <= 0) return 0;
    return double(p.num_groups) * std::ceil(double(std::max<int64_t>(p.rows_per_expert, 1)) / block_m);
  }
  if (p.mode == kW4A16Indexed) {
    routed = p.top_k > 0 ? double(p.a_rows) * p.top_k : 0;
  } else {
    routed = p.a_rows;
  }
  if (routed <= 0 || p.experts <= 0) return 0;
  const double active = std::max(1.0, w4a16_expected_active_experts(p.experts, routed));
  return active * std::ceil(routed / active / block_m);
}

// The rows a tile is sized for. Routing is ragged: 1.5x the mean rows per expert, so that an
// expert a little above the mean still streams its weights once (a second M tile re-reads
// them; measured: masked 8 tokens/expert with up to 12 rows took 461 us with BM8 against 391
// us with BM16, bench, H200).
int64_t ragged_tile_rows(const W4A16Problem& p) { return p.rows_per_expert + p.rows_per_expert / 2; }

// Whether a masked call's buffer holds over twice the tiles of `block_m` rows that its hint's
// rows need (w4a16_masked_tiles): a kernel that takes one tile per CTA launches every one.
bool masked_buffer_exceeds_hint(int block_m, const W4A16Problem& p) {
  if (p.mode != kW4A16Masked || p.num_groups <= 0 || p.max_m <= 0) return false;
  const int hint = static_cast<int>(std::clamp<int64_t>(p.rows_per_expert, 1, p.max_m));
  return w4a16_masked_tiles(block_m, p.num_groups, p.max_m, 0) >
         2 * w4a16_masked_tiles(block_m, p.num_groups, p.max_m, hint);
}

// Configs measured on the H200 with lab/kernel_check:
//  - decode (<= 32 rows per expert): BM8..32 x BN128 x BK128, 3 stages, 4 warps along N —
//    5-6 CTAs per SM keep enough weight bytes in flight; more stages or warps were 10-25%
//    slower at 8 tokens per expert.
//  - prefill: BM64/128 x BN128 x BK64, 4 stages, 2x4 warps (272 TFLOP/s at 512 rows/expert).
W4A16GemmConfig heuristic(const W4A16Problem& p) {
  W4A16GemmConfig c;
  c.mode = p.mode;
  const int64_t rows = ragged_tile_rows(p);
  c.block_m = 128;
  for (int bm : {8, 16, 32, 64}) {
    if (rows <= bm) {
      c.block_m = bm;
      break;
    }
  }
  if (p.mode == kW4A16Indexed) {
    while (p.block_size % c.block_m != 0) c.block_m /= 2;  // block_m must divide the routing block
  }
  const bool decode = c.block_m <= 32;
  c.block_n = p.n % 128 == 0 ? 128 : (p.n % 64 == 0 ? 64 : 16);
  c.block_k = decode && p.k % 128 == 0 ? 128 : 64;
  c.stages = decode ? 3 : 4;
  c.warps_m = decode ? 1 : 2;
  c.warps_n = c.block_n >= 64 ? 4 : 1;
  // Small experts (<= 2 MB packed, e.g. Qwen3 1536x2048, 2048x768) at decode: few CTAs
  // stream each expert, so use 64-row tiles (twice the CTAs). NF4 runs them on the
  // direct-register path (STAGES == 2, four 512-byte chunks ahead per warp): at 1 token it is
  // faster there than on the staged BN128 BK128 S3 tile (21.5 / 14.1 vs 25.1 / 15.2 us, bench,
  // H200). INT4 8-row tiles run the staged path with 3 stages: the direct one took 1.18x its
  // time (geometric mean, 1.00-1.42x) on the 28 such calls of the generalization set
  // (Qwen3-235B, GLM-4.5 TP8). The 16- and 32-row tiles keep the direct path: no measured
  // call of the bench's sets reaches them, so their choice stays as it was tuned.
  if (decode && (int64_t)p.n * p.k <= (int64_t{4} << 20) && p.n % 64 == 0 && p.k % 256 == 0) {
    c.block_n = 64;
    c.block_k = 256;
    c.stages = !w4a16_is_nf4(p.weight) && c.block_m == 8 ? 3 : 2;
    c.warps_n = 4;
  } else if (decode && !w4a16_is_nf4(p.weight) && c.block_n == 128 && p.n % 64 == 0) {
    // INT4 decode calls that leave SMs without a CTA (few active experts: one or two experts
    // of a large N x K) take 64-row weight tiles, twice the CTAs before split-K adds more.
    const double ctas = expected_active_tiles(p, c.block_m) * (p.n / c.block_n);
    if (ctas > 0 && ctas < p.sm_count) c.block_n = 64;
  }
  // INT4 masked calls of 22 to 512 rows per group (a BM64 / BM128 tile) whose buffer holds over
  // twice the tiles of the hint's rows (vLLM's batched buffers: 2048 rows per group at EP8): the
  // 256-thread tiles take one tile per CTA, so their grid covers the whole buffer; the BM64 tile
  // of one warp along M (128 threads) loops over the groups' non-empty tiles (its masked_loop
  // form, w4a16_masked_tiles), several per group above 64 rows. Measured on an H100 with the
  // portable engine (the family sm_80 and sm_100 run; Kimi K2 EP8 / 16 / 32, vLLM's default
  // buffer, bench_w4a16.py --only masked --capacity vllm): against the buffer-wide tiles in one
  // process (--against), 1.33-2.69x faster at 32-64 tokens per expert and 1.23-1.62x at 96-128, on
  // every call; at 256 and 512, against the BM128 tile forced (CHORD_W4A16_BM=128
  // CHORD_W4A16_WARPS_M=2), two processes of each alternated, 1.01-1.33x (median 1.08x). At BK128
  // 3 stages it took 0.99-1.05x the time of BK64 4 stages. Over 512 rows the BM128 tile stays (not
  // measured).
  if (p.mode == kW4A16Masked && !w4a16_is_nf4(p.weight) && c.block_m >= 64 && p.rows_per_expert <= 512 &&
      masked_buffer_exceeds_hint(64, p)) {
    c.block_m = 64;
    c.warps_m = 1;
  }
  // GPUs with less shared memory per CTA (99 KiB on sm_86 / sm_89 / sm_120: the NF4 prefill
  // tile at 4 stages takes 115 KiB, at 3 95 KiB) run fewer stages.
  while (c.stages > 2 && w4a16_config_for_weight(c, p.weight).smem_bytes() > max_shared_bytes_per_block(p.arch)) {
    --c.stages;
  }
  return c;
}

// The one-role WGMMA defaults: BM128 (BM64 where the indexed routing block needs it) x BN128,
// two consumer warpgroups, 5 stages (measured 1.5x the mma.sync prefill: docs/kernels.md).
W4A16GemmConfig wgmma_defaults(const W4A16Problem& p) {
  W4A16GemmConfig c;
  c.engine = W4A16Engine::kWgmma;
  c.mode = p.mode;
  c.block_m = 128;
  c.block_n = 128;
  c.block_k = kW4A16WgmmaBlockK;
  c.warpgroups = 2;
  c.stages = 5;
  if (p.mode == kW4A16Indexed) {
    while (c.block_m > 64 && p.block_size % c.block_m != 0) c.block_m /= 2;
  }
  return c;
}

// An mma.sync tile for an indexed call: BLOCK_M halves until it divides the routing block.
W4A16GemmConfig fit_routing_block(W4A16GemmConfig c, const W4A16Problem& p) {
  if (!c.wgmma() && p.mode == kW4A16Indexed) {
    while (p.block_size % c.block_m != 0) c.block_m /= 2;
    while (c.warps_m > 1 && c.block_m % (8 * c.warps_m) != 0) c.warps_m /= 2;
  }
  return c;
}

// Where the warp-specialized kernel (128 tokens x 256 weight rows per CTA, one CTA per SM)
// measured faster than the one-role BM128 tile it replaces (H200, bench and kernel_check): NF4
// always (Qwen3 T=4096 gate_up 457.2 -> 429.3 us); INT4 from K 768 (K 256 was slower at 6
// stages) and 512 expected rows per expert (contiguous EP8 512 gate_up 2379 -> 2294 us); for
// the indexed hint, which counts the routes to other ranks' experts too, 2048 (EP8 T=4096, hint
// 683: 380 -> 409 us; T=16384, hint 2731: 2348 -> 2247), or 1024 where K <= 2048: a short K
// block loop leaves the one-role tile's pipeline fill and epilogue exposed, which the
// persistent kernel overlaps with the next tile (EP8 T=8192, hint 1365, about 170 local rows
// per expert: down, K 2048, 1.024-1.083x faster; gate_up, K 7168, 0.946-1.012x). A table
// whose hint is exact names its own bars (TP8's wgmma_ws rows). docs/bench_h200.json rows
// 40-41, 44, 47, 50, 53, 56, 59, 84, 89 run it.
constexpr int kWsMinInt4K = 768;
constexpr int64_t kWsMinInt4Rows = 512;
constexpr int64_t kWsMinInt4RowsIndexed = 2048;
constexpr int64_t kWsMinInt4RowsIndexedShortK = 1024;
constexpr int kWsShortK = 2048;

// A masked call of over 64 rows per group (past the narrow tiles) whose buffer holds over twice
// the 128-token tiles its hint's rows need (vLLM's batched buffers: 2048 rows per group at EP8)
// takes the warp-specialized tile at any K: the one-role tile takes one tile per CTA, so its grid
// covers the whole buffer, where the persistent kernel's CTAs take only the groups' non-empty
// tiles (the compact schedule). Its tile is BN256: a call whose N is not a multiple of 256 keeps
// the one-role tile. Measured on an H100 (Kimi K2 EP8 / 16 / 32 at 96, 128 and 256 tokens per
// expert, K 7168 and 2048, vLLM's default buffer, bench_w4a16.py --only masked --capacity vllm
// --against the one-role tiles' buffer-wide grid): 1.05-1.76x faster on all 18 calls (median
// 1.17x; EP8 96 tokens/expert gate_up / down 627.0 / 373.0 us to 569.2 / 319.8, EP32 238.0 /
// 143.1 to 160.5 / 81.3). K under 768 is not measured.
bool ws_promotes(const W4A16Problem& p) {
  const int64_t indexed_rows = p.k <= kWsShortK ? kWsMinInt4RowsIndexedShortK : kWsMinInt4RowsIndexed;
  const int64_t min_rows = p.mode == kW4A16Indexed ? indexed_rows : kWsMinInt4Rows;
  return w4a16_is_nf4(p.weight) || (p.k >= kWsMinInt4K && p.rows_per_expert >= min_rows) ||
         (p.rows_per_expert > 64 && masked_buffer_exceeds_hint(kW4A16WgmmaWsBlockM, p));
}

bool sm90a(const Arch& arch) { return arch.sm() == 90 && arch.family_specific; }

// The warp-specialized kernel's stages on tiles under 128 tokens.
constexpr int kWsNarrowStages = 6;

// Whether the call's expected tiles of `block_m` rows, at BN256, give the grid two CTAs per SM:
// the narrow tiles take BN256 (fewer decode instructions per weight) only then.
bool bn256_fills_twice(const W4A16Problem& p, int block_m) {
  return p.n % 256 == 0 && expected_active_tiles(p, block_m) * (p.n / 256) >= 2.0 * p.sm_count;
}

// INT4 masked and offsets calls of 11 to 64 expected rows per expert: a one-role WGMMA tile just
// wide enough for 1.5x the hint (32, 48 or 96 tokens; wgmma N), so that an expert's rows fit one
// tile and the MMAs do little padding. In these modes a tile covers one expert's consecutive
// rows. The mma.sync tiles stay below (8 tokens per expert: 225 / 117 us against 231 / 141 on
// a 16-token WGMMA tile, masked EP8); above, the BM128 tile. BN 256 where the grid still has two
// CTAs per SM (fewer decode instructions per weight), else 128. Measured on the H200 (bench,
// forced tiles): masked EP8 16 tok/E 303 / 161 us on the mma.sync BM32 tile against 253 / 143 on
// BM32 BN256; 32 tok/E 341 / 185 on BM64 against 299 / 168 on BM48 BN256; 64 tok/E 501 / 262
// on BM128 against 442 / 234 on BM96 BN128; EP16 and EP32 alike, but for EP32 gate_up at 32
// tok/E, whose 12 experts give BN256 192 CTAs (101 us; BN128: 90).
// Indexed calls aligned at a routing block of 32 take the 32-token tile where it holds 1.5x the
// hint: a block is one expert's rows, so the tile streams the expert's weights once per block
// (the mma.sync BM32 tile it replaces spends more instructions per weight). Measured on the
// H200 (generalization set, block 32, against the mma.sync BM32 tile in one process): 1.0-1.18x
// on 22 of its 28 calls (DeepSeek-V3 EP8 64 tokens 176 / 95 us against 207 / 109), 0.89-0.97x
// on skewed Mixtral draws whose hot experts hold several blocks. Blocks of 64 keep the tables'
// and the WGMMA defaults' BM64 tile: at TP8 1024 tokens (21 rows per expert, block 64) the
// 32-token tile took 251 us against BM64's 206.
std::optional<W4A16GemmConfig> narrow_wgmma(const W4A16Problem& p) {
  const bool indexed = p.mode == kW4A16Indexed;
  if (w4a16_is_nf4(p.weight) || (p.mode != kW4A16Masked && p.mode != kW4A16Offsets && !indexed)) return std::nullopt;
  const int64_t rows = ragged_tile_rows(p);
  if (rows <= 16 || rows > (indexed ? 32 : 96) || (indexed && p.block_size != 32)) return std::nullopt;
  W4A16GemmConfig c = wgmma_defaults(p);
  c.block_m = rows <= 32 ? 32 : rows <= 48 ? 48 : 96;
  c.block_n = c.block_m <= 48 && bn256_fills_twice(p, c.block_m) ? 256 : 128;
  return c;
}

// A masked call of 33 to 96 tile rows (22-64 tokens per expert) whose buffer holds over twice the
// tiles its hint's rows need (vLLM's batched buffers: 2048 rows per group at EP8, 8192 at EP32,
// for a few dozen) takes its narrow tile's height on the warp-specialized kernel, ranked before
// the one-role tile (which CHORD_W4A16_ENGINE=wgmma still gets): the one-role tile takes one
// tile per CTA, so its grid covers the whole buffer, where the persistent kernel's CTAs take only
// the groups' non-empty tiles (the compact schedule). BN256 where the grid holds two tiles per
// SM, else 128. Measured on an H100 (Kimi K2 EP8 / 16 / 32 at 32 and 64 tokens per expert,
// vLLM's default buffer, bench_w4a16.py --only masked --capacity vllm --against the buffer-wide
// one-role tiles): 1.16-2.70x faster on all 12 calls, and 0.99-1.08x the one-role tiles' time in
// a buffer twice the mean rows. Its 128-token tile was slower than the one-role tiles on EP8
// gate_up (0.86x / 0.98x): its padding rows make it tensor-bound.
std::optional<W4A16GemmConfig> narrow_ws(const W4A16Problem& p, W4A16GemmConfig narrow) {
  if (narrow.block_m <= 32 || !masked_buffer_exceeds_hint(narrow.block_m, p)) return std::nullopt;
  narrow.engine = W4A16Engine::kWgmmaWs;
  narrow.block_n = bn256_fills_twice(p, narrow.block_m) ? 256 : 128;
  narrow.stages = kWsNarrowStages;
  return narrow;
}

// A masked call whose buffer holds over twice the tiles its hint's rows need (vLLM's batched
// buffers: 2048 rows per group at EP8 for a few dozen), where the mma.sync alternative is a
// decode tile (BM <= 32, the heuristic's up to about 21 rows per group): a kernel that takes one
// tile per CTA (the one-role WGMMA kernel; takes_masked_loop) would launch every tile of the
// buffer (ops/w4a16.cpp, launch), where the mma.sync decode tile takes the hint's tiles in turn
// (w4a16_masked_tiles). Above that the mma.sync tiles are its prefill ones, slower than the
// buffer-wide WGMMA grid. Measured on an H100, Kimi K2 EP8 /
// 16 / 32 in vLLM's default buffer (bench_w4a16.py --only masked --capacity vllm, against the
// buffer-wide grid in one process): 16 tokens per expert on mma.sync's BM32 tile 1.18-3.57x as
// fast, 1.06-1.23x the WGMMA tile's time in a tight buffer; 32 and 64 tokens per expert on its
// BM64 / BM128 tiles 0.51-1.44x as fast, slower on 9 of the 12 calls.
bool masked_buffer_too_large(const W4A16GemmConfig& run, const W4A16Problem& p) {
  if (run.takes_masked_loop() || heuristic(p).block_m > 32) return false;
  return masked_buffer_exceeds_hint(run.block_m, p);
}

// Why the call cannot run a candidate (`run`: as its weight kind runs it), or nullptr.
const char* rejection(const W4A16GemmConfig& run, const W4A16Problem& p, const Environment& e) {
  if (run.wgmma()) {
    if (!sm90a(p.arch)) return "the WGMMA kernels need sm_90a";
    if (e.w4a16_engine.candidates == W4A16EngineKnob::kPortable) {
      return "CHORD_W4A16_ENGINE=portable keeps every call on mma.sync";
    }
  }
  if (const char* why = run.error()) return why;
  if (const char* why = run.shape_error(p.n, p.k)) return why;
  if (p.mode == kW4A16Indexed && p.block_size % run.block_m != 0) return "BLOCK_M does not divide the routing block";
  if (masked_buffer_too_large(run, p)) {
    return "this kernel takes one tile per CTA, so its grid would cover the masked buffer: over twice the hint's "
           "tiles";
  }
  if (run.smem_bytes() > max_shared_bytes_per_block(p.arch)) return "shared memory exceeds this GPU's per-CTA limit";
  return nullptr;
}

// The candidates, best first; with verdicts (and `runs`) when `judge`, else for the caller to
// judge in order (the resolver stops at the first that the call can run).
std::vector<W4A16Candidate> candidates(const W4A16Problem& p, const Environment& e, bool judge) {
  CHORD_REQUIRE(p.n > 0 && p.n % kW4A16PackN == 0, "N = {} is unsupported: N must be a positive multiple of {}", p.n,
                kW4A16PackN);
  CHORD_REQUIRE(p.k > 0 && p.k % kW4A16PackK == 0, "K = {} is unsupported: K must be a positive multiple of {}", p.k,
                kW4A16PackK);
  const bool nf4 = w4a16_is_nf4(p.weight);
  // The table: that of CHORD_W4A16_PROFILE's split, else of the split whose GEMMs hold (N, K).
  const std::string split = e.w4a16_table.value_or(detect_split(p.arch, p.n, p.k));
  const TuningTable* table = split.empty() || split == "heuristic" ? nullptr : find_tuning_table(p.arch, split);
  if (e.w4a16_table && !split.empty() && split != "heuristic") {
    if (table == nullptr) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_PROFILE='{}' names no tuning table for {} (see tuning_tables/)", split,
           p.arch.name());
    }
    if (table->range_row_for(p.rows_per_expert, nf4) == nullptr) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_PROFILE='{}': the {} table has no row for {} rows per expert", split,
           p.arch.name(), p.rows_per_expert);
    }
  }
  std::vector<W4A16Candidate> list;
  list.reserve(16);
  auto add = [&](W4A16Candidate::Source source, int row, W4A16GemmConfig c) {
    W4A16Candidate candidate;
    candidate.source = source;
    candidate.table = row >= 0 ? table : nullptr;
    candidate.row = row;
    c.mode = p.mode;
    c.weight = p.weight;
    candidate.config = c;
    if (judge) {
      candidate.runs = w4a16_config_for_weight(c, p.weight);
      candidate.rejected = rejection(candidate.runs, p, e);
    }
    list.push_back(candidate);
  };
  const bool promote = ws_promotes(p);
  auto add_promoted = [&](W4A16Candidate::Source source, int row, const W4A16GemmConfig& c) {
    if (promote && c.engine == W4A16Engine::kWgmma && c.block_m == kW4A16WgmmaWsBlockM) {
      add(W4A16Candidate::kWsPromotion, row, warp_specialized_tile(c, nf4));
    }
    add(source, row, c);
  };
  if (const auto narrow = narrow_wgmma(p)) {
    if (const auto ws = narrow_ws(p, *narrow)) add(W4A16Candidate::kNarrowWs, -1, *ws);
    add(W4A16Candidate::kNarrowWgmma, -1, *narrow);
  }
  if (table != nullptr) {
    for (size_t i = 0; i < table->rows.size(); ++i) {
      const TuningRow& row = table->rows[i];
      if (row.applies(p.rows_per_expert, nf4, p.mode, p.n, p.k)) {
        add_promoted(W4A16Candidate::kTableRow, static_cast<int>(i), fit_routing_block(row.config, p));
      }
    }
  }
  // The WGMMA defaults serve prefill-sized calls (the heuristic's BLOCK_M >= 64), or every call
  // with CHORD_W4A16_ENGINE=prefer_wgmma; the heuristic serves every call, last.
  const W4A16GemmConfig h = heuristic(p);
  const bool wgmma_first = e.w4a16_engine.candidates == W4A16EngineKnob::kPreferWgmma;
  if (h.block_m >= 64 || wgmma_first) add_promoted(W4A16Candidate::kWgmmaDefaults, -1, wgmma_defaults(p));
  add(W4A16Candidate::kHeuristic, -1, h);
  if (wgmma_first) {
    std::stable_partition(list.begin(), list.end(), [](const W4A16Candidate& c) { return c.config.wgmma(); });
  }
  return list;
}

// A forced engine's config when the best candidate has another engine: the engine's defaults
// (the heuristic's tile for mma.sync; the WGMMA defaults, or their warp-specialized tile). The
// WGMMA engines need sm_90a.
W4A16GemmConfig engine_defaults(const W4A16Problem& p, W4A16Engine engine) {
  if (engine == W4A16Engine::kMmaSync) return heuristic(p);
  if (!sm90a(p.arch)) {
    fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_ENGINE={} needs sm_90a; this GPU is {}", w4a16_engine_name(engine),
         p.arch.name());
  }
  const W4A16GemmConfig c = wgmma_defaults(p);
  return engine == W4A16Engine::kWgmmaWs ? warp_specialized_tile(c, w4a16_is_nf4(p.weight)) : c;
}

void apply_override(int* field, const std::optional<int>& value) {
  if (value) *field = *value;
}

// Split-K for decode grids that leave SMs idle (few active experts, e.g. Qwen3 at 1 token:
// 8 tiles x 12 n blocks = 96 CTAs on 132 SMs). The CTAs counted are those expected to stream
// weights (expected_active_tiles; the grid's tile count where the routed rows are unknown).
//  - INT4: double the split while the split grid stays under 3 CTAs per SM and one wave of the
//    decode tile's occupancy (5 CTAs per SM), up to 4, each split keeping >= 1024 of K. Fitted on
//    lab/kernel_check/decode_explore's 96 forced configs x 453 decode calls of 13 models (H200):
//    geometric mean 0.92x the time of the grid-count rule on the calls the heuristic serves, no
//    model slower; e.g. one active expert of 5120 x 8192 at 1 token: 66 -> 30 us.
//  - NF4 (its pair table costs occupancy): while the split grid stays within 1 CTA per SM, up to 8.
// Measured on the H200 (lab/device_compare.sh): Qwen3 INT4 1 token gate_up (16 k blocks) 15.3 ->
// 13.8 us with split 2, NF4 20.9 -> 16.8; down (K 768) stays whole. Clusters need sm_90+.
// CHORD_W4A16_SPLIT_K forces a value for every mma.sync call (WGMMA calls never split).
int choose_split_k(const W4A16Problem& p, const W4A16GemmConfig& c, const Environment& e) {
  if (c.wgmma()) return 1;  // a forced value applies to the mma.sync kernel only
  if (e.w4a16_split_k) return *e.w4a16_split_k;
  if (p.arch.sm() < 90 || c.block_m > 32) return 1;
  double tiles = expected_active_tiles(p, c.block_m);
  if (tiles <= 0) {
    tiles = double(w4a16_m_tiles(p.mode, c.block_m, p.a_rows, p.experts, p.num_groups, p.max_m, p.capacity));
  }
  const double ctas = tiles * (p.n / c.block_n);
  if (ctas <= 0) return 1;  // geometry unknown (a_rows etc. not given): no split
  constexpr int kMinSplitK = 1024;  // K per split
  const bool nf4 = w4a16_is_nf4(p.weight);
  const int max_split = nf4 ? 8 : 4;
  const double sms = p.sm_count;
  auto more = [&](int split) {
    const double next = ctas * split * 2;
    return nf4 ? next <= 2 * sms : (ctas * split < 3 * sms && next <= 5 * sms);
  };
  int split = 1;
  while (split < max_split && more(split) && p.k / (split * 2) >= kMinSplitK) split *= 2;
  W4A16GemmConfig with = c;
  with.split_k = split;
  return with.error() == nullptr ? split : 1;
}

// n blocks per CTA (W4A16GemmConfig::n_run) for the decode tiles of a short K, whose one-block
// CTAs (12 KiB of weights at K 192) spend much of their time on fixed costs: the routing, the
// activation rows' addresses, the ring's fill and drain, paid once per run of 4. Fewer, longer
// CTAs leave SMs without work unless the grid stays large, so runs are taken only where the
// expected CTAs keep 7.5 per SM. Measured on the H200 (generalization set, the rule's tile with
// runs of 4 against whole tiles in one process, search off): Qwen3-235B and GLM-4.5 TP8 down
// (K 192) 1.01-1.08x the speed at 6.8-11.6 expected CTAs per SM after the run, 0.75-0.92x at
// 1.7-4.8. Runs on K 704-3072 were slower everywhere (0.50-0.95x), and deeper rings with runs
// slower than the tile's 3 stages. K 256 (DeepSeek-V3 / Kimi K2 under TP8) is not measured;
// K 64 and 128 (those models' down projections under TP16, one k block per n block) take runs
// by the same CTA count without a timing of their own.
int choose_n_run(const W4A16Problem& p, const W4A16GemmConfig& c, const Environment& e) {
  W4A16GemmConfig with = c;
  if (e.w4a16_n_run) {  // where the tile can take it (like CHORD_W4A16_GROUP_SUMS)
    with.n_run = *e.w4a16_n_run;
    return with.error() == nullptr ? with.n_run : 1;
  }
  constexpr int kRunMaxK = 192;
  constexpr int kRun = 4;
  constexpr double kRunCtasPerSm = 7.5;
  // Measured on sm_90a only: other GPUs keep whole tiles until a run is timed there.
  if (e.w4a16_overridden() || p.arch.sm() != 90 || c.wgmma() || c.block_m > 16 || c.split_k != 1 ||
      p.k > kRunMaxK) {
    return 1;
  }
  const double tiles = expected_active_tiles(p, c.block_m);
  if (tiles <= 0 || tiles * w4a16_n_runs(p.n, c.block_n, kRun) < kRunCtasPerSm * p.sm_count) return 1;
  with.n_run = kRun;
  return with.error() == nullptr ? kRun : 1;
}

}  // namespace

double w4a16_expected_active_experts(int experts, double routed_rows) {
  const double e = std::max(experts, 1);
  return e * (1.0 - std::pow(1.0 - 1.0 / e, routed_rows));
}

std::vector<W4A16Candidate> w4a16_candidates(const W4A16Problem& problem) {
  return candidates(problem, env(), /*judge=*/true);
}

std::string w4a16_candidate_source(const W4A16Candidate& c) {
  switch (c.source) {
    case W4A16Candidate::kTableRow: return c.table->name + " row " + std::to_string(c.row);
    case W4A16Candidate::kWsPromotion:
      return c.table ? "warp-specialized tile of " + c.table->name + " row " + std::to_string(c.row)
                     : "warp-specialized tile of the WGMMA defaults";
    case W4A16Candidate::kNarrowWgmma: return "narrow WGMMA tile";
    case W4A16Candidate::kNarrowWs: return "narrow tile, warp-specialized (masked, large buffer)";
    case W4A16Candidate::kWgmmaDefaults: return "WGMMA defaults";
    case W4A16Candidate::kHeuristic: return "heuristic";
  }
  return "";
}

W4A16GemmConfig resolve_w4a16_config(const W4A16Problem& p) {
  const Environment& e = env();
  std::vector<W4A16Candidate> list = candidates(p, e, /*judge=*/false);
  const bool forced_tile =
      e.w4a16_bm || e.w4a16_bn || e.w4a16_bk || e.w4a16_stages || e.w4a16_warps_n || e.w4a16_warps_m;
  const std::optional<W4A16Engine>& forced_engine = e.w4a16_engine.forced;
  const bool forced = forced_tile || forced_engine;
  // The best candidate the call can run (a forced config starts from a one-role one); the
  // heuristic, last, when none can.
  W4A16Candidate* best = &list.back();
  const char* best_rejected = nullptr;
  for (auto& candidate : list) {
    if (forced && candidate.promotion()) continue;
    candidate.runs = w4a16_config_for_weight(candidate.config, p.weight);
    best_rejected = rejection(candidate.runs, p, e);
    if (best_rejected == nullptr) {
      best = &candidate;
      break;
    }
  }
  // Unforced, a config every candidate's check refused would fail to compile or to load: say so
  // here (a forced one is judged after its knobs apply, below).
  if (!forced && best_rejected != nullptr) {
    fail(CHORD_ERROR_INVALID_ARGUMENT, "no W4A16 kernel config fits this call ({} N={} K={} on {}): {}",
         w4a16_mode_name(p.mode), p.n, p.k, p.arch.name(), best_rejected);
  }
  W4A16GemmConfig c = forced ? best->config : best->runs;
  // A forced engine: the best config where it has that engine, else the engine's defaults.
  // Without one the tile knobs tune the portable kernel: a WGMMA choice gives way to the
  // heuristic's mma.sync tile first. Then the forced values apply.
  if (forced_engine) {
    if (c.engine != *forced_engine) c = engine_defaults(p, *forced_engine);
  } else if (forced_tile && c.wgmma()) {
    c = heuristic(p);
  }
  apply_override(&c.block_m, e.w4a16_bm);
  apply_override(&c.block_n, e.w4a16_bn);
  apply_override(&c.block_k, e.w4a16_bk);
  apply_override(&c.stages, e.w4a16_stages);
  c = w4a16_config_for_weight(c, p.weight, e.w4a16_stages.has_value());
  if (forced) {
    if (!c.wgmma()) {
      // A forced BM or BN gets the warp split its tile sizes take; otherwise the candidate's
      // split stays (e.g. the heuristic's one-warp-along-M BM64 tile for masked calls in large
      // buffers, whose loop form needs its 128 threads).
      if (e.w4a16_bm || e.w4a16_bn) {
        c.warps_m = c.block_m >= 64 ? 2 : 1;
        c.warps_n = c.block_n >= 64 ? 4 : 1;
        while (c.warps_n > 1 && c.block_n % (16 * c.warps_n) != 0) c.warps_n /= 2;
      }
      apply_override(&c.warps_n, e.w4a16_warps_n);
      apply_override(&c.warps_m, e.w4a16_warps_m);
      if (e.w4a16_warps_m && c.threads() < c.block_m) {  // the tile schedulers give each row a thread
        fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_WARPS_M={} gives {} threads, fewer than BLOCK_M = {}",
             *e.w4a16_warps_m, c.threads(), c.block_m);
      }
    } else if (e.w4a16_warps_n || e.w4a16_warps_m) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_WARPS_{}={} applies to the mma.sync kernel, not to {}",
           e.w4a16_warps_n ? "N" : "M", e.w4a16_warps_n ? *e.w4a16_warps_n : *e.w4a16_warps_m,
           w4a16_engine_name(c.engine));
    }
    if (const char* why = c.error()) {
      fail(CHORD_ERROR_ENVIRONMENT,
           "CHORD_W4A16_ENGINE/BM/BN/BK/STAGES/WARPS_N/WARPS_M force an invalid config ({} bm={} bn={} bk={} "
           "stages={} warps_n={} warps_m={}): {}",
           w4a16_engine_name(c.engine), c.block_m, c.block_n, c.block_k, c.stages, c.warps_n, c.warps_m, why);
    }
    if (const char* why = c.shape_error(p.n, p.k)) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_BN/BK = {}/{} do not fit N = {}, K = {}: {}", c.block_n, c.block_k,
           p.n, p.k, why);
    }
    if (p.mode == kW4A16Indexed && p.block_size % c.block_m != 0) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_* force BLOCK_M = {}, which does not divide the routing block_size {}",
           c.block_m, p.block_size);
    }
    if (c.smem_bytes() > max_shared_bytes_per_block(p.arch)) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_* force a config of {} bytes of shared memory; {} allows {} per CTA",
           c.smem_bytes(), p.arch.name(), max_shared_bytes_per_block(p.arch));
    }
  }
  // The tile schedulers give each of the BLOCK_M rows one thread: a narrow-N prefill tile
  // (e.g. BM128 x BN16, 2 x 1 warps) gets more warps along M instead of unset rows.
  while (!c.wgmma() && c.threads() < c.block_m && c.warps_m * c.warps_n < 16 && c.block_m % (16 * c.warps_m) == 0) {
    c.warps_m *= 2;
  }
  c.split_k = choose_split_k(p, c, e);
  c.n_run = choose_n_run(p, c, e);
  if (e.w4a16_split_k) {
    if (const char* why = c.error()) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_SPLIT_K={} cannot be used with the chosen config: {}", c.split_k, why);
    }
    if (c.split_k > 1 && p.arch.sm() < 90) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_SPLIT_K={} needs sm_90+ (thread block clusters); this GPU is {}",
           c.split_k, p.arch.name());
    }
  }
  // CHORD_W4A16_GROUP_SUMS chooses the group-sum form of a tile that runs the INT4 group sums
  // (symmetric or with zero points) and can take it (the correction form: BF16); like
  // CHORD_W4A16_SPLIT_K on a WGMMA call, it does not apply to the other calls (prefill tiles,
  // WGMMA, NF4, FP16 with form 1), which keep their kernel: one setting measures a whole suite's
  // decode calls.
  if (e.w4a16_group_sums && c.takes_group_sums(*e.w4a16_group_sums)) c.group_sums = *e.w4a16_group_sums;
  return c;
}

W4A16GemmConfig resolve_w4a16_launch_config(const W4A16Problem& p) {
  const W4A16GemmConfig c = resolve_w4a16_config(p);
  if (p.mode != kW4A16Masked) return c;
  W4A16Args call{};
  call.mode = kW4A16Masked;
  call.num_groups = p.num_groups;
  call.max_m = p.max_m;
  call.expected_m = static_cast<int>(std::clamp<int64_t>(p.rows_per_expert, 0, std::max(p.max_m, 0)));
  return w4a16_config_for_masked_grid(c, call);
}

}  // namespace chord
