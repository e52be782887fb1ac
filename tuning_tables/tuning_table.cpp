#include "tuning_tables/tuning_table.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/embedded_headers.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace chord {
namespace {

using nlohmann::json;

// The strict readers of core/json_fields.hpp, with messages that start "tuning table ".
template <typename T>
T field(const json& object, const char* key, const std::string& where) {
  return json_field<T>(object, key, "tuning table " + where);
}

template <typename T>
T optional_field(const json& object, const char* key, T fallback, const std::string& where) {
  return optional_json_field<T>(object, key, fallback, "tuning table " + where);
}

// Shared memory of one SM on sm_90 (228 KiB) and what the driver reserves per CTA (1 KiB).
constexpr int kSmemPerSm = 228 * 1024;
constexpr int kSmemReservedPerCta = 1024;

// The keys a table and a row may hold.
constexpr const char* kTableKeys[] = {"arch", "split", "rows_are", "rows"};
constexpr const char* kRowKeys[] = {"min_m",   "max_m",   "weight",  "mode",    "n",          "k",
                                    "min_k",   "engine",  "block_m", "block_n", "block_k",    "stages",
                                    "warps_m", "warps_n", "warpgroups", "routing_block", "measured"};

}  // namespace

W4A16GemmConfig w4a16_config_for_weight(W4A16GemmConfig c, W4A16WeightKind weight, bool keep_stages) {
  c.weight = weight;
  while (!keep_stages && c.wgmma() && !c.warp_specialized() && (c.nf4() || c.zero_point()) && c.stages > 3 &&
         2 * (c.smem_bytes() + kSmemReservedPerCta) > kSmemPerSm) {
    --c.stages;
  }
  return c;
}

TuningTable parse_tuning_table(const std::string& name, const std::string& json_text) {
  return parse_tuning_table(name, json_text, model_shapes());
}

