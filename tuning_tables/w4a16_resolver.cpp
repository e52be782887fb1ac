#include "tuning_tables/w4a16_resolver.hpp"

#include <optional>

#include "core/env.hpp"
#include "core/error.hpp"
#include "tuning_tables/tuning_table.hpp"

namespace chord {
namespace {

// Shared memory of one SM on sm_90 (228 KiB) and what the driver reserves per CTA (1 KiB).
constexpr int kSmemPerSm = 228 * 1024;
constexpr int kSmemReservedPerCta = 1024;

// Configs measured on the H200 with lab/kernel_check:
//  - decode (<= 32 rows per expert): BM8..32 x BN128 x BK128, 3 stages, 4 warps along N —
//    5-6 CTAs per SM keep enough weight bytes in flight; more stages or warps were 10-25%
//    slower at 8 tokens per expert.
//  - prefill: BM64/128 x BN128 x BK64, 4 stages, 2x4 warps (272 TFLOP/s at 512 rows/expert).
W4A16GemmConfig heuristic(const W4A16Problem& p) {
  W4A16GemmConfig c;
  c.mode = p.mode;
  // Routing is ragged: size the tile for 1.5x the mean rows per expert, so that an expert
  // a little above the mean still streams its weights once (a second M tile re-reads them;
  // measured: masked 8 tokens/expert with up to 12 rows took 461 us with BM8 against 391 us
  // with BM16, bench, H200).
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
  // Small experts (<= 2 MB packed, e.g. Qwen3 1536x2048, 2048x768) at decode: few CTAs
  // stream each expert, so use 64-row tiles (twice the CTAs) on the direct-register path
  // (STAGES == 2, four 512-byte chunks ahead per warp). Only for shapes without a table row,
  // where INT4 and NF4 share this choice: at 1 token NF4 is faster here than on the staged
  // BN128 BK128 S3 tile (21.5 / 14.1 vs 25.1 / 15.2 us, bench, H200), INT4 a little slower
  // (17.3 / 11.6 vs 16.7 / 10.2 us), which is why the sm_90a Qwen3 table names the staged tile
  // for INT4.
  if (decode && (int64_t)p.n * p.k <= (int64_t{4} << 20) && p.n % 64 == 0 && p.k % 256 == 0) {
    c.block_n = 64;
    c.block_k = 256;
    c.stages = 2;
    c.warps_n = 4;
  }
  return c;
}

void apply_override(int* field, const std::optional<int>& value) {
  if (value) *field = *value;
}

// The problem's profile: detected from N, K unless CHORD_W4A16_PROFILE names one.
std::string problem_profile(const W4A16Problem& p, const Environment& e) {
  return e.w4a16_profile.value_or(detect_profile(p.arch, p.n, p.k));
}

// The tuning table row of `profile` (problem_profile; `table` is its table for this arch, or
// nullptr), else the heuristic; *from_table says which.
W4A16GemmConfig table_or_heuristic(const W4A16Problem& p, const Environment& e, const std::string& profile,
                                   const TuningTable* table, bool* from_table) {
  *from_table = false;
  if (profile.empty() || profile == "heuristic") return heuristic(p);
  const TuningRow* row = table ? table->row_for(p.rows_per_expert) : nullptr;
  if (row == nullptr) {
    if (e.w4a16_profile) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_PROFILE='{}' names no tuning table for {} (see tuning_tables/)", profile,
           p.arch.name());
    }
    return heuristic(p);
  }
  W4A16GemmConfig c =
      p.weight != kW4A16WeightInt4 ? (row->nf4_config ? *row->nf4_config : row->config) : row->int4_config(p.n, p.k);
  c.weight = kW4A16WeightInt4;  // set from the problem by the caller, after the engine choice
  c.mode = p.mode;
  if (!c.wgmma() && c.shape_error(p.n, p.k) != nullptr) return heuristic(p);  // explicit profile, other shape
  *from_table = true;
  if (c.wgmma()) return c;  // checked against the engine's rules by choose_engine()
  if (p.mode == kW4A16Indexed) {
    while (p.block_size % c.block_m != 0) c.block_m /= 2;  // block_m must divide the routing block
    while (c.warps_m > 1 && c.block_m % (8 * c.warps_m) != 0) c.warps_m /= 2;
  }
  return c;
}

