// The shapes file (shapes/suite.json) is the one definition of the suite's shapes: it parses,
// its derived GEMMs follow from its models, and the tuning tables and kernel sets agree with it.
#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/model_shapes.hpp"
#include "precompile/kernel_sets.hpp"
#include "tuning_tables/tuning_table.hpp"

namespace {

// A small valid file; `split_extra` is spliced into its one split, `row_extra` into its row,
// `tail` after the suite section.
std::string file(const std::string& split_extra = "", const std::string& row_extra = "",
                 const std::string& tail = "") {
  return R"({"about": "t", "suite": {"about": "t",
    "models": [{"name": "m", "title": "M", "hidden": 7168, "moe_intermediate": 2048, "experts": 384, "top_k": 8}],
    "splits": [{"name": "s8", "model": "m", "ep": 8, "tp": 1, "kernel_set": true, "experts_local": 48,
                "gate_up": {"n": 4096, "k": 7168}, "down": {"n": 7168, "k": 2048})" +
         split_extra + R"(}],
    "rows": [{"scenario": "masked S8", "split": "s8", "mode": "masked", "tokens_per_expert": [8, 16], "quick": [8])" +
         row_extra + "}]}" + tail + "}";
}

const std::string kGeneralization = R"(, "generalization": {"about": "g",
    "models": [{"name": "g", "title": "G", "hidden": 2048, "moe_intermediate": 768, "experts": 128, "top_k": 8}],
    "splits": [{"name": "g1", "model": "g", "ep": 1, "tp": 1, "experts_local": 128,
                "gate_up": {"n": 1536, "k": 2048}, "down": {"n": 2048, "k": 768}}],
    "rows": []})";

std::string table(const std::string& split) {
  return R"({"arch": "sm_90a", "split": ")" + split +
         R"(", "rows": [{"min_m": 0, "block_m": 16, "block_n": 128, "block_k": 128, "stages": 3, "warps_m": 1, "warps_n": 4, "measured": "x"}]})";
}

}  // namespace

TEST_CASE("shapes: the embedded file parses and every split follows from its model", "[shapes]") {
  const chord::ModelShapes& shapes = chord::model_shapes();
  REQUIRE(!shapes.splits.empty());
  for (const auto& split : shapes.splits) {
    const chord::ShapeModel* model = shapes.model(split.model);
    REQUIRE(model != nullptr);
    CHECK(split.experts_local * split.ep == model->experts);
    CHECK(split.gate_up == (chord::GemmShape{2 * model->moe_intermediate / split.tp, model->hidden}));
    CHECK(split.down == (chord::GemmShape{model->hidden, model->moe_intermediate / split.tp}));
  }
  for (const auto& row : shapes.rows) CHECK(shapes.split(row.split) != nullptr);
}

TEST_CASE("shapes: every tuning table serves a kernel-set split of the suite, with its GEMMs", "[shapes]") {
  const chord::ModelShapes& shapes = chord::model_shapes();
  REQUIRE(!chord::tuning_tables().empty());
  for (const auto& t : chord::tuning_tables()) {
    INFO(t.name);
    const chord::ShapeSplit* split = shapes.split(t.split);
    REQUIRE(split != nullptr);
    CHECK(split->set == "suite");
    CHECK(split->kernel_set);  // what a table tunes, `chord precompile` can compile ahead
    CHECK(t.shapes == (std::vector<std::pair<int, int>>{{split->gate_up.n, split->gate_up.k},
                                                        {split->down.n, split->down.k}}));
    for (const auto& [n, k] : t.shapes) CHECK(chord::detect_split(chord::parse_arch(t.arch), n, k) == t.split);
  }
}

TEST_CASE("shapes: the kernel sets are the kernel-set splits, with their GEMMs", "[shapes]") {
  std::vector<std::string> expected = {"dequant"};
  for (const chord::ShapeSplit* split : chord::model_shapes().kernel_sets()) {
    expected.push_back(split->name);
    const std::string summary = chord::kernel_set_summary(split->name);
    CHECK(summary.find(std::to_string(split->experts_local) + " experts") == 0);
    CHECK(summary.find(std::to_string(split->gate_up.n) + " x " + std::to_string(split->gate_up.k)) !=
          std::string::npos);
    CHECK(summary.find(std::to_string(split->down.n) + " x " + std::to_string(split->down.k)) != std::string::npos);
    CHECK(!chord::kernel_set_descriptors(split->name, chord::parse_arch("sm_90a")).empty());
  }
  expected.push_back("all");
  CHECK(chord::kernel_set_names() == expected);
  // The names users pass (docs/getting_started.md, docs/environment.md) stay.
  for (const char* name : {"ep8", "tp8", "qwen3"}) CHECK(chord::model_shapes().split(name) != nullptr);
}

