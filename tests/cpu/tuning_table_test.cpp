// Tuning tables: embedded tables are valid, profiles are recognised from (N, K), the
// resolver follows table -> heuristic -> env, and the vLLM export is consistent.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "chord/chord.h"
#include "jit/env.hpp"
#include "jit/error.hpp"
#include "tuning_tables/tuning_table.hpp"
#include "tuning_tables/w4a16_resolver.hpp"

namespace {
const chord::Arch kSm90a = chord::parse_arch("sm_90a");

chord::W4A16Problem problem(int n, int k, int64_t rows, chord::W4A16Mode mode = chord::kW4A16Masked) {
  chord::W4A16Problem p;
  p.mode = mode;
  p.n = n;
  p.k = k;
  p.experts = 48;
  p.rows_per_expert = rows;
  p.block_size = 64;
  p.arch = kSm90a;
  return p;
}
}  // namespace

TEST_CASE("tuning: every embedded table parses and covers all row counts", "[tuning]") {
  const auto& tables = chord::tuning_tables();
  REQUIRE(tables.size() >= 3);
  for (const auto& t : tables) {
    CHECK(t.rows.front().min_m == 0);
    CHECK(t.rows.back().max_m >= 1000000);
    for (const auto& row : t.rows) CHECK_FALSE(row.measured.empty());
  }
}

TEST_CASE("tuning: profiles are recognised from N and K", "[tuning]") {
  CHECK(chord::detect_profile(kSm90a, 4096, 7168) == "ep8");
  CHECK(chord::detect_profile(kSm90a, 7168, 2048) == "ep8");
  CHECK(chord::detect_profile(kSm90a, 512, 7168) == "tp8");
  CHECK(chord::detect_profile(kSm90a, 7168, 256) == "tp8");
  CHECK(chord::detect_profile(kSm90a, 1536, 2048) == "qwen3");
  CHECK(chord::detect_profile(kSm90a, 1024, 1024).empty());
  CHECK(chord::detect_profile(chord::parse_arch("sm_80"), 4096, 7168).empty());
}

TEST_CASE("tuning: the resolver takes the table row, and the heuristic for other shapes", "[tuning]") {
  auto row = chord::find_tuning_row(kSm90a, "ep8", 8);
  REQUIRE(row.has_value());
  chord::W4A16GemmConfig c = chord::resolve_w4a16_config(problem(4096, 7168, 8));
  CHECK(c.block_m == row->config.block_m);
  CHECK(c.stages == row->config.stages);
  CHECK(c.mode == chord::kW4A16Masked);
  // No table for this shape: still a valid config.
  chord::W4A16GemmConfig generic = chord::resolve_w4a16_config(problem(1024, 1024, 8));
  CHECK(generic.error() == nullptr);
  CHECK(chord::w4a16_shape_error(1024, 1024, generic.block_n, generic.block_k) == nullptr);
  // Indexed: BLOCK_M divides the routing block even when the table wants more.
  chord::W4A16Problem indexed = problem(4096, 7168, 5000, chord::kW4A16Indexed);
  indexed.block_size = 16;
  chord::W4A16GemmConfig small = chord::resolve_w4a16_config(indexed);
  CHECK(16 % small.block_m == 0);
  CHECK(small.error() == nullptr);
}

TEST_CASE("tuning: unsupported shapes are rejected with what is supported", "[tuning]") {
  CHECK_THROWS_WITH(chord::resolve_w4a16_config(problem(100, 7168, 8)), Catch::Contains("multiple of 16"));
  CHECK_THROWS_WITH(chord::resolve_w4a16_config(problem(4096, 100, 8)), Catch::Contains("multiple of 64"));
}

