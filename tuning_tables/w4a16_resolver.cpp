#include "tuning_tables/w4a16_resolver.hpp"

#include "jit/env.hpp"
#include "jit/error.hpp"
#include "tuning_tables/tuning_table.hpp"

namespace chord {
namespace {

// Configs measured on the H200 with tools/kernel_check (docs/performance.md):
//  - decode (<= 32 rows per expert): BM8..32 x BN128 x BK128, 3 stages, 4 warps along N —
//    5-6 CTAs per SM keep enough weight bytes in flight; more stages or warps were 10-25%
//    slower at 8 tokens per expert.
//  - prefill: BM64/128 x BN128 x BK64, 4 stages, 2x4 warps (272 TFLOP/s at 512 rows/expert).
W4A16GemmConfig heuristic(const W4A16Problem& p) {
  W4A16GemmConfig c;
  c.mode = p.mode;
  // Routing is ragged: size the tile for 1.5x the mean rows per expert, so that an expert
  // a little above the mean still streams its weights once (a second M tile re-reads them;
  // measured: masked 8 tokens/expert with up to 12 rows took 461 us with BM8, see
  // docs/performance.md).
  const int64_t rows = p.rows_per_expert + p.rows_per_expert / 2;
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
  return c;
}

void apply_override(int* field, const std::optional<int>& value) {
  if (value) *field = *value;
}

// The tuning table of the problem's profile (detected from N, K unless CHORD_W4A16_PROFILE
// names one), else the heuristic.
W4A16GemmConfig table_or_heuristic(const W4A16Problem& p, const Environment& e) {
  std::string profile = e.w4a16_profile.value_or(detect_profile(p.arch, p.n, p.k));
  if (profile.empty() || profile == "heuristic") return heuristic(p);
  auto row = find_tuning_row(p.arch, profile, p.rows_per_expert);
  if (!row) {
    if (e.w4a16_profile) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_PROFILE='{}' names no tuning table for {} (see tuning_tables/)", profile,
           p.arch.name());
    }
    return heuristic(p);
  }
  W4A16GemmConfig c = row->config;
  c.mode = p.mode;
  if (w4a16_shape_error(p.n, p.k, c.block_n, c.block_k) != nullptr) return heuristic(p);  // explicit profile, other shape
  if (p.mode == kW4A16Indexed) {
    while (p.block_size % c.block_m != 0) c.block_m /= 2;  // block_m must divide the routing block
    while (c.warps_m > 1 && c.block_m % (8 * c.warps_m) != 0) c.warps_m /= 2;
  }
  return c;
}

}  // namespace

W4A16GemmConfig resolve_w4a16_config(const W4A16Problem& p) {
  CHORD_REQUIRE(p.n > 0 && p.n % kW4A16PackN == 0, "N = {} is unsupported: N must be a positive multiple of {}", p.n,
                kW4A16PackN);
  CHORD_REQUIRE(p.k > 0 && p.k % kW4A16PackK == 0, "K = {} is unsupported: K must be a positive multiple of {}", p.k,
                kW4A16PackK);
  const Environment& e = env();
  W4A16GemmConfig c = table_or_heuristic(p, e);
  bool forced = e.w4a16_bm || e.w4a16_bn || e.w4a16_bk || e.w4a16_stages;
  apply_override(&c.block_m, e.w4a16_bm);
  apply_override(&c.block_n, e.w4a16_bn);
  apply_override(&c.block_k, e.w4a16_bk);
  apply_override(&c.stages, e.w4a16_stages);
  if (forced) {
    // Keep the warp split legal for the forced tile.
    c.warps_m = c.block_m >= 64 ? 2 : 1;
    c.warps_n = c.block_n >= 64 ? 4 : 1;
    while (c.warps_n > 1 && c.block_n % (16 * c.warps_n) != 0) c.warps_n /= 2;
    if (const char* why = c.error()) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_BM/BN/BK/STAGES force an invalid config (bm={} bn={} bk={} stages={}): {}",
           c.block_m, c.block_n, c.block_k, c.stages, why);
    }
    if (const char* why = w4a16_shape_error(p.n, p.k, c.block_n, c.block_k)) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_BN/BK = {}/{} do not fit N = {}, K = {}: {}", c.block_n, c.block_k,
           p.n, p.k, why);
    }
    if (p.mode == kW4A16Indexed && p.block_size % c.block_m != 0) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_BM = {} does not divide the routing block_size {}", c.block_m,
           p.block_size);
    }
  }
  return c;
}

}  // namespace chord