TEST_CASE("shapes: a table naming a split the file does not hold, or an untuned one, is an error", "[shapes]") {
  CHECK_NOTHROW(chord::parse_tuning_table("t.json", table("ep8")));
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", table("ep64")),
                    Catch::Contains("t.json") && Catch::Contains("'ep64' is not one of the suite's splits"));
  const chord::ModelShapes with_generalization = chord::parse_model_shapes("f.json", file("", "", kGeneralization));
  CHECK_NOTHROW(chord::parse_tuning_table("t.json", table("s8"), with_generalization));
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", table("g1"), with_generalization),
                    Catch::Contains("'g1' is not one of the suite's splits"));
}

TEST_CASE("shapes: a malformed shapes file is rejected naming the entry", "[shapes]") {
  const chord::ModelShapes ok = chord::parse_model_shapes("f.json", file("", "", kGeneralization));
  CHECK(ok.splits.size() == 2);
  CHECK(ok.split("g1")->set == "generalization");
  CHECK(ok.kernel_sets().size() == 1);
  auto rejects = [](const std::string& text, const std::string& needle) {
    INFO(text);
    CHECK_THROWS_WITH(chord::parse_model_shapes("f.json", text), Catch::Contains("f.json") && Catch::Contains(needle));
  };
  rejects("{", "not valid JSON");
  rejects(file(R"(, "pp": 2)"), "split s8: unknown field 'pp'");
  rejects(file("", R"(, "top_k": 2)"), "unknown field 'top_k'");
  rejects(file("", "", R"(, "extra": {})"), "unknown field 'extra'");
  std::string wrong = file();
  wrong.replace(wrong.find("\"experts_local\": 48"), 19, "\"experts_local\": 47");
  rejects(wrong, "experts_local 47");
  wrong = file();
  wrong.replace(wrong.find("\"n\": 4096"), 9, "\"n\": 2048");
  rejects(wrong, "gate_up must be N = 2 x moe_intermediate / tp = 4096");
  wrong = file();
  wrong.replace(wrong.find("\"split\": \"s8\""), 13, "\"split\": \"s9\"");
  rejects(wrong, "split 's9' is not one of the suite splits");
  rejects(file("", R"(, "tokens": [8])"), "sweeps 'tokens_per_expert', not 'tokens'");
  wrong = file();
  wrong.replace(wrong.find("\"quick\": [8]"), 12, "\"quick\": [9]");
  rejects(wrong, "quick value 9");
  rejects(file("", R"(, "draw": "uniform")"), "a masked row has no routing to draw");
  wrong = file("", "", kGeneralization);
  wrong.replace(wrong.find("\"rows\": []"), 10,
                R"("rows": [{"scenario": "g d", "split": "g1", "mode": "offsets", "draw": "zipf", "tokens": [1], "quick": []}])");
  rejects(wrong, "draw 'zipf' is not mild, uniform or skewed");
  // gpt-oss-120b under TP2: moe_intermediate 2880 / 2 = 1440 is not a multiple of 64.
  rejects(file("", "", R"(, "generalization": {"about": "g",
    "models": [{"name": "o", "title": "O", "hidden": 2880, "moe_intermediate": 2880, "experts": 128, "top_k": 4}],
    "splits": [{"name": "o2", "model": "o", "ep": 1, "tp": 2, "experts_local": 128,
                "gate_up": {"n": 2880, "k": 2880}, "down": {"n": 2880, "k": 1440}}], "rows": []})"),
          "GEMM N 2880 x K 1440 breaks N % 16 == 0, K % 64 == 0");
  rejects(file("", "", R"(, "generalization": {"about": "g", "models": [], "splits": [{"name": "s8", "model": "m",
            "ep": 8, "tp": 1, "experts_local": 48, "gate_up": {"n": 4096, "k": 7168}, "down": {"n": 7168, "k": 2048}}],
            "rows": []})"),
          "defined twice");
}

TEST_CASE("shapes: the generalization set is other models' splits, untuned and no kernel set", "[shapes]") {
  const chord::ModelShapes& shapes = chord::model_shapes();
  std::vector<const chord::ShapeSplit*> generalization;
  for (const auto& split : shapes.splits) {
    if (split.set == "generalization") generalization.push_back(&split);
  }
  REQUIRE(generalization.size() >= 8);
  std::vector<std::string> models;
  for (const chord::ShapeSplit* split : generalization) {
    INFO(split->name);
    CHECK(!split->kernel_set);
    CHECK(shapes.model(split->model)->set == "generalization");
    if (std::find(models.begin(), models.end(), split->model) == models.end()) models.push_back(split->model);
    for (const auto& table : chord::tuning_tables()) CHECK(table.split != split->name);
    for (const chord::ShapeSplit* kernel_set : shapes.kernel_sets()) CHECK(kernel_set->name != split->name);
  }
  CHECK(models.size() >= 8);  // issue 29: at least 8 public models besides the suite's
  int rows = 0;
  for (const auto& row : shapes.rows) {
    if (row.set != "generalization") continue;
    ++rows;
    INFO(row.scenario);
    CHECK(shapes.split(row.split)->set == "generalization");
    if (row.mode == "indexed") CHECK(row.draw != "mild");  // uniform or skewed, named
  }
  CHECK(rows > 0);
}