TuningTable parse_tuning_table(const std::string& name, const std::string& json_text, const ModelShapes& shapes) {
  const json doc = parse_json_file("tuning table " + name, json_text);
  CHORD_REQUIRE(doc.is_object(), "tuning table {}: the top level must be an object", name);
  require_known_json_keys(doc, kTableKeys, "tuning table " + name);
  TuningTable table;
  table.name = name;
  table.arch = field<std::string>(doc, "arch", name);
  parse_arch(table.arch);  // throws for an unknown arch
  table.split = field<std::string>(doc, "split", name);
  const ShapeSplit* split = shapes.split(table.split);
  // Tables are measured on the suite; the generalization set tests the heuristic untuned.
  CHORD_REQUIRE(split != nullptr && split->set == "suite",
                "tuning table {}: split '{}' is not one of the suite's splits in shapes/suite.json", name, table.split);
  table.shapes = {{split->gate_up.n, split->gate_up.k}, {split->down.n, split->down.k}};
  const json rows = field<json>(doc, "rows", name);
  CHORD_REQUIRE(rows.is_array() && !rows.empty(), "tuning table {}: 'rows' must be a non-empty array", name);
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& r = rows[i];
    const std::string where = name + " row " + std::to_string(i);
    CHORD_REQUIRE(r.is_object(), "tuning table {}: must be an object", where);
    require_known_json_keys(r, kRowKeys, "tuning table " + where);
    TuningRow row;
    row.min_m = field<int64_t>(r, "min_m", where);
    row.max_m = optional_field<int64_t>(r, "max_m", kTuningRowsUnbounded, where);
    CHORD_REQUIRE(row.min_m >= 0 && row.max_m >= row.min_m, "tuning table {}: min_m {} max_m {} is not a range", where,
                  row.min_m, row.max_m);
    if (r.contains("weight")) {
      const std::string weight = field<std::string>(r, "weight", where);
      CHORD_REQUIRE(weight == "int4" || weight == "nf4", "tuning table {}: weight '{}' is not int4 or nf4", where,
                    weight);
      row.nf4 = weight == "nf4";
    }
    if (r.contains("mode")) {
      const std::string mode = field<std::string>(r, "mode", where);
      for (W4A16Mode m : {kW4A16Contiguous, kW4A16Masked, kW4A16Offsets, kW4A16Indexed}) {
        if (mode == w4a16_mode_name(m)) row.mode = m;
      }
      CHORD_REQUIRE(row.mode.has_value(), "tuning table {}: mode '{}' is not contiguous, masked, offsets or indexed",
                    where, mode);
    }
    CHORD_REQUIRE(r.contains("n") == r.contains("k"), "tuning table {}: 'n' and 'k' name one shape together", where);
    if (r.contains("n")) {
      row.n = field<int>(r, "n", where);
      row.k = field<int>(r, "k", where);
      bool known = false;
      for (const auto& shape : table.shapes) known |= shape.first == row.n && shape.second == row.k;
      CHORD_REQUIRE(known, "tuning table {}: N={} K={} is not one of the table's shapes", where, row.n, row.k);
    }
    row.min_k = optional_field<int>(r, "min_k", 0, where);
    CHORD_REQUIRE(row.min_k >= 0, "tuning table {}: min_k {} is negative", where, row.min_k);
    const std::string engine = optional_field<std::string>(r, "engine", "mma_sync", where);
    const auto parsed = parse_w4a16_engine(engine);
    CHORD_REQUIRE(parsed.has_value(), "tuning table {}: engine '{}' is not mma_sync, wgmma or wgmma_ws", where, engine);
    W4A16GemmConfig& c = row.config;
    c.engine = *parsed;
    c.warpgroups = optional_field<int>(r, "warpgroups", 2, where);
    c.block_m = field<int>(r, "block_m", where);
    c.block_n = field<int>(r, "block_n", where);
    c.block_k = field<int>(r, "block_k", where);
    c.stages = field<int>(r, "stages", where);
    c.warps_m = field<int>(r, "warps_m", where);
    c.warps_n = field<int>(r, "warps_n", where);
    row.measured = field<std::string>(r, "measured", where);
    CHORD_REQUIRE(!row.measured.empty() && row.measured.find('\n') == std::string::npos,
                  "tuning table {}: 'measured' must be one line naming the results behind the row", where);
    // Valid, as the calls it applies to run it (NF4 adds the pair table), on every shape of the
    // table it applies to.
    for (const bool nf4 : {false, true}) {
      if (!row.applies_to(nf4)) continue;
      const W4A16GemmConfig as_run = w4a16_config_for_weight(c, nf4 ? kW4A16WeightNF4 : kW4A16WeightInt4);
      if (const char* why = as_run.error()) {
        fail(CHORD_ERROR_INVALID_ARGUMENT, "tuning table {}{}: {}", where, nf4 ? " (NF4 weights)" : "", why);
      }
    }
    for (const auto& [n, k] : table.shapes) {
      if ((row.n != 0 && (n != row.n || k != row.k)) || k < row.min_k) continue;
      if (const char* why = c.shape_error(n, k)) {
        fail(CHORD_ERROR_INVALID_ARGUMENT, "tuning table {}: does not fit N={} K={}: {}", where, n, k, why);
      }
    }
    CHORD_REQUIRE(!r.contains("routing_block") || (row.range_row() && row.applies_to(false)),
                  "tuning table {}: only a range row that INT4 calls take names a routing_block", where);
    row.routing_block = optional_field<int>(r, "routing_block", c.block_m, where);
    CHORD_REQUIRE(row.routing_block >= c.block_m && row.routing_block % c.block_m == 0 && row.routing_block <= 1024,
                  "tuning table {}: routing_block {} must be a multiple of block_m {} (at most 1024)", where,
                  row.routing_block, c.block_m);
    table.rows.push_back(row);
  }
  // Range rows: for each weight kind, sorted and contiguous from 0, to one common end.
  int64_t end[2] = {-1, -1};
  for (const bool nf4 : {false, true}) {
    int64_t next = 0;
    for (size_t i = 0; i < table.rows.size(); ++i) {
      const TuningRow& row = table.rows[i];
      if (!row.range_row() || !row.applies_to(nf4)) continue;
      CHORD_REQUIRE(row.min_m == next,
                    "tuning table {} row {}: the {} range rows must be sorted, contiguous and start at 0 (min_m {} "
                    "max_m {})",
                    name, i, nf4 ? "NF4" : "INT4", row.min_m, row.max_m);
      next = row.max_m + 1;
    }
    CHORD_REQUIRE(next > 0, "tuning table {}: no range row for {} weights", name, nf4 ? "NF4" : "INT4");
    end[nf4] = next - 1;
  }
  CHORD_REQUIRE(end[0] == end[1], "tuning table {}: the INT4 range rows end at {}, the NF4 ones at {}", name, end[0],
                end[1]);
  // The other rows refine range rows: the kernel's BLOCK_M divides the routing block vLLM aligns
  // to over their range; a row the vLLM export reads spans whole INT4 range rows; a
  // warp-specialized row promotes BM128 WGMMA range rows and is listed before them.
  for (size_t i = 0; i < table.rows.size(); ++i) {
    const TuningRow& row = table.rows[i];
    const std::string where = name + " row " + std::to_string(i);
    bool starts = false, ends = false;
    for (size_t j = 0; j < table.rows.size(); ++j) {
      const TuningRow& range = table.rows[j];
      if (!range.range_row() || range.max_m < row.min_m || range.min_m > row.max_m) continue;
      if (range.applies_to(false)) {
        CHORD_REQUIRE(range.routing_block % row.config.block_m == 0,
                      "tuning table {}: block_m {} must divide the routing_block {} of row {}", where,
                      row.config.block_m, range.routing_block, j);
        starts |= range.min_m == row.min_m;
        ends |= range.max_m == row.max_m;
      }
      if (row.config.warp_specialized() && ((range.applies_to(false) && row.applies_to(false)) ||
                                            (range.applies_to(true) && row.applies_to(true)))) {
        CHORD_REQUIRE(j > i && range.config.engine == W4A16Engine::kWgmma &&
                          range.config.block_m == kW4A16WgmmaWsBlockM,
                      "tuning table {}: a wgmma_ws row promotes the BM128 wgmma range rows listed after it, not row {}",
                      where, j);
      }
    }
    if (!row.range_row() && row.applies_to(false) && !row.mode && !row.config.warp_specialized()) {
      CHORD_REQUIRE(starts && ends, "tuning table {}: min_m {} max_m {} must span whole INT4 range rows", where,
                    row.min_m, row.max_m);
    }
  }
  return table;
}

