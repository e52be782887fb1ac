#include "core/model_shapes.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/embedded_headers.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace chord {
namespace {

using nlohmann::json;

constexpr const char* kFileKeys[] = {"about", "suite", "generalization"};
constexpr const char* kSetKeys[] = {"about", "models", "splits", "rows"};
constexpr const char* kModelKeys[] = {"name", "title", "hidden", "moe_intermediate", "experts", "top_k"};
constexpr const char* kSplitKeys[] = {"name", "model", "ep", "tp", "kernel_set", "experts_local", "gate_up", "down"};
constexpr const char* kGemmKeys[] = {"n", "k"};
constexpr const char* kRowKeys[] = {"scenario",          "split",           "mode",  "weight", "routed_over", "routing_block",
                                    "draw",              "tokens",          "tokens_per_expert",
                                    "rows_per_expert",   "quick"};
// What a row's sweep counts, by mode (the W4A16 modes of jit/families/w4a16.hpp).
constexpr const char* kModeSweeps[][2] = {
    {"contiguous", "rows_per_expert"}, {"masked", "tokens_per_expert"}, {"offsets", "tokens"}, {"indexed", "tokens"}};

json array_field(const json& object, const char* key, const std::string& where) {
  json value = json_field<json>(object, key, where);
  CHORD_REQUIRE(value.is_array(), "{}: '{}' must be an array", where, key);
  return value;
}

int positive(const json& object, const char* key, const std::string& where) {
  const int value = json_field<int>(object, key, where);
  CHORD_REQUIRE(value > 0, "{}: '{}' must be positive, not {}", where, key, value);
  return value;
}

GemmShape gemm(const json& object, const char* key, const std::string& where) {
  const json& g = json_field<json>(object, key, where);
  const std::string at = where + " " + key;
  require_known_json_keys(g, kGemmKeys, at);
  return GemmShape{positive(g, "n", at), positive(g, "k", at)};
}

std::vector<int64_t> sweep(const json& object, const char* key, const std::string& where) {
  std::vector<int64_t> values;
  for (const json& v : array_field(object, key, where)) {
    CHORD_REQUIRE(v.is_number_integer() && v.get<int64_t>() > 0 && v.get<int64_t>() <= int64_t{1} << 40,
                  "{}: '{}' holds positive integers", where, key);
    CHORD_REQUIRE(values.empty() || v.get<int64_t>() > values.back(), "{}: '{}' must be ascending", where, key);
    values.push_back(v.get<int64_t>());
  }
  return values;
}

// Reads a model's or split's name and checks its keys; returns the entry's "where".
template <size_t N>
std::string named_entry(const json& entry, const char* kind, const char* const (&keys)[N], const std::string& where,
                        std::string* name) {
  *name = json_field<std::string>(entry, "name", where + " " + kind);
  const std::string at = where + " " + kind + " " + *name;
  require_known_json_keys(entry, keys, at);
  return at;
}

void parse_set(ModelShapes& out, const std::string& set, const json& doc, const std::string& file) {
  const std::string where = "shapes file " + file + " " + set;
  require_known_json_keys(doc, kSetKeys, where);
  json_field<std::string>(doc, "about", where);
  for (const json& m : array_field(doc, "models", where)) {
    ShapeModel model;
    model.set = set;
    const std::string at = named_entry(m, "model", kModelKeys, where, &model.name);
    CHORD_REQUIRE(out.model(model.name) == nullptr, "{}: a model of this name is defined twice", at);
    model.title = json_field<std::string>(m, "title", at);
    model.hidden = positive(m, "hidden", at);
    model.moe_intermediate = positive(m, "moe_intermediate", at);
    model.experts = positive(m, "experts", at);
    model.top_k = positive(m, "top_k", at);
    CHORD_REQUIRE(model.top_k <= model.experts, "{}: top_k {} exceeds the {} experts", at, model.top_k,
                  model.experts);
    out.models.push_back(model);
  }
  for (const json& s : array_field(doc, "splits", where)) {
    ShapeSplit split;
    split.set = set;
    const std::string at = named_entry(s, "split", kSplitKeys, where, &split.name);
    CHORD_REQUIRE(!split.name.empty() && out.split(split.name) == nullptr, "{}: a split of this name is defined twice",
                  at);
    CHORD_REQUIRE(split.name != "heuristic" && split.name != "all" && split.name != "dequant",
                  "{}: '{}' is a reserved name (CHORD_W4A16_PROFILE, chord precompile)", at, split.name);
    split.model = json_field<std::string>(s, "model", at);
    const ShapeModel* model = out.model(split.model);
    CHORD_REQUIRE(model != nullptr && model->set == set, "{}: model '{}' is not one of the {} models", at, split.model,
                  set);
    split.ep = positive(s, "ep", at);
    split.tp = positive(s, "tp", at);
    split.kernel_set = optional_json_field<bool>(s, "kernel_set", false, at);
    CHORD_REQUIRE(!split.kernel_set || set == "suite", "{}: only the suite's splits are kernel sets", at);
    split.experts_local = positive(s, "experts_local", at);
    split.gate_up = gemm(s, "gate_up", at);
    split.down = gemm(s, "down", at);
    // The derived numbers are written out for the reader; they must follow from the model.
    CHORD_REQUIRE(model->experts % split.ep == 0 && split.experts_local == model->experts / split.ep,
                  "{}: experts_local {} is not the model's {} experts split {} ways", at, split.experts_local,
                  model->experts, split.ep);
    CHORD_REQUIRE(model->moe_intermediate % split.tp == 0, "{}: moe_intermediate {} does not split {} ways", at,
                  model->moe_intermediate, split.tp);
    const int intermediate = model->moe_intermediate / split.tp;
    CHORD_REQUIRE(split.gate_up == (GemmShape{2 * intermediate, model->hidden}),
                  "{}: gate_up must be N = 2 x moe_intermediate / tp = {}, K = hidden = {}", at, 2 * intermediate,
                  model->hidden);
    CHORD_REQUIRE(split.down == (GemmShape{model->hidden, intermediate}),
                  "{}: down must be N = hidden = {}, K = moe_intermediate / tp = {}", at, model->hidden, intermediate);
    // The resolver's configs run any N % 16 == 0, K % 64 == 0 (include/chord/chord.h); a split
    // outside that is one chord cannot serve, so it has no place in the bench.
    for (const GemmShape& g : {split.gate_up, split.down}) {
      CHORD_REQUIRE(g.n % 16 == 0 && g.k % 64 == 0, "{}: GEMM N {} x K {} breaks N % 16 == 0, K % 64 == 0", at, g.n,
                    g.k);
    }
    out.splits.push_back(split);
  }
  for (const json& r : array_field(doc, "rows", where)) {
    ShapeRow row;
    row.set = set;
    row.scenario = json_field<std::string>(r, "scenario", where + " row");
    const std::string at = where + " row '" + row.scenario + "'";
    require_known_json_keys(r, kRowKeys, at);
    for (const auto& other : out.rows) {
      CHORD_REQUIRE(other.scenario != row.scenario, "{}: a row of this scenario is defined twice", at);
    }
    row.split = json_field<std::string>(r, "split", at);
    const ShapeSplit* split = out.split(row.split);
    CHORD_REQUIRE(split != nullptr && split->set == set, "{}: split '{}' is not one of the {} splits", at, row.split,
                  set);
    row.mode = json_field<std::string>(r, "mode", at);
    const char* sweep_key = nullptr;
    for (const auto& [mode, key] : kModeSweeps) {
      if (row.mode == mode) sweep_key = key;
    }
    CHORD_REQUIRE(sweep_key != nullptr, "{}: mode '{}' is not contiguous, masked, offsets or indexed", at, row.mode);
    for (const auto& [mode, key] : kModeSweeps) {
      CHORD_REQUIRE(std::string(key) == sweep_key || !r.contains(key), "{}: a {} row sweeps '{}', not '{}'", at,
                    row.mode, sweep_key, key);
    }
    row.weight = optional_json_field<std::string>(r, "weight", "int4", at);
    CHORD_REQUIRE(row.weight == "int4" || row.weight == "nf4", "{}: weight '{}' is not int4 or nf4", at, row.weight);
    const bool indexed = row.mode == "indexed";
    CHORD_REQUIRE(indexed == r.contains("routed_over") && indexed == r.contains("routing_block"),
                  "{}: an indexed row, and only one, names routed_over and routing_block", at);
    if (indexed) {
      row.routed_over = json_field<std::string>(r, "routed_over", at);
      CHORD_REQUIRE(row.routed_over == "local_experts" || row.routed_over == "model_experts",
                    "{}: routed_over '{}' is not local_experts or model_experts", at, row.routed_over);
      row.routing_block = positive(r, "routing_block", at);
    }
    // Which experts a route picks: only the modes that route tokens (indexed, offsets) draw.
    CHORD_REQUIRE(!r.contains("draw") || indexed || row.mode == "offsets", "{}: a {} row has no routing to draw", at,
                  row.mode);
    row.draw = optional_json_field<std::string>(r, "draw", "mild", at);
    CHORD_REQUIRE(row.draw == "mild" || row.draw == "uniform" || row.draw == "skewed",
                  "{}: draw '{}' is not mild, uniform or skewed", at, row.draw);
    row.sweep = sweep(r, sweep_key, at);
    CHORD_REQUIRE(!row.sweep.empty(), "{}: '{}' is empty", at, sweep_key);
    row.quick = sweep(r, "quick", at);
    for (int64_t v : row.quick) {
      CHORD_REQUIRE(std::find(row.sweep.begin(), row.sweep.end(), v) != row.sweep.end(),
                    "{}: quick value {} is not in '{}'", at, v, sweep_key);
    }
    out.rows.push_back(row);
  }
}

}  // namespace

