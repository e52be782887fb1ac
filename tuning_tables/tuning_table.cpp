#include "tuning_tables/tuning_table.hpp"

#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/embedded_headers.hpp"
#include "core/error.hpp"

namespace chord {
namespace {

using nlohmann::json;

template <typename T>
T field(const json& object, const char* key, const std::string& where) {
  CHORD_REQUIRE(object.is_object(), "tuning table {}: expected an object holding '{}'", where, key);
  auto it = object.find(key);
  CHORD_REQUIRE(it != object.end(), "tuning table {}: missing field '{}'", where, key);
  if constexpr (std::is_integral_v<T>) {
    // Integers only, in range: a float or a huge value would convert with undefined behaviour.
    CHORD_REQUIRE(it->is_number_integer(), "tuning table {}: field '{}' must be an integer", where, key);
    const bool fits = it->is_number_unsigned() ? it->template get<uint64_t>() <= uint64_t{1} << 40
                                               : it->template get<int64_t>() >= -(int64_t{1} << 40) &&
                                                     it->template get<int64_t>() <= int64_t{1} << 40;
    CHORD_REQUIRE(fits, "tuning table {}: field '{}' is out of range", where, key);
  }
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    fail(CHORD_ERROR_INVALID_ARGUMENT, "tuning table {}: field '{}' has the wrong type", where, key);
  }
}

template <typename T>
T optional_field(const json& object, const char* key, T fallback, const std::string& where) {
  return object.is_object() && object.contains(key) ? field<T>(object, key, where) : fallback;
}

// The entry of a per-shape list (shape_overrides, indexed_block_fallback, the warp-specialized
// shapes) for (n, k), or nullptr.
template <class Entry>
const Entry* find_shape(const std::vector<Entry>& list, int n, int k) {
  for (const auto& e : list) {
    if (e.n == n && e.k == k) return &e;
  }
  return nullptr;
}

}  // namespace