TEST_CASE("tuning: malformed tables are rejected naming the table and row", "[tuning]") {
  const std::string good_row =
      R"({"min_m": 0, "max_m": 99, "block_m": 8, "block_n": 128, "block_k": 128, "stages": 3, "warps_m": 1, "warps_n": 4, "measured": "x"})";
  auto doc = [](const std::string& rows) {
    return R"({"arch": "sm_90a", "profile": "p", "shapes": [{"n": 4096, "k": 7168}], "rows": [)" + rows + "]}";
  };
  CHECK_NOTHROW(chord::parse_tuning_table("t.json", doc(good_row)));
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", "{not json"), Catch::Contains("t.json"));
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc("")), Catch::Contains("non-empty"));
  std::string bad_stages = good_row;
  bad_stages.replace(bad_stages.find("\"stages\": 3"), 11, "\"stages\": 1");
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc(bad_stages)), Catch::Contains("row 0"));
  std::string gap = good_row;
  gap.replace(gap.find("\"min_m\": 0"), 10, "\"min_m\": 5");
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc(gap)), Catch::Contains("contiguous"));
  std::string missing = good_row;
  missing.replace(missing.find("\"block_k\": 128, "), 16, "");
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc(missing)), Catch::Contains("block_k"));
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", R"({"arch": "sm_42", "profile": "p", "shapes": [], "rows": []})"),
                    Catch::Contains("sm_42"));
}

TEST_CASE("tuning: vLLM export has contiguous token ranges and block_size_m = block_m", "[tuning]") {
  char buffer[4096];
  int64_t length = chord_w4a16_tuning_json("sm_90a", 48, 4096, 7168, 8, buffer, sizeof buffer);
  REQUIRE(length > 0);
  REQUIRE(length < static_cast<int64_t>(sizeof buffer));
  auto rows = nlohmann::json::parse(std::string(buffer, static_cast<size_t>(length)));
  REQUIRE(rows.size() >= 3);
  int64_t next = 0;
  for (const auto& row : rows) {
    CHECK(row[0].get<int64_t>() == next);
    next = row[1].get<int64_t>() + 1;
    CHECK(row[2]["block_size_m"] == row[2]["block_m"]);
  }
  // Length query with no buffer, and a shape without a table.
  CHECK(chord_w4a16_tuning_json("sm_90a", 48, 4096, 7168, 8, nullptr, 0) == length);
  CHECK(chord_w4a16_tuning_json("sm_90a", 48, 1024, 1024, 8, buffer, sizeof buffer) == -1);
  CHECK(std::string(chord_last_error()).find("no tuning table") != std::string::npos);
}

TEST_CASE("tuning: engines - WGMMA for INT4 and NF4 prefill on sm_90a only; a thread per tile row",
          "[tuning]") {
  chord::W4A16Problem prefill = problem(4096, 7168, 512, chord::kW4A16Contiguous);
  CHECK(chord::resolve_w4a16_config(prefill).wgmma());
  chord::W4A16Problem decode = problem(4096, 7168, 4, chord::kW4A16Contiguous);
  CHECK_FALSE(chord::resolve_w4a16_config(decode).wgmma());
  chord::W4A16Problem a100 = prefill;
  a100.arch = chord::parse_arch("sm_80");
  CHECK_FALSE(chord::resolve_w4a16_config(a100).wgmma());
  chord::W4A16Problem blackwell = prefill;
  blackwell.arch = chord::parse_arch("sm_100a");
  CHECK_FALSE(chord::resolve_w4a16_config(blackwell).wgmma());

  chord::W4A16Problem nf4 = problem(1536, 2048, 512, chord::kW4A16Offsets);
  nf4.weight = chord::kW4A16WeightNF4;
  chord::W4A16GemmConfig c = chord::resolve_w4a16_config(nf4);
  CHECK(c.wgmma());
  CHECK(c.weight == chord::kW4A16WeightNF4);
  CHECK(c.block_m == 128);
  CHECK(c.error() == nullptr);
  chord::W4A16Problem nf4_a100 = nf4;
  nf4_a100.arch = chord::parse_arch("sm_80");
  CHECK_FALSE(chord::resolve_w4a16_config(nf4_a100).wgmma());
  chord::W4A16Problem nf4_decode = problem(1536, 2048, 4, chord::kW4A16Offsets);
  nf4_decode.weight = chord::kW4A16WeightNF4Fp16;
  CHECK_FALSE(chord::resolve_w4a16_config(nf4_decode).wgmma());

  // Narrow N: BN16 with one warp along N would leave rows of a BM128 tile without a thread.
  for (auto weight : {chord::kW4A16WeightInt4, chord::kW4A16WeightNF4}) {
    chord::W4A16Problem narrow = problem(48, 384, 300, chord::kW4A16Offsets);
    narrow.weight = weight;
    chord::W4A16GemmConfig n = chord::resolve_w4a16_config(narrow);
    CHECK(n.error() == nullptr);
    CHECK((n.wgmma() || n.threads() >= n.block_m));
  }
}