const ShapeModel* ModelShapes::model(const std::string& name) const {
  for (const auto& m : models) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

const ShapeSplit* ModelShapes::split(const std::string& name) const {
  for (const auto& s : splits) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::vector<const ShapeSplit*> ModelShapes::kernel_sets() const {
  std::vector<const ShapeSplit*> out;
  for (const auto& s : splits) {
    if (s.kernel_set) out.push_back(&s);
  }
  return out;
}

ModelShapes parse_model_shapes(const std::string& name, const std::string& json_text) {
  const json doc = parse_json_file("shapes file " + name, json_text);
  const std::string where = "shapes file " + name;
  CHORD_REQUIRE(doc.is_object(), "{}: the top level must be an object", where);
  require_known_json_keys(doc, kFileKeys, where);
  json_field<std::string>(doc, "about", where);
  ModelShapes shapes;
  // The suite first: its splits are the ones tuned on; the generalization set only tests the
  // heuristic on other public models.
  parse_set(shapes, "suite", json_field<json>(doc, "suite", where), name);
  if (doc.contains("generalization")) parse_set(shapes, "generalization", doc["generalization"], name);
  return shapes;
}

const ModelShapes& model_shapes() {
  static const ModelShapes shapes = [] {
    const auto& files = embedded_shape_files();
    CHORD_REQUIRE(files.size() == 1, "the library embeds {} shapes files, expected shapes/suite.json", files.size());
    return parse_model_shapes(std::string(files[0].name), std::string(files[0].contents));
  }();
  return shapes;
}

}  // namespace chord