TuningTable parse_tuning_table(const std::string& name, const std::string& json_text) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::exception& e) {
    fail(CHORD_ERROR_INVALID_ARGUMENT, "tuning table {}: not valid JSON: {}", name, e.what());
  }
  CHORD_REQUIRE(doc.is_object(), "tuning table {}: the top level must be an object", name);
  TuningTable table;
  table.name = name;
  table.arch = field<std::string>(doc, "arch", name);
  parse_arch(table.arch);  // throws for an unknown arch
  table.profile = field<std::string>(doc, "profile", name);
  for (const json& shape : field<json>(doc, "shapes", name)) {
    table.shapes.emplace_back(field<int>(shape, "n", name), field<int>(shape, "k", name));
  }
  // Every config a row names must fit every (N, K) the profile is recognised by (a shape
  // override: its own shape).
  auto require_fits_shape = [&](const W4A16GemmConfig& c, int n, int k, const std::string& where) {
    if (const char* why = c.shape_error(n, k)) {
      fail(CHORD_ERROR_INVALID_ARGUMENT, "tuning table {}: does not fit N={} K={}: {}", where, n, k, why);
    }
  };
  auto require_fits = [&](const W4A16GemmConfig& c, const std::string& where) {
    for (const auto& [n, k] : table.shapes) require_fits_shape(c, n, k, where);
  };
  // A per-shape entry names one of the table's (N, K).
  auto require_known_shape = [&](int n, int k, const std::string& where) {
    bool known = false;
    for (const auto& shape : table.shapes) known |= shape.first == n && shape.second == k;
    CHORD_REQUIRE(known, "tuning table {}: N={} K={} is not one of the table's shapes", where, n, k);
  };
  // Every object that changes a choice carries the measurement behind it.
  auto require_measured = [&](const json& o, const std::string& where) {
    CHORD_REQUIRE(!field<std::string>(o, "measured", where).empty(), "tuning table {}: 'measured' is empty", where);
  };
  // An override object (nf4, shape_overrides, indexed_block_fallback): `c` with the object's
  // block_n, block_k, stages and warps_n where it names them, its own non-empty `measured`, a
  // valid config.
  auto overridden = [&](W4A16GemmConfig c, const json& o, const std::string& where) {
    c.block_n = optional_field<int>(o, "block_n", c.block_n, where);
    c.block_k = optional_field<int>(o, "block_k", c.block_k, where);
    c.stages = optional_field<int>(o, "stages", c.stages, where);
    c.warps_n = optional_field<int>(o, "warps_n", c.warps_n, where);
    require_measured(o, where);
    if (const char* why = c.error()) fail(CHORD_ERROR_INVALID_ARGUMENT, "tuning table {}: {}", where, why);
    return c;
  };
  int64_t next_min = 0;
  const json rows = field<json>(doc, "rows", name);
  CHORD_REQUIRE(rows.is_array() && !rows.empty(), "tuning table {}: 'rows' must be a non-empty array", name);
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string where = name + " row " + std::to_string(i);
    TuningRow row;
    row.min_m = field<int64_t>(rows[i], "min_m", where);
    row.max_m = field<int64_t>(rows[i], "max_m", where);
    CHORD_REQUIRE(row.min_m == next_min && row.max_m >= row.min_m,
                  "tuning table {}: ranges must be sorted, contiguous and start at 0 (min_m {} max_m {})", where,
                  row.min_m, row.max_m);
    next_min = row.max_m + 1;
    // The warp-specialized kernel is the resolver's promotion of a wgmma row, not a row's engine.
    const std::string engine = optional_field<std::string>(rows[i], "engine", "mma_sync", where);
    const auto parsed = parse_w4a16_engine(engine);
    CHORD_REQUIRE(parsed && *parsed != W4A16Engine::kWgmmaWs, "tuning table {}: engine '{}' is not mma_sync or wgmma",
                  where, engine);
    row.config.engine = *parsed;
    row.config.warpgroups = optional_field<int>(rows[i], "warpgroups", 2, where);
    row.config.block_m = field<int>(rows[i], "block_m", where);
    row.config.block_n = field<int>(rows[i], "block_n", where);
    row.config.block_k = field<int>(rows[i], "block_k", where);
    row.config.stages = field<int>(rows[i], "stages", where);
    row.config.warps_m = field<int>(rows[i], "warps_m", where);
    row.config.warps_n = field<int>(rows[i], "warps_n", where);
    row.measured = field<std::string>(rows[i], "measured", where);
    if (const char* why = row.config.error()) fail(CHORD_ERROR_INVALID_ARGUMENT, "tuning table {}: {}", where, why);
    row.routing_block = optional_field<int>(rows[i], "routing_block", row.config.block_m, where);
    CHORD_REQUIRE(row.routing_block >= row.config.block_m && row.routing_block % row.config.block_m == 0 &&
                      row.routing_block <= 1024,
                  "tuning table {}: routing_block {} must be a multiple of block_m {} (at most 1024)", where,
                  row.routing_block, row.config.block_m);
    require_fits(row.config, where);
    if (rows[i].is_object() && rows[i].contains("nf4")) {
      const json& o = rows[i]["nf4"];
      const std::string nf4_where = where + " nf4";
      CHORD_REQUIRE(o.is_object() && !o.contains("block_m") && !o.contains("engine"),
                    "tuning table {}: must be an object of block_n, block_k, stages, warps_n and measured", nf4_where);
      W4A16GemmConfig c = row.config;
      c.weight = kW4A16WeightNF4;
      c = overridden(c, o, nf4_where);
      require_fits(c, nf4_where);
      row.nf4_config = c;
    }
    if (rows[i].is_object() && rows[i].contains("shape_overrides")) {
      const json& list = rows[i]["shape_overrides"];
      CHORD_REQUIRE(list.is_array(), "tuning table {}: 'shape_overrides' must be an array", where);
      for (size_t j = 0; j < list.size(); ++j) {
        const json& o = list[j];
        const std::string o_where = where + " shape_overrides " + std::to_string(j);
        CHORD_REQUIRE(o.is_object() && !o.contains("engine") && !o.contains("warps_m") && !o.contains("nf4"),
                      "tuning table {}: must be an object of n, k, block_m, block_n, block_k, stages, warps_n and "
                      "measured",
                      o_where);
        TuningRow::ShapeOverride s;
        s.n = field<int>(o, "n", o_where);
        s.k = field<int>(o, "k", o_where);
        require_known_shape(s.n, s.k, o_where);
        s.config = row.config;
        s.config.block_m = optional_field<int>(o, "block_m", s.config.block_m, o_where);
        s.config = overridden(s.config, o, o_where);
        require_fits_shape(s.config, s.n, s.k, o_where);
        CHORD_REQUIRE(row.routing_block % s.config.block_m == 0,
                      "tuning table {}: block_m {} must divide the row's routing_block {}", o_where,
                      s.config.block_m, row.routing_block);
        row.shape_overrides.push_back(s);
      }
    }
    table.rows.push_back(row);
  }
  if (doc.contains("int4_warp_specialized")) {
    const json& o = doc["int4_warp_specialized"];
    const std::string where = name + " int4_warp_specialized";
    CHORD_REQUIRE(o.is_object(),
                  "tuning table {}: must be an object of min_rows_indexed, measured and optional shape_overrides", where);
    auto min_rows = [&](const json& obj, const std::string& at) {
      const int64_t rows = field<int64_t>(obj, "min_rows_indexed", at);
      CHORD_REQUIRE(rows >= 1, "tuning table {}: min_rows_indexed {} must be positive", at, rows);
      return rows;
    };
    table.ws_int4_min_rows_indexed = min_rows(o, where);
    require_measured(o, where);
    const json list = o.contains("shape_overrides") ? o["shape_overrides"] : json::array();
    CHORD_REQUIRE(list.is_array(), "tuning table {}: 'shape_overrides' must be an array", where);
    for (size_t j = 0; j < list.size(); ++j) {
      const json& e = list[j];
      const std::string e_where = where + " shape_overrides " + std::to_string(j);
      CHORD_REQUIRE(e.is_object() && e.size() == 5 && e.contains("stages"),
                    "tuning table {}: must be an object of n, k, min_rows_indexed, stages and measured", e_where);
      TuningTable::WsShape w;
      w.n = field<int>(e, "n", e_where);
      w.k = field<int>(e, "k", e_where);
      require_known_shape(w.n, w.k, e_where);
      w.min_rows_indexed = min_rows(e, e_where);
      // The kernel the entry runs: the warp-specialized INT4 tile with these stages.
      W4A16GemmConfig c;
      c.mode = kW4A16Indexed;
      c.block_k = kW4A16WgmmaBlockK;
      c = overridden(warp_specialized_tile(c, false), e, e_where);  // stages is present (checked above)
      require_fits_shape(c, w.n, w.k, e_where);
      w.stages = c.stages;
      table.ws_int4_shapes.push_back(w);
    }
  }
  if (doc.contains("indexed_block_fallback")) {
    const json& o = doc["indexed_block_fallback"];
    const std::string where = name + " indexed_block_fallback";
    CHORD_REQUIRE(o.is_object(), "tuning table {}: must be an object of shape_overrides and measured", where);
    require_measured(o, where);
    const json list = field<json>(o, "shape_overrides", where);
    CHORD_REQUIRE(list.is_array(), "tuning table {}: 'shape_overrides' must be an array", where);
    for (size_t j = 0; j < list.size(); ++j) {
      const json& e = list[j];
      const std::string e_where = where + " shape_overrides " + std::to_string(j);
      CHORD_REQUIRE(e.is_object() && e.size() == 5 && e.contains("block_n") && e.contains("stages"),
                    "tuning table {}: must be an object of n, k, block_n, stages and measured", e_where);
      TuningTable::BlockFallback f;
      f.n = field<int>(e, "n", e_where);
      f.k = field<int>(e, "k", e_where);
      require_known_shape(f.n, f.k, e_where);
      // Checked on the smallest tile the fallback runs (BLOCK_M 64); the resolver checks again.
      W4A16GemmConfig c;
      c.engine = W4A16Engine::kWgmma;
      c.block_m = 64;
      c.block_k = kW4A16WgmmaBlockK;
      c = overridden(c, e, e_where);  // block_n and stages are present (checked above)
      require_fits_shape(c, f.n, f.k, e_where);
      f.block_n = c.block_n;
      f.stages = c.stages;
      table.indexed_block_fallback.push_back(f);
    }
  }
  return table;
}