// The WGMMA prefill config for the problem, if the GPU, the mode's routing block and the
// shape allow one (measured 1.5x the mma.sync prefill: docs/kernels.md).
// The one-role WGMMA defaults: BM128 (BM64 where the indexed routing block needs it) x BN128,
// two consumer warpgroups, 5 stages.
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

std::optional<W4A16GemmConfig> wgmma_config(const W4A16Problem& p) {
  const W4A16GemmConfig c = wgmma_defaults(p);
  if (p.mode == kW4A16Indexed && p.block_size % c.block_m != 0) return std::nullopt;
  if (c.error() != nullptr || c.shape_error(p.n, p.k) != nullptr) return std::nullopt;
  return c;
}

// CHORD_W4A16_ENGINE: the chosen config where it has that engine already, else the engine's
// defaults (the heuristic's for mma.sync; warp_specialized_tile for the warp-specialized
// kernel). The WGMMA engines need sm_90a.
W4A16GemmConfig forced_engine_config(const W4A16Problem& p, const W4A16GemmConfig& chosen, W4A16Engine engine) {
  if (chosen.engine == engine) return chosen;
  if (engine == W4A16Engine::kMmaSync) return heuristic(p);
  if (!(p.arch.sm() == 90 && p.arch.family_specific)) {
    fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_ENGINE={} needs sm_90a; this GPU is {}", w4a16_engine_name(engine),
         p.arch.name());
  }
  const W4A16GemmConfig c = wgmma_defaults(p);
  return engine == W4A16Engine::kWgmmaWs ? warp_specialized_tile(c, p.weight != kW4A16WeightInt4) : c;
}

// Engine choice: WGMMA only on sm_90a, never when CHORD_W4A16_PORTABLE=1; a table row
// decides for its shapes, otherwise prefill tiles (BLOCK_M >= 64) take WGMMA.
// CHORD_SM90_DECODE=1 forces the mma.sync (decode) schedule, =0 the WGMMA one where valid.
W4A16GemmConfig choose_engine(const W4A16Problem& p, W4A16GemmConfig chosen, bool from_table,
                              const TuningTable* table, const Environment& e) {
  const bool hopper = p.arch.sm() == 90 && p.arch.family_specific;
  bool want_wgmma = hopper && (from_table ? chosen.wgmma() : chosen.block_m >= 64);
  if (hopper && e.sm90_decode) want_wgmma = !*e.sm90_decode;
  if (e.w4a16_portable || !hopper) want_wgmma = false;
  if (want_wgmma) {
    if (chosen.wgmma() && chosen.error() == nullptr && chosen.shape_error(p.n, p.k) == nullptr &&
        (p.mode != kW4A16Indexed || p.block_size % chosen.block_m == 0)) {
      return chosen;
    }
    if (auto c = wgmma_config(p)) {
      // A table row's WGMMA tile that the indexed routing block cannot hold: the table's
      // fallback for the shape (measured with INT4 weights), where it is valid for this block.
      if (from_table && chosen.wgmma() && p.mode == kW4A16Indexed && p.weight == kW4A16WeightInt4) {
        if (const auto* f = table ? table->block_fallback(p.n, p.k) : nullptr) {
          W4A16GemmConfig fallback = *c;
          fallback.block_n = f->block_n;
          fallback.stages = f->stages;
          if (fallback.error() == nullptr && fallback.shape_error(p.n, p.k) == nullptr) return fallback;
        }
      }
      return *c;
    }
  }
  return chosen.wgmma() ? heuristic(p) : chosen;
}

// Split-K for decode grids that leave SMs idle (few active experts, e.g. Qwen3 at 1 token:
// 8 tiles x 12 n blocks = 96 CTAs on 132 SMs): double the split while the grid stays within
// two CTAs per SM (the 256-thread tiles' occupancy) and every split keeps >= 1024 of K.
// Measured on the H200 (lab/device_compare.sh): Qwen3 INT4 1 token
// gate_up (16 k blocks) 15.3 -> 13.8 us with split 2, NF4 20.9 -> 16.8; down (K 768, 6 k
// blocks) 10.8 -> 11.3 us with split 2, so short K stays whole. 512 of K per split loses to
// 1024 where the grid would allow both: NF4's 256-row tile (48 CTAs at 1 token, BK 128)
// measured 14.3 us with split 4 against 13.6 with split 2 (decode_sweep, four runs each).
// Clusters need sm_90+.
// CHORD_W4A16_SPLIT_K forces a value for every mma.sync call (WGMMA calls never split).
int choose_split_k(const W4A16Problem& p, const W4A16GemmConfig& c, const Environment& e) {
  if (c.wgmma()) return 1;  // a forced value applies to the mma.sync kernel only
  if (e.w4a16_split_k) return *e.w4a16_split_k;
  if (p.arch.sm() < 90 || c.block_m > 32) return 1;
  const long long ctas = w4a16_m_tiles(p.mode, c.block_m, p.a_rows, p.experts, p.num_groups, p.max_m, p.capacity) *
                         (p.n / c.block_n);
  if (ctas <= 0) return 1;  // geometry unknown (a_rows etc. not given): no split
  constexpr int kMinSplitK = 1024;  // K per split
  int split = 1;
  while (split < 8 && ctas * split * 2 <= 2LL * p.sm_count && p.k / (split * 2) >= kMinSplitK) split *= 2;
  W4A16GemmConfig with = c;
  with.split_k = split;
  return with.error() == nullptr ? split : 1;
}

}  // namespace