const TuningRow* TuningTable::range_row_for(int64_t rows_per_expert, bool nf4_weight) const {
  for (const auto& row : rows) {
    if (row.range_row() && row.applies_to(nf4_weight) && rows_per_expert >= row.min_m && rows_per_expert <= row.max_m) {
      return &row;
    }
  }
  return nullptr;
}

const W4A16GemmConfig& TuningTable::int4_config(const TuningRow& range, int n, int k) const {
  for (const auto& row : rows) {
    if (!row.mode && !row.config.warp_specialized() && row.applies(range.min_m, false, kW4A16Indexed, n, k)) {
      return row.config;
    }
  }
  return range.config;
}

const std::vector<TuningTable>& tuning_tables() {
  static const std::vector<TuningTable> tables = [] {
    std::vector<TuningTable> parsed;
    for (const auto& file : embedded_tuning_tables()) {
      parsed.push_back(parse_tuning_table(std::string(file.name), std::string(file.contents)));
    }
    return parsed;
  }();
  return tables;
}

std::string detect_split(const Arch& arch, int n, int k) {
  const std::string arch_name = arch.name();
  for (const auto& table : tuning_tables()) {
    if (table.arch != arch_name) continue;
    for (const auto& shape : table.shapes) {
      if (shape.first == n && shape.second == k) return table.split;
    }
  }
  return "";
}

const TuningTable* find_tuning_table(const Arch& arch, const std::string& split) {
  const std::string arch_name = arch.name();
  for (const auto& table : tuning_tables()) {
    if (table.arch == arch_name && table.split == split) return &table;
  }
  return nullptr;
}

std::optional<TuningRow> find_tuning_row(const Arch& arch, const std::string& split, int64_t rows_per_expert) {
  const TuningTable* table = find_tuning_table(arch, split);
  const TuningRow* row = table ? table->range_row_for(rows_per_expert, false) : nullptr;
  return row ? std::optional<TuningRow>(*row) : std::nullopt;
}

std::string export_vllm_tuning(const Arch& arch, const std::string& split, int experts, int top_k, int n, int k) {
  CHORD_REQUIRE(experts > 0 && top_k > 0, "export: experts and top_k must be positive");
  if (const TuningTable* table = find_tuning_table(arch, split)) {
    json out = json::array();
    for (const auto& row : table->rows) {
      if (!row.range_row() || !row.applies_to(false)) continue;
      // Tokens M whose mean rows per expert (M * top_k / experts) fall in the row's range.
      const int64_t min_tokens = (row.min_m * experts + top_k - 1) / top_k;
      // Token counts are int32 to vLLM: an open-ended row ends at INT_MAX whatever E is.
      const int64_t kMaxTokens = (int64_t{1} << 31) - 1;
      const int64_t max_tokens = row.max_m >= (int64_t{1} << 40) / experts
                                     ? kMaxTokens
                                     : std::min(kMaxTokens, ((row.max_m + 1) * experts - 1) / top_k);
      if (max_tokens < min_tokens) continue;
      const auto& c = table->int4_config(row, n, k);
      out.push_back({min_tokens, max_tokens,
                     {{"block_size_m", row.routing_block}, {"engine", w4a16_engine_name(c.engine)},
                      {"block_m", c.block_m}, {"block_n", c.block_n},
                      {"block_k", c.block_k}, {"stages", c.stages}, {"warps_m", c.warps_m},
                      {"warps_n", c.warps_n}}});
    }
    return out.dump();
  }
  fail(CHORD_ERROR_INVALID_ARGUMENT, "no tuning table for arch {} split '{}'", arch.name(), split);
}

}  // namespace chord