const TuningTable::WsShape* TuningTable::ws_int4_shape(int n, int k) const { return find_shape(ws_int4_shapes, n, k); }

const TuningTable::BlockFallback* TuningTable::block_fallback(int n, int k) const {
  return find_shape(indexed_block_fallback, n, k);
}

const W4A16GemmConfig& TuningRow::int4_config(int n, int k) const {
  const ShapeOverride* s = find_shape(shape_overrides, n, k);
  return s ? s->config : config;
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

std::string detect_profile(const Arch& arch, int n, int k) {
  for (const auto& table : tuning_tables()) {
    if (table.arch != arch.name()) continue;
    for (const auto& shape : table.shapes) {
      if (shape.first == n && shape.second == k) return table.profile;
    }
  }
  return "";
}

const TuningTable* find_tuning_table(const Arch& arch, const std::string& profile) {
  for (const auto& table : tuning_tables()) {
    if (table.arch == arch.name() && table.profile == profile) return &table;
  }
  return nullptr;
}

const TuningRow* TuningTable::row_for(int64_t rows_per_expert) const {
  for (const auto& row : rows) {
    if (rows_per_expert >= row.min_m && rows_per_expert <= row.max_m) return &row;
  }
  return nullptr;
}

std::optional<TuningRow> find_tuning_row(const Arch& arch, const std::string& profile, int64_t rows_per_expert) {
  const TuningTable* table = find_tuning_table(arch, profile);
  const TuningRow* row = table ? table->row_for(rows_per_expert) : nullptr;
  return row ? std::optional<TuningRow>(*row) : std::nullopt;
}

std::string export_vllm_tuning(const Arch& arch, const std::string& profile, int experts, int top_k, int n, int k) {
  CHORD_REQUIRE(experts > 0 && top_k > 0, "export: experts and top_k must be positive");
  if (const TuningTable* table = find_tuning_table(arch, profile)) {
    json out = json::array();
    for (const auto& row : table->rows) {
      // Tokens M whose mean rows per expert (M * top_k / experts) fall in the row's range.
      const int64_t min_tokens = (row.min_m * experts + top_k - 1) / top_k;
      const int64_t max_tokens = row.max_m >= (int64_t{1} << 40) / experts ? (int64_t{1} << 31) - 1
                                                                             : ((row.max_m + 1) * experts - 1) / top_k;
      if (max_tokens < min_tokens) continue;
      const auto& c = row.int4_config(n, k);  // the shape's override where the row has one
      out.push_back({min_tokens, max_tokens,
                     {{"block_size_m", row.routing_block}, {"engine", w4a16_engine_name(c.engine)},
                      {"block_m", c.block_m}, {"block_n", c.block_n},
                      {"block_k", c.block_k}, {"stages", c.stages}, {"warps_m", c.warps_m},
                      {"warps_n", c.warps_n}}});
    }
    return out.dump();
  }
  fail(CHORD_ERROR_INVALID_ARGUMENT, "no tuning table for arch {} profile '{}'", arch.name(), profile);
}

}  // namespace chord