// INT4 prefill runs the warp-specialized kernel from this K and these expected rows per expert
// on (resolve_w4a16_config).
constexpr int kW4A16WsMinInt4K = 768;
constexpr int kW4A16WsMinInt4Rows = 512;
constexpr int kW4A16WsMinInt4RowsIndexed = 2048;

W4A16GemmConfig resolve_w4a16_config(const W4A16Problem& p) {
  CHORD_REQUIRE(p.n > 0 && p.n % kW4A16PackN == 0, "N = {} is unsupported: N must be a positive multiple of {}", p.n,
                kW4A16PackN);
  CHORD_REQUIRE(p.k > 0 && p.k % kW4A16PackK == 0, "K = {} is unsupported: K must be a positive multiple of {}", p.k,
                kW4A16PackK);
  const Environment& e = env();
  const std::string profile = problem_profile(p, e);
  const TuningTable* table = find_tuning_table(p.arch, profile);  // looked up once per call
  bool from_table = false;
  W4A16GemmConfig chosen = table_or_heuristic(p, e, profile, table, &from_table);
  W4A16GemmConfig c = choose_engine(p, chosen, from_table, table, e);
  const bool forced_tile = e.w4a16_bm || e.w4a16_bn || e.w4a16_bk || e.w4a16_stages || e.w4a16_warps_n;
  const bool forced = forced_tile || e.w4a16_engine;
  // Without CHORD_W4A16_ENGINE the tile knobs tune the portable kernel: a WGMMA choice gives way
  // to the heuristic's mma.sync config first, then the forced values apply.
  if (e.w4a16_engine) {
    c = forced_engine_config(p, c, *e.w4a16_engine);
  } else if (forced_tile && c.wgmma()) {
    c = heuristic(p);
  }
  apply_override(&c.block_m, e.w4a16_bm);
  apply_override(&c.block_n, e.w4a16_bn);
  apply_override(&c.block_k, e.w4a16_bk);
  apply_override(&c.stages, e.w4a16_stages);
  // NF4 takes the engine INT4 would: the WGMMA kernel decodes either (H200 kernel_check,
  // Qwen3 T=4096 offsets BM128 BN128 WG2: NF4 gate_up 462.9 us, down 277.9 us (S4); INT4 390.7,
  // 235.2 us). Set before any validation: NF4 tiles add the pair table (32 KiB mma.sync,
  // 16 KiB WGMMA).
  c.weight = p.weight;
  // The WGMMA table would cost an INT4 row's 5-stage BM128 BN128 tile its second CTA per SM;
  // 4 stages keep it (same kernel_check: S4 462.9 us, the shuffle decode at S5 493.2 us).
  // Before validation, so that a row the table overflows loses a stage, not its engine.
  while (!e.w4a16_stages && c.wgmma() && !c.warp_specialized() && c.nf4() && c.stages > 3 &&
         2 * (c.smem_bytes() + kSmemReservedPerCta) > kSmemPerSm)
    --c.stages;
  // Prefill on 128-token WGMMA tiles takes the warp-specialized kernel with 256 weight rows per
  // CTA: NF4 always (kernel_check, Qwen3 T=4096 NF4: gate_up 457.2 -> 429.3 us, down 273.0 ->
  // 252.6 us against the one-role BM128 BN128 S4), INT4 where it measured faster (bench,
  // one-role BM128 BN128 S5 -> BN256 S6, three runs each): contiguous 512
  // rows/expert gate_up 2379 -> 2294 us, down 1245 -> 1236; indexed EP8 T=16384 gate_up
  // 2348 -> 2247, down 1195 -> 1127. Not at EP8 T=4096 (gate_up 380 -> 409 us), whose hint
  // (683) is 10x its real rows per expert: the indexed hint counts the routes to other ranks'
  // experts too, hence its higher bar. K = 256 (TP8 down) measured 13% slower at 6 stages and
  // 5-7% faster at 4 (the TP8 table's entry).
  // A table whose indexed hint is exact (all experts local: TP8) sets its own indexed bar
  // ("int4_warp_specialized" in the table, with its measurement), and may name indexed shapes
  // below the K bar with their own rows and stages (TP8 down, K 256: 4 stages, one per k block).
  int64_t int4_ws_rows = kW4A16WsMinInt4Rows;
  const TuningTable::WsShape* ws_shape = nullptr;
  if (p.mode == kW4A16Indexed) {
    int4_ws_rows = table && table->ws_int4_min_rows_indexed ? *table->ws_int4_min_rows_indexed
                                                            : kW4A16WsMinInt4RowsIndexed;
    ws_shape = table ? table->ws_int4_shape(p.n, p.k) : nullptr;
    if (ws_shape) int4_ws_rows = ws_shape->min_rows_indexed;
  }
  const bool int4_ws = (p.k >= kW4A16WsMinInt4K || ws_shape) && p.rows_per_expert >= int4_ws_rows;
  if (!forced && c.wgmma() && (c.nf4() || int4_ws) && c.block_m == kW4A16WgmmaWsBlockM) {
    const W4A16GemmConfig ws = warp_specialized_tile(c, c.nf4(), ws_shape ? ws_shape->stages : 6);
    if (ws.error() == nullptr && ws.shape_error(p.n, p.k) == nullptr) c = ws;
  }
  if (!forced && c.error() != nullptr) {  // a table row sized for INT4 that NF4 overflows
    c = heuristic(p);
    c.weight = p.weight;
  }
  if (forced) {
    if (!c.wgmma()) {  // keep the mma.sync warp split legal for the forced tile
      c.warps_m = c.block_m >= 64 ? 2 : 1;
      c.warps_n = c.block_n >= 64 ? 4 : 1;
      while (c.warps_n > 1 && c.block_n % (16 * c.warps_n) != 0) c.warps_n /= 2;
      apply_override(&c.warps_n, e.w4a16_warps_n);
    } else if (e.w4a16_warps_n) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_WARPS_N={} applies to the mma.sync kernel, not to {}",
           *e.w4a16_warps_n, w4a16_engine_name(c.engine));
    }
    if (const char* why = c.error()) {
      fail(CHORD_ERROR_ENVIRONMENT,
           "CHORD_W4A16_ENGINE/BM/BN/BK/STAGES/WARPS_N force an invalid config ({} bm={} bn={} bk={} stages={} "
           "warps_n={}): {}",
           w4a16_engine_name(c.engine), c.block_m, c.block_n, c.block_k, c.stages, c.warps_n, why);
    }
    if (const char* why = c.shape_error(p.n, p.k)) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_BN/BK = {}/{} do not fit N = {}, K = {}: {}", c.block_n, c.block_k,
           p.n, p.k, why);
    }
    if (p.mode == kW4A16Indexed && p.block_size % c.block_m != 0) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_* force BLOCK_M = {}, which does not divide the routing block_size {}",
           c.block_m, p.block_size);
    }
  }
  // The tile schedulers give each of the BLOCK_M rows one thread: a narrow-N prefill tile
  // (e.g. BM128 x BN16, 2 x 1 warps) gets more warps along M instead of unset rows.
  while (!c.wgmma() && c.threads() < c.block_m && c.warps_m * c.warps_n < 16 && c.block_m % (16 * c.warps_m) == 0) {
    c.warps_m *= 2;
  }
  c.split_k = choose_split_k(p, c, e);
  if (e.w4a16_split_k) {
    if (const char* why = c.error()) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_SPLIT_K={} cannot be used with the chosen config: {}", c.split_k, why);
    }
    if (c.split_k > 1 && p.arch.sm() < 90) {
      fail(CHORD_ERROR_ENVIRONMENT, "CHORD_W4A16_SPLIT_K={} needs sm_90+ (thread block clusters); this GPU is {}",
           c.split_k, p.arch.name());
    }
  }
  return c;
}

}  // namespace chord
