// Tuning tables: tuning_tables/<arch>_<split>.json, embedded at build time. A table serves one
// split of shapes/suite.json (a model as one GPU holds it, e.g. Kimi K2 under EP8), whose GEMM
// shapes it is recognised by. Each row is one measured candidate config with the calls it
// applies to (rows per expert, and optionally the weight kind, the mode, one (N, K) or a
// smallest K) and where its measurement is.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/arch.hpp"
#include "core/model_shapes.hpp"
#include "jit/families/w4a16.hpp"

namespace chord {

// A row's max_m when it names none: no upper bound.
constexpr int64_t kTuningRowsUnbounded = int64_t{1} << 62;

struct TuningRow {
  // When it applies. Unset conditions hold for every call.
  int64_t min_m = 0;                     // rows per expert, inclusive
  int64_t max_m = kTuningRowsUnbounded;  // inclusive
  std::optional<bool> nf4;               // "weight": "int4" (false) or "nf4" (true; BF16 or FP16 activations)
  std::optional<W4A16Mode> mode;         // "mode"
  int n = 0, k = 0;                      // "n", "k": one of the table's shapes (0: any)
  int min_k = 0;                         // "min_k"
  // What it runs (mode and weight are the call's).
  W4A16GemmConfig config;
  // INT4 range rows: the moe_align_block_size block the vLLM export gives for the range
  // ("routing_block", a multiple of block_m; default block_m). Routed rows are skewed, so the
  // mean rows per expert that picks the row understates the popular experts' rows.
  int routing_block = 0;
  std::string measured;  // one line: the results file and its rows that ran this config

  // A row that only rows per expert and the weight kind select. For each weight kind the range
  // rows cover 0..max contiguously, in file order; the other rows refine them.
  bool range_row() const { return !mode && n == 0 && min_k == 0 && !config.warp_specialized(); }
  bool applies_to(bool nf4_weight) const { return !nf4 || *nf4 == nf4_weight; }
  bool applies(int64_t rows_per_expert, bool nf4_weight, W4A16Mode call_mode, int call_n, int call_k) const {
    return rows_per_expert >= min_m && rows_per_expert <= max_m && applies_to(nf4_weight) &&
           (!mode || *mode == call_mode) && (n == 0 || (n == call_n && k == call_k)) && call_k >= min_k;
  }
};

struct TuningTable {
  std::string name;  // file name
  std::string arch;  // "sm_90a"
  std::string split;                        // the shapes file's split the table serves
  std::vector<std::pair<int, int>> shapes;  // (N, K) of the split's gate_up and down, from the shapes file
  std::vector<TuningRow> rows;              // in file order: the resolver's order of preference

  // The range row of the weight kind whose range holds rows_per_expert, or nullptr.
  const TuningRow* range_row_for(int64_t rows_per_expert, bool nf4_weight) const;
  // The INT4 config the vLLM export names for (n, k) over INT4 range row `range`: the first row
  // that the export reads (INT4, no mode, one-role) and that applies to the shape there.
  const W4A16GemmConfig& int4_config(const TuningRow& range, int n, int k) const;
};

// `c` as a call with `weight` runs it: NF4 weights add the pair table, which would cost a one-role
// WGMMA tile its second CTA per SM, so those tiles lose stages (down to 3) until two CTAs fit
// (kernel_check, Qwen3 T=4096 NF4 BM128 BN128: 462.9 us at 4 stages, 493.2 at 5), unless
// keep_stages (CHORD_W4A16_STAGES is forced). The parser checks rows with it, the resolver runs
// it on every candidate.
W4A16GemmConfig w4a16_config_for_weight(W4A16GemmConfig c, W4A16WeightKind weight, bool keep_stages = false);

// Parses JSON text; throws Error(CHORD_ERROR_INVALID_ARGUMENT) naming the table and row
// for anything malformed (missing or unknown field, a split that is not one of the suite's in
// `shapes`, invalid config, ranges that are not sorted and contiguous, a refinement that no
// range row backs). Without `shapes`: the embedded shapes file.
TuningTable parse_tuning_table(const std::string& name, const std::string& json_text);
TuningTable parse_tuning_table(const std::string& name, const std::string& json_text, const ModelShapes& shapes);

// Every embedded table, parsed once.
const std::vector<TuningTable>& tuning_tables();

// The (arch, split) table, or nullptr.
const TuningTable* find_tuning_table(const Arch& arch, const std::string& split);

// The split of the arch's table whose GEMM shapes hold (N, K), or "" (generic: the heuristic
// decides).
std::string detect_split(const Arch& arch, int n, int k);

// The INT4 range row for the expected rows per expert, if the (arch, split) table has one.
std::optional<TuningRow> find_tuning_row(const Arch& arch, const std::string& split, int64_t rows_per_expert);

// The table of (arch, split) in the (min_m, max_m, config) form vLLM's Humming backend
// reads, with M in tokens: rows per expert = M * top_k / experts. One entry per INT4 range row;
// the config fields are the INT4 tile the table gives for (n, k) there (int4_config; the resolver
// may still pick the warp-specialized engine at large row counts, same block_m); block_size_m
// is the range row's routing block, the same for every shape of the split.
std::string export_vllm_tuning(const Arch& arch, const std::string& split, int experts, int top_k, int n, int k);

}  // namespace chord
