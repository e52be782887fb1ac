// Tuning tables: tuning_tables/<arch>_<profile>.json, embedded at build time. Each maps
// ranges of expected rows per expert to a W4A16 config, with the measurement behind it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/arch.hpp"
#include "jit/families/w4a16.hpp"

namespace chord {

struct TuningRow {
  int64_t min_m = 0;  // inclusive, rows per expert
  int64_t max_m = 0;  // inclusive
  W4A16GemmConfig config;  // mode is set by the caller
  // The moe_align_block_size block the vLLM export gives for this row: config.block_m unless
  // the row says otherwise ("routing_block"; a multiple of block_m). Routed rows are skewed,
  // so the mean rows per expert that picks the row understates the popular experts' rows.
  int routing_block = 0;
  std::string measured;
  // The row's config for NF4 weights where it differs ("nf4": {block_n, block_k, stages,
  // warps_n, measured}; block_m stays, so both weight kinds align routing to one block).
  std::optional<W4A16GemmConfig> nf4_config;
  // INT4 configs for single (N, K) shapes of the profile where they differ ("shape_overrides":
  // [{n, k, block_m, block_n, block_k, stages, warps_n, measured}], each field but n, k and
  // measured optional; block_m must divide routing_block, so vLLM's block still serves both
  // projections).
  struct ShapeOverride {
    int n = 0, k = 0;
    W4A16GemmConfig config;
  };
  std::vector<ShapeOverride> shape_overrides;
  // The INT4 config for (n, k): its override, else config.
  const W4A16GemmConfig& int4_config(int n, int k) const;
};

struct TuningTable {
  std::string name;  // file name
  std::string arch;  // "sm_90a"
  std::string profile;
  std::vector<std::pair<int, int>> shapes;  // (N, K) the profile is recognised by
  std::vector<TuningRow> rows;
  // Expected rows per expert from which the indexed mode's INT4 128-token WGMMA tiles take the
  // warp-specialized kernel, where the profile's indexed hint is exact ("int4_warp_specialized":
  // {"min_rows_indexed", "measured"}); unset: the resolver's default, set high because under
  // expert parallelism the hint also counts the routes to other ranks' experts.
  std::optional<int64_t> ws_int4_min_rows_indexed;
  // Shapes below the resolver's K bar whose indexed INT4 calls take the warp-specialized kernel
  // too, from their own rows per expert and with their own stage count ("int4_warp_specialized":
  // {"shape_overrides": [{n, k, min_rows_indexed, stages, measured}]}; TP8's down, K 256).
  struct WsShape {
    int n = 0, k = 0;
    int64_t min_rows_indexed = 0;
    int stages = 0;
  };
  std::vector<WsShape> ws_int4_shapes;
  // The entry for (n, k), or nullptr.
  const WsShape* ws_int4_shape(int n, int k) const;
  // Indexed calls whose hint row has a WGMMA tile that does not divide the call's routing block
  // (under expert parallelism the hint counts the routes to other ranks' experts, while vLLM
  // aligns to the block of the real rows) run the one-role WGMMA defaults with BLOCK_M the
  // block allows; these are their per-shape block_n / stages ("indexed_block_fallback":
  // {"shape_overrides": [{n, k, block_n, stages, measured}], "measured"}).
  struct BlockFallback {
    int n = 0, k = 0;
    int block_n = 0, stages = 0;
  };
  std::vector<BlockFallback> indexed_block_fallback;
  // The fallback's entry for (n, k), or nullptr.
  const BlockFallback* block_fallback(int n, int k) const;
  // The row whose range holds rows_per_expert, or nullptr.
  const TuningRow* row_for(int64_t rows_per_expert) const;
};

// Parses JSON text; throws Error(CHORD_ERROR_INVALID_ARGUMENT) naming the table and row
// for anything malformed (missing field, invalid config, overlapping or unsorted ranges).
TuningTable parse_tuning_table(const std::string& name, const std::string& json_text);

// Every embedded table, parsed once.
const std::vector<TuningTable>& tuning_tables();

// The (arch, profile) table, or nullptr.
const TuningTable* find_tuning_table(const Arch& arch, const std::string& profile);

// The profile whose shapes hold (N, K), or "" (generic: the heuristic decides).
std::string detect_profile(const Arch& arch, int n, int k);

// The table row for the expected rows per expert, if the (arch, profile) table has one.
std::optional<TuningRow> find_tuning_row(const Arch& arch, const std::string& profile, int64_t rows_per_expert);

// The table of (arch, profile) in the (min_m, max_m, config) form vLLM's Humming backend
// reads, with M in tokens: rows per expert = M * top_k / experts. The config fields are the
// INT4 tile the table gives for (n, k) (a row's shape override where it has one; the resolver
// may still pick the warp-specialized engine at large row counts, same block_m); block_size_m
// is the row's routing block, the same for every shape of the profile.
std::string export_vllm_tuning(const Arch& arch, const std::string& profile, int experts, int top_k, int n, int k);

}  // namespace chord
