// Tuning tables: embedded tables are valid, their splits are recognised from (N, K), the
// resolver follows table -> heuristic -> env, and the vLLM export is consistent.
#include <algorithm>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "chord/chord.h"
#include "core/arch.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/model_shapes.hpp"
#include "precompile/kernel_sets.hpp"
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

TEST_CASE("tuning: every embedded table parses and covers all row counts for both weight kinds", "[tuning]") {
  const auto& tables = chord::tuning_tables();
  REQUIRE(tables.size() >= 3);
  for (const auto& t : tables) {
    for (const bool nf4 : {false, true}) {
      CHECK(t.range_row_for(0, nf4) != nullptr);
      CHECK(t.range_row_for(1000000, nf4) != nullptr);
    }
    for (const auto& row : t.rows) {
      CHECK_FALSE(row.measured.empty());
      // Provenance points at the results of the last full bench run, or says it is not there.
      CHECK(row.measured.find("docs/bench_h200.json") != std::string::npos);
    }
  }
}

TEST_CASE("tuning: a table's split is recognised from N and K", "[tuning]") {
  CHECK(chord::detect_split(kSm90a, 4096, 7168) == "ep8");
  CHECK(chord::detect_split(kSm90a, 7168, 2048) == "ep8");
  CHECK(chord::detect_split(kSm90a, 512, 7168) == "tp8");
  CHECK(chord::detect_split(kSm90a, 7168, 256) == "tp8");
  CHECK(chord::detect_split(kSm90a, 1536, 2048) == "qwen3");
  CHECK(chord::detect_split(kSm90a, 1024, 1024).empty());
  CHECK(chord::detect_split(chord::parse_arch("sm_80"), 4096, 7168).empty());
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
    return R"({"arch": "sm_90a", "split": "ep8", "rows": [)" + rows + "]}";
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
  std::string routing = good_row;  // the vLLM routing block must be a multiple of block_m
  routing.replace(routing.find("\"measured\""), 10, "\"routing_block\": 12, \"measured\"");
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc(routing)), Catch::Contains("routing_block 12"));
  std::string missing = good_row;
  missing.replace(missing.find("\"block_k\": 128, "), 16, "");
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc(missing)), Catch::Contains("block_k"));
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", R"({"arch": "sm_42", "split": "ep8", "rows": []})"),
                    Catch::Contains("sm_42"));
  // A row holds only the known fields; its provenance is one line.
  auto with = [&](const std::string& fields) {
    std::string row = good_row;
    row.replace(row.find("\"measured\""), 10, fields + ", \"measured\"");
    return doc(row);
  };
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", with(R"("block_size": 8)")),
                    Catch::Contains("row 0: unknown field 'block_size'"));
  std::string extra = doc(good_row);
  extra.replace(extra.find("\"rows\""), 6, "\"int4_warp_specialized\": {}, \"rows\"");
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", extra), Catch::Contains("unknown field 'int4_warp_specialized'"));
  std::string two_lines = good_row;
  two_lines.replace(two_lines.find("\"x\""), 3, "\"x\\ny\"");
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc(two_lines)), Catch::Contains("one line"));
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", with(R"("weight": "int3")")), Catch::Contains("int3"));
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", with(R"("mode": "grouped")")), Catch::Contains("grouped"));
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", with(R"("engine": "tcgen05")")), Catch::Contains("tcgen05"));
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", with(R"("n": 4096)")), Catch::Contains("'n' and 'k'"));
  // An integer past int's range is refused, not wrapped (4294967304 would read as 8).
  std::string wide = good_row;
  wide.replace(wide.find("\"block_m\": 8"), 12, "\"block_m\": 4294967304");
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc(wide)), Catch::Contains("'block_m' is out of range"));
  // Deep nesting is refused while parsing (reading it back would recurse once per level).
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  std::string nested = good_row;
  nested.replace(nested.find("\"x\""), 3, deep);
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc(nested)), Catch::Contains("nested deeper than"));
  // A key given twice in one row is refused (the parser would keep the last: block_m 8 here).
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", with(R"("block_m": 128)")),
                    Catch::Contains("the key 'block_m' appears twice"));
  // The same key in two rows is not a duplicate.
  std::string second = good_row;
  second.replace(second.find("\"max_m\": 99"), 11, "\"max_m\": 999");
  second.replace(second.find("\"min_m\": 0"), 10, "\"min_m\": 100");
  CHECK_NOTHROW(chord::parse_tuning_table("t.json", doc(good_row + ", " + second)));
}

TEST_CASE("tuning: every config fits the shared memory one CTA may take on its arch", "[tuning]") {
  // 99 KiB per CTA on sm_86 / sm_89 / sm_120: the NF4 prefill tile takes 3 stages there, 4 elsewhere.
  for (const char* const* name = chord::supported_arch_names(); *name != nullptr; ++name) {
    const char* arch = *name;
    for (chord::W4A16WeightKind weight : {chord::kW4A16WeightInt4, chord::kW4A16WeightNF4, chord::kW4A16WeightInt4Zp,
                                          chord::kW4A16WeightInt4G128, chord::kW4A16WeightNF4Fp16}) {
      for (int64_t rows : {1, 8, 16, 64, 512, 4096}) {
        for (chord::W4A16Mode mode : {chord::kW4A16Contiguous, chord::kW4A16Masked, chord::kW4A16Offsets,
                                      chord::kW4A16Indexed}) {
          chord::W4A16Problem p;
          p.arch = chord::parse_arch(arch);
          p.mode = mode;
          p.weight = weight;
          p.n = 4096;
          p.k = 7168;
          p.experts = 48;
          p.rows_per_expert = rows;
          p.block_size = 64;
          const chord::W4A16GemmConfig c = chord::resolve_w4a16_config(p);
          INFO(arch << " weight " << weight << " rows " << rows << " mode " << mode);
          CHECK(c.smem_bytes() <= chord::max_shared_bytes_per_block(p.arch));
        }
      }
    }
  }
  CHECK(chord::max_shared_bytes_per_block(chord::parse_arch("sm_86")) == 99 * 1024);
  CHECK(chord::max_shared_bytes_per_block(chord::parse_arch("sm_90a")) == 227 * 1024);
}

TEST_CASE("tuning: weight rows are validated as their weight kind runs them, each kind covering every count",
          "[tuning]") {
  const std::string int4 =
      R"({"min_m": 0, "max_m": 99, "weight": "int4", "block_m": 8, "block_n": 128, "block_k": 128, "stages": 3, "warps_m": 1, "warps_n": 4, "measured": "x"})";
  auto nf4 = [](const std::string& tile, const std::string& range = R"("min_m": 0, "max_m": 99)") {
    return "{" + range + R"(, "weight": "nf4", "block_m": 8, )" + tile + R"(, "warps_m": 1, "measured": "y"})";
  };
  auto doc = [](const std::string& rows) {
    return R"({"arch": "sm_90a", "split": "ep8", "rows": [)" + rows + "]}";
  };
  const chord::TuningTable t = chord::parse_tuning_table(
      "t.json", doc(int4 + ", " + nf4(R"("block_n": 256, "block_k": 128, "stages": 3, "warps_n": 8)")));
  REQUIRE(t.range_row_for(5, true) != nullptr);
  CHECK(t.range_row_for(5, true)->config.block_n == 256);
  CHECK(t.range_row_for(5, true)->config.warps_n == 8);
  CHECK(t.range_row_for(5, false)->config.block_n == 128);
  CHECK(t.range_row_for(100, false) == nullptr);
  // NF4 has no range row: rejected; its range rows end where the INT4 ones do.
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc(int4)), Catch::Contains("no range row for NF4"));
  CHECK_THROWS_WITH(chord::parse_tuning_table(
                        "t.json", doc(int4 + ", " + nf4(R"("block_n": 256, "block_k": 128, "stages": 3, "warps_n": 8)",
                                                         R"("min_m": 0, "max_m": 98)"))),
                    Catch::Contains("the INT4 range rows end at 99, the NF4 ones at 98"));
  // 5 stages of BM8 BN256 BK256 fit without the pair table (200 KiB), not with it.
  CHECK_THROWS_WITH(chord::parse_tuning_table(
                        "t.json", doc(int4 + ", " + nf4(R"("block_n": 256, "block_k": 256, "stages": 5, "warps_n": 8)"))),
                    Catch::Contains("row 1 (NF4 weights): shared memory exceeds 227 KiB"));
  CHECK_THROWS_WITH(chord::parse_tuning_table(
                        "t.json", doc(int4 + ", " + nf4(R"("block_n": 256, "block_k": 128, "stages": 3, "warps_n": 3)"))),
                    Catch::Contains("BLOCK_N / WARPS_N"));
  // The vLLM routing block belongs to the INT4 range rows.
  CHECK_THROWS_WITH(chord::parse_tuning_table(
                        "t.json", doc(int4 + ", " + nf4(R"("block_n": 256, "block_k": 128, "stages": 3, "warps_n": 8, "routing_block": 8)"))),
                    Catch::Contains("only a range row that INT4 calls take names a routing_block"));
}

TEST_CASE("tuning: refinement rows name a table shape, span their range rows and keep the routing block",
          "[tuning]") {
  const std::string head =
      R"({"min_m": 0, "max_m": 99, "block_m": 16, "block_n": 128, "block_k": 128, "stages": 3, "warps_m": 1, "warps_n": 4, "measured": "x"})";
  const std::string prefill =
      R"({"min_m": 100, "max_m": 1000, "engine": "wgmma", "block_m": 128, "block_n": 128, "block_k": 64, "stages": 5, "warps_m": 1, "warps_n": 4, "measured": "x"})";
  auto doc = [&](const std::string& before, const std::string& after = "") {
    return R"({"arch": "sm_90a", "split": "ep8", "rows": [)" +
           before + (before.empty() ? "" : ", ") + head + ", " + prefill + (after.empty() ? "" : ", ") + after + "]}";
  };
  auto shape_row = [](const std::string& fields) {
    return R"({"min_m": 0, "max_m": 99, "weight": "int4", "n": 7168, "k": 2048, "block_n": 128, "block_k": 128, "stages": 3, "warps_m": 1, "warps_n": 4, )" +
           fields + R"(, "measured": "y"})";
  };
  const chord::TuningTable t = chord::parse_tuning_table("t.json", doc(shape_row(R"("block_m": 8)")));
  CHECK(t.int4_config(*t.range_row_for(5, false), 7168, 2048).block_m == 8);
  CHECK(t.int4_config(*t.range_row_for(5, false), 4096, 7168).block_m == 16);
  CHECK(t.int4_config(*t.range_row_for(500, false), 7168, 2048).block_m == 128);
  std::string other_shape = shape_row(R"("block_m": 8)");
  other_shape.replace(other_shape.find("\"n\": 7168"), 9, "\"n\": 512");
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc(other_shape)),
                    Catch::Contains("row 0") && Catch::Contains("not one of the table's shapes"));
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc(shape_row(R"("block_m": 32)"))),
                    Catch::Contains("block_m 32 must divide the routing_block 16 of row 1"));
  std::string part = shape_row(R"("block_m": 8)");
  part.replace(part.find("\"max_m\": 99"), 11, "\"max_m\": 50");
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc(part)), Catch::Contains("must span whole INT4 range rows"));
  std::string bad_k = shape_row(R"("block_m": 8)");
  bad_k.replace(bad_k.find("\"block_k\": 128"), 14, "\"block_k\": 96");
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc(bad_k)), Catch::Contains("row 0"));
  // A warp-specialized row promotes the BM128 WGMMA range rows after it, from its own rows per
  // expert on, for the calls it names.
  const std::string ws =
      R"({"min_m": 300, "mode": "indexed", "weight": "int4", "min_k": 768, "engine": "wgmma_ws", "block_m": 128, "block_n": 256, "block_k": 64, "stages": 6, "warps_m": 1, "warps_n": 4, "measured": "z"})";
  const chord::TuningTable w = chord::parse_tuning_table("t.json", doc(ws));
  CHECK(w.rows[0].config.warp_specialized());
  CHECK(w.rows[0].applies(300, false, chord::kW4A16Indexed, 4096, 7168));
  CHECK_FALSE(w.rows[0].applies(299, false, chord::kW4A16Indexed, 4096, 7168));
  CHECK_FALSE(w.rows[0].applies(300, false, chord::kW4A16Masked, 4096, 7168));
  CHECK_FALSE(w.rows[0].applies(300, true, chord::kW4A16Indexed, 4096, 7168));
  CHECK_FALSE(w.rows[0].applies(300, false, chord::kW4A16Indexed, 7168, 256));
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc("", ws)),
                    Catch::Contains("a wgmma_ws row promotes the BM128 wgmma range rows listed after it"));
  std::string low = ws;
  low.replace(low.find("\"min_m\": 300"), 12, "\"min_m\": 50");
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc(low)), Catch::Contains("routing_block 16 of row 1"));
  std::string bad_ws = ws;
  bad_ws.replace(bad_ws.find("\"stages\": 6"), 11, "\"stages\": 2");
  CHECK_THROWS_WITH(chord::parse_tuning_table("t.json", doc(bad_ws)), Catch::Contains("row 0"));
}

TEST_CASE("tuning: the EP8 table's rows for the indexed block and the down shape are taken where they apply",
          "[tuning]") {
  // The EP8 table: T=1024-like indexed down (hint 170, vLLM block 64) takes its fallback; the
  // same call with block 128 keeps the BM128 row, gate_up and NF4 keep the engine's defaults.
  chord::W4A16Problem down = problem(7168, 2048, 170, chord::kW4A16Indexed);
  chord::W4A16GemmConfig c = chord::resolve_w4a16_config(down);
  CHECK((c.engine == chord::W4A16Engine::kWgmma && c.block_m == 64 && c.block_n == 256 && c.stages == 4));
  down.block_size = 128;
  c = chord::resolve_w4a16_config(down);
  CHECK((c.block_m == 128 && c.block_n == 128 && c.stages == 5));
  chord::W4A16Problem up = problem(4096, 7168, 170, chord::kW4A16Indexed);
  c = chord::resolve_w4a16_config(up);
  CHECK((c.engine == chord::W4A16Engine::kWgmma && c.block_m == 64 && c.block_n == 128 && c.stages == 5));
  chord::W4A16Problem nf4 = problem(7168, 2048, 170, chord::kW4A16Indexed);
  nf4.weight = chord::kW4A16WeightNF4;
  CHECK(chord::resolve_w4a16_config(nf4).block_n == 128);
  // A masked call on the same row count is not indexed: no fallback.
  CHECK(chord::resolve_w4a16_config(problem(7168, 2048, 170)).block_m == 128);
}

TEST_CASE("tuning: a row for one shape is taken for that shape and INT4 only", "[tuning]") {
  // The EP8 decode row at <= 4 rows per expert: down (N 7168, K 2048) on 8-token tiles,
  // gate_up on the row's 16; both divide the routing block the vLLM export names (16).
  for (auto mode : {chord::kW4A16Indexed, chord::kW4A16Masked}) {
    chord::W4A16Problem down = problem(7168, 2048, 3, mode);
    down.block_size = 16;
    chord::W4A16Problem up = problem(4096, 7168, 3, mode);
    up.block_size = 16;
    CHECK(chord::resolve_w4a16_config(down).block_m == 8);
    CHECK(chord::resolve_w4a16_config(up).block_m == 16);
    down.rows_per_expert = 5;  // the next row: no override
    CHECK(chord::resolve_w4a16_config(down).block_m == 16);
    down.rows_per_expert = 3;
    down.weight = chord::kW4A16WeightNF4;  // overrides are INT4 configs
    CHECK(chord::resolve_w4a16_config(down).block_m == 16);
  }
}

TEST_CASE("tuning: NF4 decode on Qwen3 shapes takes the row's NF4 config, INT4 the row's own", "[tuning]") {
  // Rows per expert 1, 8 and 16: the table's BM8, BM16 and BM32 rows.
  for (auto [rows, bm] : {std::pair<int, int>{1, 8}, {8, 16}, {16, 32}})
  for (int n : {1536, 2048}) {
    chord::W4A16Problem p = problem(n, n == 1536 ? 2048 : 768, rows, chord::kW4A16Offsets);
    p.experts = 128;
    const chord::W4A16GemmConfig int4 = chord::resolve_w4a16_config(p);
    p.weight = chord::kW4A16WeightNF4;
    const chord::W4A16GemmConfig nf4 = chord::resolve_w4a16_config(p);
    INFO("rows per expert " << rows << ", N " << n);
    CHECK(int4.block_m == bm);
    CHECK(int4.block_n == 128);
    CHECK(int4.warps_n == 4);
    CHECK(nf4.block_m == int4.block_m);
    CHECK(nf4.block_n == 256);
    CHECK(nf4.warps_n == 8);
    CHECK(nf4.threads() == 256);
    CHECK(nf4.weight == chord::kW4A16WeightNF4);
    CHECK(nf4.error() == nullptr);
  }
}

TEST_CASE("tuning: candidates come best first, each rejected with its reason, the best taken", "[tuning]") {
  // EP8 indexed down at a T=1024-like hint with vLLM's 64-row block: the BM128 row cannot serve
  // the block, the table's next row for the shape can.
  chord::W4A16Problem down = problem(7168, 2048, 170, chord::kW4A16Indexed);
  const std::vector<chord::W4A16Candidate> list = chord::w4a16_candidates(down);
  REQUIRE(list.size() == 4);
  CHECK(chord::w4a16_candidate_source(list[0]) == "sm90a_ep8.json row 6");
  CHECK(std::string(list[0].rejected) == "BLOCK_M does not divide the routing block");
  CHECK(chord::w4a16_candidate_source(list[1]) == "sm90a_ep8.json row 7");
  CHECK(list[1].rejected == nullptr);
  CHECK(chord::w4a16_candidate_source(list[2]) == "WGMMA defaults");
  CHECK(chord::w4a16_candidate_source(list[3]) == "heuristic");
  const chord::W4A16GemmConfig c = chord::resolve_w4a16_config(down);
  CHECK((c.engine == list[1].config.engine && c.block_m == 64 && c.block_n == 256 && c.stages == 4));
  // Prefill past the warp-specialized bar: the promotion ranks right before the tile it promotes;
  // N not a multiple of 256 rejects it.
  chord::W4A16Problem prefill = problem(4096, 7168, 512, chord::kW4A16Contiguous);
  std::vector<chord::W4A16Candidate> p = chord::w4a16_candidates(prefill);
  REQUIRE(p.size() >= 2);
  CHECK(chord::w4a16_candidate_source(p[0]) == "warp-specialized tile of sm90a_ep8.json row 6");
  CHECK(p[0].promotion());
  CHECK(chord::resolve_w4a16_config(prefill).warp_specialized());
  prefill.n = 4096 + 128;  // no table: the WGMMA defaults and their promotion
  p = chord::w4a16_candidates(prefill);
  REQUIRE(p.size() == 3);
  CHECK(chord::w4a16_candidate_source(p[0]) == "warp-specialized tile of the WGMMA defaults");
  CHECK(std::string(p[0].rejected) == "N must be a positive multiple of BLOCK_N");
  CHECK(chord::resolve_w4a16_config(prefill).engine == chord::W4A16Engine::kWgmma);
  // No WGMMA before sm_90a: the heuristic serves.
  prefill.arch = chord::parse_arch("sm_80");
  p = chord::w4a16_candidates(prefill);
  CHECK(std::string(p[0].rejected) == "the WGMMA kernels need sm_90a");
  CHECK(p.back().rejected == nullptr);
  CHECK_FALSE(chord::resolve_w4a16_config(prefill).wgmma());
}

TEST_CASE("tuning: masked and offsets INT4 calls of 11-64 rows per expert take the narrowest WGMMA tile "
          "that holds 1.5x the hint, BN256 where the grid holds two CTAs per SM, and indexed calls on blocks of 32",
          "[tuning]") {
  auto tile = [](chord::W4A16Problem p) {
    const chord::W4A16GemmConfig c = chord::resolve_w4a16_config(p);
    return std::make_tuple(c.engine, c.block_m, c.block_n);
  };
  const auto wgmma = chord::W4A16Engine::kWgmma;
  // Masked EP8 gate_up, 48 groups: 48 x N / 256 = 768 expected CTAs at BN256.
  chord::W4A16Problem p = problem(4096, 7168, 16);
  p.num_groups = 48;
  p.max_m = 32;
  CHECK(tile(p) == std::make_tuple(wgmma, 32, 256));
  const std::vector<chord::W4A16Candidate> list = chord::w4a16_candidates(p);
  CHECK(chord::w4a16_candidate_source(list.front()) == "narrow WGMMA tile");
  p.rows_per_expert = 32;  // 48 rows: BM48
  CHECK(tile(p) == std::make_tuple(wgmma, 48, 256));
  p.rows_per_expert = 64;  // 96 rows: BM96, whose two m64 tiles per warpgroup would serialize at BN256
  CHECK(tile(p) == std::make_tuple(wgmma, 96, 128));
  p.rows_per_expert = 65;  // past 96 rows: the table's BM128
  CHECK(tile(p) == std::make_tuple(wgmma, 128, 128));
  p.rows_per_expert = 10;  // 15 rows: the mma.sync decode tiles
  CHECK(std::get<0>(tile(p)) == chord::W4A16Engine::kMmaSync);
  // 12 groups of N 4096: 192 CTAs at BN256 would leave half the CTA slots empty.
  p.num_groups = 12;
  p.rows_per_expert = 32;
  CHECK(tile(p) == std::make_tuple(wgmma, 48, 128));
  // Offsets: the rows over the experts they can reach (Qwen3 T=512 gate_up).
  chord::W4A16Problem o = problem(1536, 2048, 32, chord::kW4A16Offsets);
  o.experts = 128;
  o.a_rows = 4096;
  CHECK(tile(o) == std::make_tuple(wgmma, 48, 256));
  // Indexed: only on a routing block of 32 (a block is one expert's rows), up to 32 rows.
  chord::W4A16Problem idx = problem(4096, 7168, 21, chord::kW4A16Indexed);
  idx.a_rows = 128;
  idx.top_k = 8;
  idx.block_size = 32;
  CHECK(tile(idx) == std::make_tuple(wgmma, 32, 256));
  CHECK(chord::w4a16_candidate_source(chord::w4a16_candidates(idx).front()) == "narrow WGMMA tile");
  idx.block_size = 64;  // the tables' and the WGMMA defaults' BM64 (TP8 1024 tokens: 206 us against 251)
  CHECK(chord::w4a16_candidate_source(chord::w4a16_candidates(idx).front()) != "narrow WGMMA tile");
  idx.block_size = 16;
  CHECK(tile(idx) == std::make_tuple(chord::W4A16Engine::kMmaSync, 16, 128));
  idx.block_size = 32;
  idx.rows_per_expert = 22;  // 33 rows: past the block
  CHECK(std::get<0>(tile(idx)) == chord::W4A16Engine::kMmaSync);
  idx.rows_per_expert = 10;  // 15 rows: the mma.sync decode tiles
  CHECK(std::get<0>(tile(idx)) == chord::W4A16Engine::kMmaSync);
  // Not for NF4, contiguous calls, or GPUs without WGMMA.
  p.num_groups = 48;
  p.rows_per_expert = 16;
  p.weight = chord::kW4A16WeightNF4;
  CHECK(chord::w4a16_candidate_source(chord::w4a16_candidates(p).front()) != "narrow WGMMA tile");
  p.weight = chord::kW4A16WeightInt4Zp;
  CHECK(tile(p) == std::make_tuple(wgmma, 32, 256));
  chord::W4A16Problem c = problem(4096, 7168, 16, chord::kW4A16Contiguous);
  CHECK(chord::w4a16_candidate_source(chord::w4a16_candidates(c).front()) != "narrow WGMMA tile");
  p.arch = chord::parse_arch("sm_80");
  CHECK_FALSE(chord::resolve_w4a16_config(p).wgmma());
}

TEST_CASE("tuning: vLLM export has contiguous token ranges and block_size_m a multiple of block_m", "[tuning]") {
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
    // The kernel's BLOCK_M divides the routing block (for both projections).
    CHECK(row[2]["block_size_m"].get<int>() % row[2]["block_m"].get<int>() == 0);
  }
  // EP8: decode rows align to their tile (the down override's 8-token tile divides it); the
  // 11-42 rows per expert tier to 64 (skew).
  CHECK(rows[0][2]["block_size_m"] == 16);
  CHECK(rows[0][2]["block_m"] == 16);
  CHECK(rows[3][2]["block_size_m"] == 64);
  CHECK(rows[3][2]["block_m"] == 32);
  // The down shape's export names its own tile (the override), with the same routing block.
  char down_buffer[4096];
  const int64_t down_length = chord_w4a16_tuning_json("sm_90a", 48, 7168, 2048, 8, down_buffer, sizeof down_buffer);
  REQUIRE(down_length > 0);
  auto down_rows = nlohmann::json::parse(std::string(down_buffer, static_cast<size_t>(down_length)));
  REQUIRE(down_rows.size() == rows.size());
  CHECK(down_rows[0][2]["block_m"] == 8);
  CHECK(down_rows[0][2]["block_size_m"] == rows[0][2]["block_size_m"]);
  CHECK(down_rows[1][2]["block_m"] == 16);
  // Length query with no buffer, and a shape without a table.
  CHECK(chord_w4a16_tuning_json("sm_90a", 48, 4096, 7168, 8, nullptr, 0) == length);
  // No table for the shape: an empty answer (0), not an error; bad arguments are -1.
  CHECK(chord_w4a16_tuning_json("sm_90a", 48, 1024, 1024, 8, buffer, sizeof buffer) == 0);
  CHECK(std::string(buffer).empty());
  CHECK(chord_w4a16_tuning_json("sm_90a", 48, 1024, 1024, 0, buffer, sizeof buffer) == -1);
}

TEST_CASE("tuning: engines - WGMMA for INT4 and NF4 prefill on sm_90a only, a thread per tile row",
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
  // NF4 prefill runs the warp-specialized kernel, 256 weight rows per CTA, one CTA per SM.
  CHECK(c.warp_specialized());
  CHECK(c.block_n == 256);
  CHECK(c.threads() == 384);
  CHECK(c.smem_bytes() <= 227 * 1024);
  CHECK(c.smem_bytes() > chord::w4a16_wgmma_ws_smem_bytes(c.block_m, c.block_n, c.stages, false));  // the table is counted
  // INT4 prefill too from K = 768 on (6 stages: no pair table); at K = 256 (TP8 down) the
  // one-role kernel at two CTAs per SM.
  chord::W4A16Problem int4 = nf4;
  int4.weight = chord::kW4A16WeightInt4;
  const chord::W4A16GemmConfig int4_ws = chord::resolve_w4a16_config(int4);
  CHECK(int4_ws.warp_specialized());
  CHECK(int4_ws.block_n == 256);
  CHECK(int4_ws.stages == 6);
  CHECK(int4_ws.error() == nullptr);
  chord::W4A16Problem int4_short_k = problem(7168, 256, 384, chord::kW4A16Contiguous);
  const chord::W4A16GemmConfig short_k = chord::resolve_w4a16_config(int4_short_k);
  CHECK(short_k.wgmma());
  CHECK_FALSE(short_k.warp_specialized());
  chord::W4A16Problem int4_k512 = int4;
  int4_k512.k = 512;
  CHECK_FALSE(chord::resolve_w4a16_config(int4_k512).warp_specialized());
  // ... and only from 512 expected rows per expert, for the indexed hint (it counts the routes
  // to other ranks' experts too) 2048, 1024 where K <= 2048.
  chord::W4A16Problem int4_256 = int4;
  int4_256.rows_per_expert = 256;
  CHECK(chord::resolve_w4a16_config(int4_256).wgmma());
  CHECK_FALSE(chord::resolve_w4a16_config(int4_256).warp_specialized());
  chord::W4A16Problem indexed = problem(4096, 7168, 683, chord::kW4A16Indexed);
  indexed.block_size = 128;
  CHECK(chord::resolve_w4a16_config(indexed).wgmma());
  CHECK_FALSE(chord::resolve_w4a16_config(indexed).warp_specialized());
  indexed.rows_per_expert = 1365;  // EP8 T=8192: gate_up (K 7168) stays one-role
  CHECK_FALSE(chord::resolve_w4a16_config(indexed).warp_specialized());
  indexed.rows_per_expert = 2731;
  CHECK(chord::resolve_w4a16_config(indexed).warp_specialized());
  chord::W4A16Problem indexed_down = problem(7168, 2048, 1023, chord::kW4A16Indexed);  // K 2048
  indexed_down.block_size = 128;
  CHECK_FALSE(chord::resolve_w4a16_config(indexed_down).warp_specialized());
  indexed_down.rows_per_expert = 1024;
  CHECK(chord::resolve_w4a16_config(indexed_down).warp_specialized());
  indexed_down.k = 2048 + 256;
  CHECK_FALSE(chord::resolve_w4a16_config(indexed_down).warp_specialized());
  // TP8 (every expert local, so the indexed hint is the real mean): its table's own bar, 170
  // rows (T=8192).
  chord::W4A16Problem tp8 = problem(512, 7168, 170, chord::kW4A16Indexed);
  tp8.experts = 384;
  tp8.block_size = 128;
  REQUIRE(chord::find_tuning_table(kSm90a, "tp8") != nullptr);
  CHECK(chord::resolve_w4a16_config(tp8).warp_specialized());
  tp8.rows_per_expert = 169;
  CHECK(chord::resolve_w4a16_config(tp8).wgmma());
  CHECK_FALSE(chord::resolve_w4a16_config(tp8).warp_specialized());
  // The down shape (K 256, below the resolver's K bar) by the table's entry for it: 4 stages
  // from 53 rows per expert (T=2560), indexed calls only.
  chord::W4A16Problem tp8_down = problem(7168, 256, 53, chord::kW4A16Indexed);
  tp8_down.experts = 384;
  tp8_down.block_size = 128;
  const chord::W4A16GemmConfig down_ws = chord::resolve_w4a16_config(tp8_down);
  CHECK(down_ws.warp_specialized());
  CHECK(down_ws.block_n == 256);
  CHECK(down_ws.stages == 4);
  tp8_down.rows_per_expert = 52;
  CHECK(chord::resolve_w4a16_config(tp8_down).wgmma());
  CHECK_FALSE(chord::resolve_w4a16_config(tp8_down).warp_specialized());
  tp8_down.rows_per_expert = 1024;
  tp8_down.mode = chord::kW4A16Contiguous;
  CHECK(chord::resolve_w4a16_config(tp8_down).wgmma());
  CHECK_FALSE(chord::resolve_w4a16_config(tp8_down).warp_specialized());
  // EP8 names no warp-specialized row: its indexed prefill takes the built-in bar (2048 rows at
  // gate_up's K).
  chord::W4A16Problem ep8_up = problem(4096, 7168, 2047, chord::kW4A16Indexed);
  ep8_up.block_size = 128;
  CHECK_FALSE(chord::resolve_w4a16_config(ep8_up).warp_specialized());
  ep8_up.rows_per_expert = 2048;
  CHECK(chord::resolve_w4a16_config(ep8_up).warp_specialized());
  // N not a multiple of 256: the one-role kernel, whose 16 KiB pair table must not cost the
  // tile its second CTA per SM (228 KiB, 1 KiB each).
  chord::W4A16Problem nf4_n128 = nf4;
  nf4_n128.n = 1536 + 128;
  const chord::W4A16GemmConfig one_role = chord::resolve_w4a16_config(nf4_n128);
  CHECK(one_role.wgmma());
  CHECK_FALSE(one_role.warp_specialized());
  CHECK(2 * (one_role.smem_bytes() + 1024) <= 228 * 1024);
  CHECK(one_role.smem_bytes() >
        chord::w4a16_wgmma_smem_bytes(one_role.block_m, one_role.block_n, one_role.stages));  // the table
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

TEST_CASE("tuning: split-K only where the decode grid leaves SMs idle, only with clusters", "[tuning]") {
  // Qwen3 gate_up at 1 token: 8 routed rows over 128 experts -> at most 8 tiles x N/BN.
  chord::W4A16Problem one = problem(1536, 2048, 1, chord::kW4A16Offsets);
  one.experts = 128;
  one.a_rows = 8;
  const chord::W4A16GemmConfig c = chord::resolve_w4a16_config(one);
  CHECK_FALSE(c.wgmma());
  CHECK(c.split_k > 1);
  CHECK(c.error() == nullptr);
  const long long ctas = chord::w4a16_m_tiles(one.mode, c.block_m, one.a_rows, one.experts, 0, 0, 0) *
                         (one.n / c.block_n) * c.split_k;
  CHECK(ctas <= 2LL * one.sm_count);  // the split never makes more than two CTAs per SM
  CHECK(one.k / c.split_k >= 1024);
  // NF4's 256-row tile leaves half the CTAs: the grid would allow split 4, K stops it at 2
  // (1024 of K per split; 512 measured slower).
  chord::W4A16Problem one_nf4 = one;
  one_nf4.weight = chord::kW4A16WeightNF4;
  CHECK(chord::resolve_w4a16_config(one_nf4).block_n == 256);
  CHECK(chord::resolve_w4a16_config(one_nf4).split_k == 2);
  // Down at 1 token (K 768: 6 k blocks of 128) stays whole.
  chord::W4A16Problem down = one;
  down.n = 2048;
  down.k = 768;
  CHECK(chord::resolve_w4a16_config(down).split_k == 1);
  // The descriptor names the split (its own cache entry) and launches clusters of that size.
  const chord::KernelDescriptor d = c.descriptor(kSm90a);
  CHECK(chord::W4A16GemmConfig::from(d).split_k == c.split_k);
  const chord::KernelSource src = c.source();
  CHECK(src.name.find("_sk" + std::to_string(c.split_k)) != std::string::npos);

  // No clusters before sm_90: never split, and a forced split is rejected by the descriptor.
  chord::W4A16Problem a100 = one;
  a100.arch = chord::parse_arch("sm_80");
  CHECK(chord::resolve_w4a16_config(a100).split_k == 1);
  chord::W4A16GemmConfig forced = chord::resolve_w4a16_config(a100);
  forced.split_k = 2;
  CHECK_THROWS_WITH(forced.descriptor(a100.arch), Catch::Contains("clusters"));

  // 8 tokens (64 rows, ~60 experts) already fill the GPU; so does a geometry-free problem.
  chord::W4A16Problem eight = one;
  eight.a_rows = 64;
  CHECK(chord::resolve_w4a16_config(eight).split_k == 1);
  chord::W4A16Problem unknown = problem(1536, 2048, 1, chord::kW4A16Offsets);
  CHECK(chord::resolve_w4a16_config(unknown).split_k == 1);

  // Without split-K the descriptor (and so the kernel cache key) is what it was before.
  chord::W4A16GemmConfig plain = c;
  plain.split_k = 1;
  CHECK(plain.descriptor(kSm90a).params[10] == 0);
  chord::W4A16GemmConfig bad = c;
  bad.split_k = 3;
  CHECK(std::string(bad.error()).find("split-K") != std::string::npos);
}

TEST_CASE("tuning: decode split-K counts the tiles the routed rows are expected to fill", "[tuning]") {
  // One token routed to one of 16 experts of 5120 x 8192 (a down projection under EP8): the
  // grid has a tile for every expert, but one expert streams weights. INT4 takes 64-row weight
  // tiles (80 CTAs) and splits K 4 ways (320 CTAs, under 3 per SM).
  auto one_token = [](int n, int k, int experts, int top_k) {
    chord::W4A16Problem p = problem(n, k, 1, chord::kW4A16Indexed);
    p.experts = experts;
    p.block_size = 16;
    p.a_rows = 1;
    p.top_k = top_k;
    p.capacity = top_k + experts * 15;  // vLLM's sorted_ids length
    return p;
  };
  chord::W4A16Problem one = one_token(5120, 8192, 16, 1);
  const chord::W4A16GemmConfig c = chord::resolve_w4a16_config(one);
  CHECK(c.block_m == 8);
  CHECK(c.block_n == 64);
  CHECK(c.split_k == 4);
  CHECK(c.error() == nullptr);
  // NF4 keeps its 128-row tile and its rule (the split grid within one CTA per SM): 40 -> 160.
  chord::W4A16Problem nf4 = one;
  nf4.weight = chord::kW4A16WeightNF4;
  const chord::W4A16GemmConfig n = chord::resolve_w4a16_config(nf4);
  CHECK(n.block_n == 128);
  CHECK(n.split_k == 4);
  // Without top_k the routed rows are unknown: the grid's tiles count (16 experts' worth of
  // tiles, 640 CTAs), so no split and the 128-row tile.
  chord::W4A16Problem unknown = one;
  unknown.top_k = 0;
  const chord::W4A16GemmConfig u = chord::resolve_w4a16_config(unknown);
  CHECK(u.block_n == 128);
  CHECK(u.split_k == 1);
  // Two routes of one token over 8 experts of 28672 x 4096: ~1.9 experts x 224 CTAs already
  // fill the GPU past 3 per SM: whole K, 128-row tiles.
  const chord::W4A16Problem wide = one_token(28672, 4096, 8, 2);
  const chord::W4A16GemmConfig w = chord::resolve_w4a16_config(wide);
  CHECK(w.block_n == 128);
  CHECK(w.split_k == 1);
  // A split never leaves a piece of K under 1024: K 2048 splits at most in two.
  chord::W4A16Problem short_k = one;
  short_k.k = 2048;
  CHECK(chord::resolve_w4a16_config(short_k).split_k == 2);
  // Masked calls count every group's expected rows: 48 groups x 1 tile x 4096 / 128 = 1536 CTAs.
  chord::W4A16Problem masked = problem(4096, 7168, 8, chord::kW4A16Masked);
  masked.num_groups = 48;
  masked.max_m = 16;
  CHECK(chord::resolve_w4a16_config(masked).split_k == 1);
}

TEST_CASE("tuning: offsets tiles are bounded by the rows and the experts that can hold them", "[tuning]") {
  CHECK(chord::w4a16_m_tiles(chord::kW4A16Offsets, 8, 8, 128, 0, 0, 0) == 8);      // 1 token x top-8
  CHECK(chord::w4a16_m_tiles(chord::kW4A16Offsets, 8, 64, 128, 0, 0, 0) == 64);    // 8 tokens
  CHECK(chord::w4a16_m_tiles(chord::kW4A16Offsets, 16, 512, 128, 0, 0, 0) == 160); // 32 + 128
  CHECK(chord::w4a16_m_tiles(chord::kW4A16Offsets, 128, 32768, 128, 0, 0, 0) == 384);
  CHECK(chord::w4a16_m_tiles(chord::kW4A16Offsets, 8, 0, 128, 0, 0, 0) == 0);
}

TEST_CASE("tuning: masked calls in a buffer over twice the hint's tiles leave the one-role WGMMA kernel for a kernel "
          "that takes the hint's tiles in turn: mma.sync's decode tile, the warp-specialized kernel above",
          "[tuning]") {
  // Masked EP8 gate_up, 48 groups of 16 expected rows: a tight buffer runs the narrow WGMMA tile.
  chord::W4A16Problem p = problem(4096, 7168, 16);
  p.num_groups = 48;
  p.max_m = 32;
  CHECK(chord::resolve_w4a16_config(p).engine == chord::W4A16Engine::kWgmma);
  p.max_m = 64;  // two BM32 tiles per group against 1.5: still the WGMMA tile
  CHECK(chord::resolve_w4a16_config(p).engine == chord::W4A16Engine::kWgmma);
  p.max_m = 2048;  // vLLM's EP8 batched buffer: 64 tiles per group
  const chord::W4A16GemmConfig c = chord::resolve_w4a16_config(p);
  CHECK(c.engine == chord::W4A16Engine::kMmaSync);
  const std::vector<chord::W4A16Candidate> list = chord::w4a16_candidates(p);
  REQUIRE(!list.empty());
  CHECK(chord::w4a16_candidate_source(list.front()) == "narrow WGMMA tile");
  CHECK_THAT(std::string(list.front().rejected ? list.front().rejected : ""), Catch::Contains("masked buffer"));
  // 32 and 64 rows per group: the narrow tile's height on the warp-specialized kernel, whose tile
  // loop takes the groups' non-empty tiles; in a tight buffer the one-role tile.
  p.rows_per_expert = 32;
  chord::W4A16GemmConfig narrow = chord::resolve_w4a16_config(p);
  CHECK(narrow.warp_specialized());
  CHECK(narrow.block_m == 48);
  CHECK(narrow.block_n == 256);  // 48 groups x 16 n blocks: over two tiles per SM
  CHECK(narrow.error() == nullptr);
  {
    const std::vector<chord::W4A16Candidate> both = chord::w4a16_candidates(p);
    REQUIRE(both.size() >= 2);
    CHECK(chord::w4a16_candidate_source(both[0]) == "narrow tile, warp-specialized (masked, large buffer)");
    CHECK(chord::w4a16_candidate_source(both[1]) == "narrow WGMMA tile");  // what CHORD_W4A16_ENGINE=wgmma gets
    CHECK(both[1].config.engine == chord::W4A16Engine::kWgmma);
  }
  p.rows_per_expert = 64;
  narrow = chord::resolve_w4a16_config(p);
  CHECK(narrow.warp_specialized());
  CHECK(narrow.block_m == 96);
  p.max_m = 96;
  CHECK(chord::resolve_w4a16_config(p).engine == chord::W4A16Engine::kWgmma);
  p.rows_per_expert = 32;
  p.max_m = 64;
  CHECK(chord::resolve_w4a16_config(p).engine == chord::W4A16Engine::kWgmma);
  // EP32 gate_up in vLLM's buffer: 12 groups x 16 n blocks of 256 leave SMs idle; BN128.
  p.num_groups = 12;
  p.max_m = 8192;
  narrow = chord::resolve_w4a16_config(p);
  CHECK(narrow.warp_specialized());
  CHECK(narrow.block_n == 128);
  p.num_groups = 48;
  // NF4 keeps its tiles (the warp-specialized kernel's shorter tiles are INT4's).
  p.weight = chord::kW4A16WeightNF4;
  CHECK(chord::resolve_w4a16_config(p).error() == nullptr);
  CHECK_FALSE(chord::resolve_w4a16_config(p).block_m == 48);
  p.weight = chord::kW4A16WeightInt4;
  // Over 64 rows per group (vLLM's throughput batches: 85 per expert at EP8) in vLLM's buffer: the
  // warp-specialized BM128 tile, whose CTAs take only the groups' non-empty tiles; in a tight
  // buffer the one-role tile (one tile per CTA over a buffer barely past the rows).
  for (int64_t rows : {65, 85, 128, 256}) {
    INFO(rows);
    p.rows_per_expert = rows;
    p.max_m = 2048;
    const chord::W4A16GemmConfig large = chord::resolve_w4a16_launch_config(p);
    CHECK(large.warp_specialized());
    CHECK(large.block_m == 128);
    CHECK(large.error() == nullptr);
    p.max_m = 2 * rows;
    CHECK(chord::resolve_w4a16_launch_config(p).engine == chord::W4A16Engine::kWgmma);
  }
  // Prefill-sized groups in a large buffer: the warp-specialized kernel loops over tiles itself.
  p.rows_per_expert = 1024;
  p.max_m = 8192;
  CHECK(chord::resolve_w4a16_config(p).warp_specialized());
}

TEST_CASE("tuning: off sm_90a, INT4 masked calls of 22-512 rows per group in a buffer over twice the hint's tiles "
          "run the looping BM64 tile of one warp along M, and a tight buffer keeps the 256-thread tile",
          "[tuning]") {
  for (const char* name : {"sm_80", "sm_100a"}) {
    INFO(name);
    // Masked EP8 gate_up in vLLM's batched buffer (2048 rows per group).
    chord::W4A16Problem p = problem(4096, 7168, 32);
    p.arch = chord::parse_arch(name);
    p.num_groups = 48;
    p.max_m = 2048;
    const std::vector<chord::KernelDescriptor> ep8 = chord::kernel_set_descriptors("ep8", p.arch);
    for (int64_t rows : {15, 22, 32, 64}) {
      INFO(rows);
      p.rows_per_expert = rows;
      const chord::W4A16GemmConfig c = chord::resolve_w4a16_launch_config(p);
      CHECK(c.engine == chord::W4A16Engine::kMmaSync);
      CHECK(c.masked_loop);  // the grid follows the hint
      CHECK(c.threads() == 128);
      CHECK(c.block_m == (rows <= 21 ? 32 : 64));
      CHECK(c.error() == nullptr);
      // The EP8 kernel set compiles it (its masked rows also in vLLM's buffer).
      if (rows == 32 || rows == 64) CHECK(std::find(ep8.begin(), ep8.end(), c.descriptor(p.arch)) != ep8.end());
    }
    // A tight buffer (twice the mean rows): the 256-thread tile, one tile per CTA.
    p.rows_per_expert = 32;
    p.max_m = 64;
    chord::W4A16GemmConfig tight = chord::resolve_w4a16_launch_config(p);
    CHECK(tight.block_m == 64);
    CHECK(tight.threads() == 256);
    CHECK_FALSE(tight.masked_loop);
    // 65-512 rows per group in vLLM's buffer: the same looping tile, several tiles per group; a
    // tight buffer keeps the 256-thread BM128 tile, and so do groups over 512 rows (not measured).
    for (int64_t rows : {65, 128, 512}) {
      INFO(rows);
      p.rows_per_expert = rows;
      p.max_m = 8192;
      const chord::W4A16GemmConfig large = chord::resolve_w4a16_launch_config(p);
      CHECK(large.block_m == 64);
      CHECK(large.threads() == 128);
      CHECK(large.masked_loop);
      p.max_m = 2 * rows;
      tight = chord::resolve_w4a16_launch_config(p);
      CHECK(tight.block_m == 128);
      CHECK_FALSE(tight.masked_loop);
    }
    p.rows_per_expert = 1024;
    p.max_m = 8192;
    tight = chord::resolve_w4a16_launch_config(p);
    CHECK(tight.block_m == 128);
    CHECK_FALSE(tight.masked_loop);
    // The other INT4 kinds take the same tile; NF4 keeps its own.
    p.rows_per_expert = 32;
    for (chord::W4A16WeightKind kind :
         {chord::kW4A16WeightInt4Fp16, chord::kW4A16WeightInt4Zp, chord::kW4A16WeightInt4G128}) {
      p.weight = kind;
      const chord::W4A16GemmConfig c = chord::resolve_w4a16_launch_config(p);
      CHECK(c.block_m == 64);
      CHECK(c.masked_loop);
    }
    p.weight = chord::kW4A16WeightNF4;
    CHECK_FALSE(chord::resolve_w4a16_launch_config(p).masked_loop);
  }
}

TEST_CASE("tuning: masked grids are sized by the hint's rows plus one tile per group, never past the buffer",
          "[tuning]") {
  using chord::w4a16_masked_tiles;
  // vLLM's EP8 batched buffer (2048 rows per group) holding 8 rows per group over 32 groups:
  // 32 x 8 / 16 + 32 tiles, not the buffer's 32 x 128.
  CHECK(w4a16_masked_tiles(16, 32, 2048, 8) == 48);
  CHECK(chord::w4a16_m_tiles(chord::kW4A16Masked, 16, 0, 32, 32, 2048, 0, 8) == 48);
  CHECK(w4a16_masked_tiles(16, 32, 2048, 0) == 32 * 128);   // no hint: the buffer's tiles
  CHECK(w4a16_masked_tiles(16, 32, 2048, -3) == 32 * 128);
  CHECK(w4a16_masked_tiles(16, 32, 16, 8) == 32);           // a tight buffer: its own tiles
  CHECK(w4a16_masked_tiles(64, 4, 100, 1) == 1 + 4);        // ceil(4 x 1 / 64) + 4
  CHECK(w4a16_masked_tiles(8, 0, 2048, 8) == 0);            // no groups: nothing to launch
  CHECK(w4a16_masked_tiles(8, 3, 0, 8) == 0);
  // The hint is in the grid only through the slots: the same call without it covers the buffer.
  CHECK(chord::w4a16_grid(chord::kW4A16Masked, 16, 128, 256, 0, 32, 32, 2048, 0, 1, 8).x == 48u * 2u);
  CHECK(chord::w4a16_grid(chord::kW4A16Masked, 16, 128, 256, 0, 32, 32, 2048, 0, 1).x == 32u * 128u * 2u);
}

TEST_CASE("tuning: the warp-specialized WGMMA config says what is wrong with it", "[tuning]") {
  chord::W4A16GemmConfig c;
  c.engine = chord::W4A16Engine::kWgmmaWs;
  c.mode = chord::kW4A16Offsets;
  c.block_m = 128;
  c.block_n = 256;
  c.block_k = 64;
  c.stages = 5;
  c.weight = chord::kW4A16WeightNF4;
  REQUIRE(c.error() == nullptr);
  CHECK(c.wgmma());
  CHECK(c.threads() == 384);
  CHECK(c.smem_bytes() == chord::w4a16_wgmma_ws_smem_bytes(128, 256, 5, true));
  CHECK(c.shape_error(1536, 2048) == nullptr);
  CHECK(std::string(c.shape_error(1536 + 128, 2048)).find("multiple of BLOCK_N") != std::string::npos);
  auto error_of = [&](auto change) {
    chord::W4A16GemmConfig bad = c;
    change(bad);
    const char* why = bad.error();
    return std::string(why ? why : "");
  };
  // Tiles under 128 tokens: 32, 48, 64 or 96, for masked INT4 calls only; the 128-token tiles
  // keep their names.
  auto masked_int4 = [](chord::W4A16GemmConfig& b) {
    b.mode = chord::kW4A16Masked;
    b.weight = chord::kW4A16WeightInt4;
  };
  CHECK(error_of([&](auto& b) {
          masked_int4(b);
          b.block_m = 64;
        }).empty());
  for (int block_m : {16, 40, 80, 256}) {
    CHECK(error_of([&](auto& b) {
            masked_int4(b);
            b.block_m = block_m;
          }).find("(masked INT4: also 32, 48, 64, 96)") != std::string::npos);
  }
  CHECK(error_of([](auto& b) {
          b.mode = chord::kW4A16Masked;
          b.block_m = 64;
        }).find("outside masked INT4 calls") != std::string::npos);  // NF4
  for (auto mode : {chord::kW4A16Contiguous, chord::kW4A16Offsets, chord::kW4A16Indexed}) {
    CHECK(error_of([&](auto& b) {
            masked_int4(b);
            b.mode = mode;
            b.block_m = 64;
          }).find("outside masked INT4 calls") != std::string::npos);
  }
  chord::W4A16GemmConfig tall = c;
  masked_int4(tall);
  CHECK(tall.source().name == "w4a16_wgmma_ws_masked_n256s5");
  CHECK(error_of([](auto& b) { b.block_m = 64; }).find("128-token tiles") != std::string::npos);
  CHECK(error_of([](auto& b) { b.block_n = 192; }).find("BLOCK_N must be 128 or 256") != std::string::npos);
  CHECK(error_of([](auto& b) { b.stages = 2; }).find("STAGES") != std::string::npos);
  CHECK(error_of([](auto& b) { b.stages = 9; }).find("227 KiB") != std::string::npos);  // 9 x 25 KiB stages
  CHECK(error_of([](auto& b) { b.split_k = 2; }).find("split-K") != std::string::npos);
}

TEST_CASE("tuning: precompile profiles hold the kernels the indexed prefill rows resolve to", "[tuning]") {
  // Indexed calls at >= 128 rows per expert route with the 128-row block of the BM128 rows, or
  // with 64 under expert parallelism (the block fallback): the profile compiles both, so a
  // server's first prefill call does not wait for NVRTC.
  const chord::Arch arch = chord::parse_arch("sm_90a");
  const std::vector<chord::KernelDescriptor> tp8 = chord::kernel_set_descriptors("tp8", arch);
  auto holds = [&](const std::vector<chord::KernelDescriptor>& list, int n, int k, int experts, int64_t rows,
                   int block) {
    chord::W4A16Problem p = problem(n, k, rows, chord::kW4A16Indexed);
    p.experts = experts;
    p.block_size = block;
    const chord::KernelDescriptor d = chord::resolve_w4a16_config(p).descriptor(arch);
    return std::find(list.begin(), list.end(), d) != list.end();
  };
  // TP8 down (K 256) on the warp-specialized kernel from the table's entry, gate_up from its bar.
  CHECK(holds(tp8, 7168, 256, 384, 128, 128));
  CHECK(holds(tp8, 7168, 256, 384, 512, 128));
  CHECK(holds(tp8, 512, 7168, 384, 512, 128));
  const std::vector<chord::KernelDescriptor> ep8 = chord::kernel_set_descriptors("ep8", arch);
  CHECK(holds(ep8, 7168, 2048, 48, 128, 64));   // the block fallback tile
  CHECK(holds(ep8, 7168, 2048, 48, 128, 128));  // the BM128 row
  // Masked decode with its groups: the narrow WGMMA tiles at BN256 (16 and 32 rows per group).
  for (int64_t rows : {16, 32}) {
    chord::W4A16Problem p = problem(4096, 7168, rows);
    p.num_groups = 48;
    p.max_m = static_cast<int>(2 * rows);
    const chord::W4A16GemmConfig c = chord::resolve_w4a16_config(p);
    CHECK(c.block_n == 256);
    CHECK(std::find(ep8.begin(), ep8.end(), c.descriptor(arch)) != ep8.end());
  }
  // And in vLLM's EP8 batched buffer (2048 rows per group), as the launch runs them: mma.sync's
  // looping form at 8 and 16 rows per group, the warp-specialized 48- and 96-token tiles at 32
  // and 64; `chord precompile --moe` (no EP ranks) holds them too (48 local experts of Kimi K2).
  chord::MoeLayerShape layer;
  layer.experts = 48;
  layer.hidden = 7168;
  layer.intermediate = 2048;
  const std::vector<chord::KernelDescriptor> moe = chord::moe_kernel_descriptors(layer, arch);
  for (int64_t rows : {8, 16, 32, 64}) {
    for (const auto& [n, k] : {std::pair{4096, 7168}, std::pair{7168, 2048}}) {
      chord::W4A16Problem p = problem(n, k, rows);
      p.num_groups = 48;
      p.max_m = 2048;
      const chord::W4A16GemmConfig c = chord::resolve_w4a16_launch_config(p);
      INFO(c.source().name);
      CHECK((rows <= 16 ? c.masked_loop : c.warp_specialized()));
      CHECK(std::find(ep8.begin(), ep8.end(), c.descriptor(arch)) != ep8.end());
      CHECK(std::find(moe.begin(), moe.end(), c.descriptor(arch)) != moe.end());
    }
  }
}

TEST_CASE("tuning: precompile profiles hold every INT4 kind's kernels (FP16, zero points, group 128) and the pack "
          "kernels",
          "[tuning]") {
  // GPTQ / AWQ / compressed-tensors checkpoints load as INT4 with FP16 scales and activations,
  // with zero points and with group 128 (CHORD_FORMAT_INT4_G32_FP16, _ZP, _ZP_FP16,
  // CHORD_FORMAT_INT4_G128*): a kernel set compiles the kernels their calls resolve to, as it
  // does for INT4 BF16, so a server's first call does not wait for NVRTC.
  const chord::Arch arch = chord::parse_arch("sm_90a");
  const chord::W4A16WeightKind kinds[] = {
      chord::kW4A16WeightInt4,     chord::kW4A16WeightInt4Fp16,     chord::kW4A16WeightInt4Zp,
      chord::kW4A16WeightInt4ZpFp16, chord::kW4A16WeightInt4G128,   chord::kW4A16WeightInt4G128Fp16,
      chord::kW4A16WeightInt4ZpG128, chord::kW4A16WeightInt4ZpG128Fp16};
  int checked = 0;
  for (const chord::ShapeSplit* split : chord::model_shapes().kernel_sets()) {
    const std::vector<chord::KernelDescriptor> set = chord::kernel_set_descriptors(split->name, arch);
    auto holds = [&](const chord::W4A16Problem& p) {
      const chord::KernelDescriptor d = chord::resolve_w4a16_config(p).descriptor(arch);
      ++checked;
      return std::find(set.begin(), set.end(), d) != set.end();
    };
    for (const chord::GemmShape& shape : {split->gate_up, split->down}) {
      for (auto weight : kinds) {
        for (auto mode : {chord::kW4A16Contiguous, chord::kW4A16Masked, chord::kW4A16Offsets, chord::kW4A16Indexed}) {
          for (int64_t rows : {int64_t{1}, int64_t{16}, int64_t{64}, int64_t{512}}) {
            chord::W4A16Problem p = problem(shape.n, shape.k, rows, mode);
            p.experts = split->experts_local;
            p.weight = weight;
            INFO(split->name << " N=" << shape.n << " K=" << shape.k << " weight " << weight << " mode " << mode
                             << " rows " << rows);
            CHECK(holds(p));
          }
        }
        // Decode with the routing geometry the operators pass (split-K kernels): offsets S = 8
        // routed rows, indexed one token routed top-8 (block 16, chord_kernels' auto policy).
        chord::W4A16Problem offsets = problem(shape.n, shape.k, 1, chord::kW4A16Offsets);
        offsets.experts = split->experts_local;
        offsets.weight = weight;
        offsets.a_rows = 8;
        INFO(split->name << " N=" << shape.n << " K=" << shape.k << " weight " << weight << " decode");
        CHECK(holds(offsets));
        chord::W4A16Problem indexed = problem(shape.n, shape.k, 1, chord::kW4A16Indexed);
        indexed.experts = split->experts_local;
        indexed.weight = weight;
        indexed.a_rows = 1;
        indexed.top_k = 8;
        indexed.block_size = 16;
        CHECK(holds(indexed));
      }
    }
    // The pack kernels of both checkpoint forms and the unpack kernel of each kind, as
    // chord_w4a16_pack / chord_w4a16_pack_zp / chord_w4a16_dequantize configure them.
    for (auto weight : kinds) {
      const bool zp = chord::w4a16_has_zero_point(weight);
      const auto element = static_cast<chord::NF4Element>(chord::w4a16_element(weight));
      for (bool unpack : {false, true}) {
        for (auto src : {chord::kInt4Codes, chord::kInt4Compressed}) {
          chord::W4A16PackConfig c;
          c.unpack = unpack;
          c.source_format = src;
          c.zero_point = zp;
          c.element = unpack || zp ? element : chord::kNF4BF16;
          c.group = chord::w4a16_scale_group(weight);
          INFO(split->name << " " << c.source().name);
          CHECK(std::find(set.begin(), set.end(), c.descriptor(arch)) != set.end());
        }
      }
    }
  }
  CHECK(checked == static_cast<int>(chord::model_shapes().kernel_sets().size()) * 2 * 8 * (4 * 4 + 2));
  // The zero-point and group-128 kinds are kernels of their own (32-bit scale entries, one scale
  // row per 128 k), not INT4's.
  const std::vector<chord::KernelDescriptor> ep8 = chord::kernel_set_descriptors("ep8", arch);
  int zp_gemms = 0, g128_gemms = 0, g128_packs = 0;
  for (const auto& d : ep8) {
    if (d.family == chord::KernelFamily::kW4A16Gemm && chord::W4A16GemmConfig::from(d).zero_point()) ++zp_gemms;
    if (d.family == chord::KernelFamily::kW4A16Gemm && chord::W4A16GemmConfig::from(d).g128()) ++g128_gemms;
    if ((d.family == chord::KernelFamily::kW4A16Pack || d.family == chord::KernelFamily::kW4A16Unpack) &&
        chord::W4A16PackConfig::from(d).group == 128) {
      ++g128_packs;
    }
  }
  CHECK(zp_gemms > 0);
  CHECK(g128_gemms > 0);
  // An unpack per kind (4); packs: symmetric codes / compressed (the scales copied as 16-bit
  // patterns, 2), zero points per element type (4).
  CHECK(g128_packs == 4 + 2 + 4);
}

TEST_CASE("tuning: precompile --moe holds the kernels a model outside the suite resolves to", "[tuning]") {
  // Models no kernel set holds, so a server's first calls would wait for NVRTC without --moe:
  // Qwen3-235B-A22B under EP8 (16 local experts, hidden 4096, intermediate 1536, top-8), also on
  // a 114-SM GPU; Mixtral 8x7B under TP8 (8 experts, intermediate 14336 / 8 = 1792, top-2);
  // DeepSeek-V3 under TP8 (256 experts, hidden 7168, intermediate 2048 / 8 = 256) with NF4.
  const chord::Arch arch = chord::parse_arch("sm_90a");
  auto moe = [](int e, int h, int i, int top_k, int sms, bool nf4) {
    chord::MoeLayerShape s;
    s.experts = e, s.hidden = h, s.intermediate = i, s.top_k = top_k, s.sm_count = sms, s.nf4 = nf4;
    return s;
  };
  // The batch sizes --moe promises: vLLM's CUDA Graph sizes (1, 2, 4, multiples of 8 to 512),
  // then 1024 to 4096.
  std::vector<int> batches = {1, 2, 4, 1024, 2048, 4096};
  for (int t = 8; t <= 512; t += 8) batches.push_back(t);
  // chord_kernels' (and the humming facade's) routing block for routed rows per expert.
  auto routing_block = [](double rows) { return rows * 1.5 <= 16 ? 16 : rows * 1.5 <= 32 ? 32 : 64; };
  for (const chord::MoeLayerShape& shape : {moe(16, 4096, 1536, 8, 132, false), moe(16, 4096, 1536, 8, 114, false),
                                           moe(8, 4096, 1792, 2, 132, false), moe(256, 7168, 256, 8, 132, true)}) {
    const std::vector<chord::KernelDescriptor> set = chord::moe_kernel_descriptors(shape, arch);
    auto holds = [&](const chord::W4A16Problem& p) {
      return std::find(set.begin(), set.end(), chord::resolve_w4a16_config(p).descriptor(arch)) != set.end();
    };
    int nf4_gemms = 0;
    for (const auto& d : set) {
      if (d.family == chord::KernelFamily::kW4A16Gemm && chord::w4a16_is_nf4(chord::W4A16GemmConfig::from(d).weight)) {
        ++nf4_gemms;
      }
    }
    CHECK((nf4_gemms > 0) == shape.nf4);
    for (const chord::GemmShape g : {chord::GemmShape{2 * shape.intermediate, shape.hidden},
                                     chord::GemmShape{shape.hidden, shape.intermediate}}) {
      std::vector<chord::W4A16WeightKind> weights = {chord::kW4A16WeightInt4, chord::kW4A16WeightInt4ZpFp16,
                                                     chord::kW4A16WeightInt4G128Fp16};
      if (shape.nf4) weights.push_back(chord::kW4A16WeightNF4);
      for (auto weight : weights) {
        if (chord::w4a16_is_g128(weight) && g.k % 128 != 0) continue;
        INFO("E=" << shape.experts << " N=" << g.n << " K=" << g.k << " top-" << shape.top_k << " SMs "
                  << shape.sm_count << " weight " << weight);
        // Every mode at rows per expert without routing geometry (NF4: offsets only).
        for (auto mode : {chord::kW4A16Contiguous, chord::kW4A16Masked, chord::kW4A16Offsets, chord::kW4A16Indexed}) {
          if (chord::w4a16_is_nf4(weight) && mode != chord::kW4A16Offsets) continue;
          for (int64_t rows : {int64_t{1}, int64_t{16}, int64_t{64}, int64_t{512}}) {
            chord::W4A16Problem p = problem(g.n, g.k, rows, mode);
            p.experts = shape.experts;
            p.weight = weight;
            CHECK(holds(p));
            if (mode != chord::kW4A16Masked) continue;
            // Masked with one group per local expert on the GPU's SMs (the narrow tiles' BN and
            // the split-K count them), in a buffer of twice the rows and in vLLM's large one, as
            // the launch runs them.
            p.num_groups = shape.experts;
            p.sm_count = shape.sm_count;
            for (int max_m : {static_cast<int>(2 * rows), static_cast<int>(std::max<int64_t>(16 * rows, 2048))}) {
              p.max_m = max_m;
              INFO("masked max_m " << max_m);
              const chord::KernelDescriptor d = chord::resolve_w4a16_launch_config(p).descriptor(arch);
              CHECK(std::find(set.begin(), set.end(), d) != set.end());
            }
          }
        }
        // Offsets and indexed calls as ops/w4a16.cpp builds them from the call's rows.
        for (int tokens : batches) {
          const int routes = shape.top_k * tokens;
          chord::W4A16Problem offsets = problem(g.n, g.k, std::max(1, routes / shape.experts), chord::kW4A16Offsets);
          offsets.experts = shape.experts;
          offsets.weight = weight;
          offsets.a_rows = routes;
          offsets.sm_count = shape.sm_count;
          INFO("offsets S=" << routes);
          CHECK(holds(offsets));
          if (chord::w4a16_is_nf4(weight)) continue;
          chord::W4A16Problem indexed = offsets;
          indexed.mode = chord::kW4A16Indexed;
          indexed.a_rows = tokens;
          indexed.top_k = shape.top_k;
          indexed.block_size = routing_block(double(routes) / shape.experts);
          INFO("indexed M=" << tokens);
          CHECK(holds(indexed));
        }
      }
    }
  }
  // Shapes the operators cannot run are refused with the reason, before anything compiles.
  auto error_of = [&](chord::MoeLayerShape shape) {
    try {
      chord::moe_kernel_descriptors(shape, arch);
    } catch (const chord::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of(moe(8, 4096, 96, 8, 132, false)).find("multiples of 64, got 4096 and 96") != std::string::npos);
  CHECK(error_of(moe(0, 4096, 1536, 8, 132, false)).find("experts must be in [1, 65536], got 0") != std::string::npos);
  CHECK(error_of(moe(8, 4096, 1 << 20, 8, 132, false)).find("must be in [1, 131072]") != std::string::npos);
  CHECK(error_of(moe(8, 4096, 1536, 0, 132, false)).find("top_k must be in [1, 64], got 0") != std::string::npos);
  CHECK(error_of(moe(8, 4096, 1536, 8, 0, false)).find("SM count must be in [1, 4096], got 0") != std::string::npos);
}

// Calls f(p) on the resolver's problems over the sm90a tables' splits, one shape the heuristic
// serves, and sm_80 (mma.sync only): every mode and a range of rows per expert. Returns the count.
template <typename F>
int for_each_table_problem(F f) {
  int count = 0;
  for (const char* arch : {"sm_90a", "sm_80"}) {
    for (auto [n, k] : {std::pair{4096, 7168}, std::pair{7168, 2048}, std::pair{512, 7168}, std::pair{7168, 256},
                        std::pair{3072, 4096}, std::pair{1536, 2048}}) {
      for (auto mode : {chord::kW4A16Contiguous, chord::kW4A16Masked, chord::kW4A16Offsets, chord::kW4A16Indexed}) {
        for (int64_t rows : {int64_t{1}, int64_t{8}, int64_t{16}, int64_t{48}, int64_t{170}, int64_t{700},
                             int64_t{4096}}) {
          chord::W4A16Problem p = problem(n, k, rows, mode);
          p.arch = chord::parse_arch(arch);
          p.block_size = rows >= 128 ? 128 : 64;
          p.sm_count = 132;
          p.a_rows = static_cast<int>(rows * 8);
          INFO(arch << " N=" << n << " K=" << k << " mode " << mode << " rows " << rows);
          f(p);
          ++count;
        }
      }
    }
  }
  return count;
}

TEST_CASE("tuning: INT4 FP16 takes INT4's config (same bytes, no pair table) for every table and the heuristic",
          "[tuning]") {
  const int checked = for_each_table_problem([](chord::W4A16Problem p) {
    chord::W4A16GemmConfig int4 = chord::resolve_w4a16_config(p);
    p.weight = chord::kW4A16WeightInt4Fp16;
    const chord::W4A16GemmConfig fp16 = chord::resolve_w4a16_config(p);
    CHECK(fp16.weight == chord::kW4A16WeightInt4Fp16);
    CHECK(!fp16.nf4());
    int4.weight = chord::kW4A16WeightInt4Fp16;
    CHECK(fp16.descriptor(p.arch) == int4.descriptor(p.arch));
  });
  CHECK(checked == 2 * 6 * 4 * 7);
}

TEST_CASE("tuning: zero-point INT4 takes INT4's engine and tile on every table and the heuristic, valid with its "
          "larger scale tiles",
          "[tuning]") {
  // Only a one-role WGMMA tile whose doubled scale bytes would cost its second CTA per SM gives
  // up stages (w4a16_config_for_weight); every result is a valid config of its kind.
  int wgmma = 0;
  const int checked = for_each_table_problem([&](chord::W4A16Problem p) {
    const chord::W4A16GemmConfig int4 = chord::resolve_w4a16_config(p);
    for (auto weight : {chord::kW4A16WeightInt4Zp, chord::kW4A16WeightInt4ZpFp16}) {
      p.weight = weight;
      const chord::W4A16GemmConfig zp = chord::resolve_w4a16_config(p);
      INFO("weight " << weight);
      CHECK(zp.weight == weight);
      CHECK(zp.zero_point());
      CHECK(zp.error() == nullptr);
      CHECK(zp.engine == int4.engine);
      CHECK((zp.block_m == int4.block_m && zp.block_n == int4.block_n && zp.block_k == int4.block_k));
      CHECK(zp.split_k == int4.split_k);
      CHECK(zp.stages <= int4.stages);
      wgmma += zp.wgmma();
    }
  });
  CHECK(checked == 2 * 6 * 4 * 7);
  CHECK(wgmma > 0);
}

TEST_CASE("tuning: group-128 INT4 takes its group-32 kind's engine and tile on every table and the heuristic, "
          "valid with its smaller scale tiles",
          "[tuning]") {
  // Every engine reads group-128 scales; the kinds take their group-32 kind's candidates (the
  // smaller scale tiles never cost a stage), so the config is the group-32 kind's with the
  // weight kind changed.
  int wgmma = 0;
  const int checked = for_each_table_problem([&](chord::W4A16Problem p) {
    for (auto weight : {chord::kW4A16WeightInt4G128, chord::kW4A16WeightInt4G128Fp16, chord::kW4A16WeightInt4ZpG128,
                        chord::kW4A16WeightInt4ZpG128Fp16}) {
      p.weight = static_cast<chord::W4A16WeightKind>(chord::w4a16_g32_kind(weight));
      chord::W4A16GemmConfig g32 = chord::resolve_w4a16_config(p);
      p.weight = weight;
      const chord::W4A16GemmConfig g128 = chord::resolve_w4a16_config(p);
      INFO("weight " << weight);
      CHECK(g128.weight == weight);
      CHECK(g128.g128());
      CHECK(g128.error() == nullptr);
      CHECK(g128.smem_bytes() <= [&] { chord::W4A16GemmConfig c = g128; c.weight = g32.weight; return c.smem_bytes(); }());
      CHECK(g128.engine == g32.engine);
      CHECK((g128.block_m == g32.block_m && g128.block_n == g32.block_n && g128.block_k == g32.block_k));
      CHECK(g128.split_k == g32.split_k);
      CHECK(g128.stages >= g32.stages);  // zero points: a one-role tile may keep a stage group 32 gave up
      wgmma += g128.wgmma();
    }
  });
  CHECK(checked == 2 * 6 * 4 * 7);
  CHECK(wgmma > 0);
}

TEST_CASE("tuning: decode tiles of a short K run four n blocks per CTA where the grid keeps 7.5 CTAs per SM",
          "[tuning]") {
  // Qwen3-235B under TP8, down: N 4096 x K 192, 128 experts, top-8 routed rows on vLLM's block 16.
  chord::W4A16Problem p = problem(4096, 192, 1, chord::kW4A16Indexed);
  p.experts = 128;
  p.block_size = 16;
  p.top_k = 1;
  p.sm_count = 132;
  auto at = [&](int tokens) {
    p.a_rows = tokens * 8;
    p.capacity = p.a_rows + p.experts * (p.block_size - 1);
    p.rows_per_expert = std::max<int64_t>(1, int64_t(p.a_rows) / p.experts);
    return chord::resolve_w4a16_config(p);
  };
  // 64 tokens reach 126 experts: 8 runs each, 7.6 CTAs per SM.
  const chord::W4A16GemmConfig c = at(64);
  INFO(c.source().name);
  CHECK(c.n_run == 4);
  CHECK(c.stages == 3);  // the tile's own ring (deeper ones measured slower with runs)
  CHECK(c.split_k == 1);
  CHECK(c.error() == nullptr);
  CHECK(c.source().name.find("_nr4") != std::string::npos);
  // 1-32 tokens reach at most 110 experts: under 7.5 CTAs per SM.
  for (int tokens : {1, 8, 16, 32}) CHECK(at(tokens).n_run == 1);
  // Fewer SMs hold the same grid at more CTAs each.
  p.sm_count = 100;
  CHECK(at(32).n_run == 4);
  p.sm_count = 132;
  // Runs were measured on sm_90a only.
  p.arch = chord::parse_arch("sm_80");
  CHECK(at(64).n_run == 1);
  p.arch = chord::parse_arch("sm_100a");
  CHECK(at(64).n_run == 1);
  p.arch = kSm90a;
  // GLM-4.5 under TP8 (N 5120, 160 experts): 32 tokens reach 130 experts, 10 runs each.
  p.n = 5120;
  p.experts = 160;
  CHECK(at(32).n_run == 4);
  // K 256 (DeepSeek-V3 / Kimi K2 under TP8) is not measured; a longer K streams enough per block.
  p.n = 7168;
  p.experts = 256;
  p.k = 256;
  CHECK(at(64).n_run == 1);
  p.k = 512;
  CHECK(at(64).n_run == 1);
  // NF4 keeps one n block per CTA.
  p.n = 4096;
  p.k = 192;
  p.experts = 128;
  p.weight = chord::kW4A16WeightNF4;
  CHECK(at(64).n_run == 1);
  p.weight = chord::kW4A16WeightInt4;
  // Prefill tiles (a routing block of 64 holds them): no runs.
  p.block_size = 64;
  const chord::W4A16GemmConfig prefill = at(4096);
  INFO(prefill.source().name);
  CHECK(prefill.block_m > 32);
  CHECK(prefill.n_run == 1);
}

TEST_CASE("tuning: calls beyond the WGMMA kernels' 32-bit offsets are refused, mma.sync takes them", "[tuning]") {
  chord::W4A16Args args{};
  args.n = 128;
  args.k = 4096;
  args.lda = 4096;
  args.num_experts = 8;
  chord::W4A16GemmConfig wgmma;
  wgmma.engine = chord::W4A16Engine::kWgmma;
  chord::W4A16GemmConfig ws = wgmma;
  ws.engine = chord::W4A16Engine::kWgmmaWs;
  chord::W4A16GemmConfig mma;  // mma.sync: 64-bit offsets
  // Activations: row 2^23 of K 4096 is 2^32 16-byte units in, past 64 GiB.
  args.mode = chord::kW4A16Contiguous;
  args.a_rows = (1 << 23) + 128;
  CHECK_THAT(chord::w4a16_offset_limit_error(wgmma, args, 1000, 132), Catch::Contains("at most 64 GiB"));
  CHECK(chord::w4a16_offset_limit_error(ws, args, 1000, 132).empty());  // its contiguous A goes through TMA
  CHECK(chord::w4a16_offset_limit_error(mma, args, 1000, 132).empty());
  args.mode = chord::kW4A16Indexed;  // the warp-specialized kernel gathers indexed rows itself
  CHECK_THAT(chord::w4a16_offset_limit_error(ws, args, 1000, 132), Catch::Contains("at most 64 GiB"));
  args.a_rows = 1 << 23;
  CHECK(chord::w4a16_offset_limit_error(wgmma, args, 1000, 132).empty());  // exactly 64 GiB: the last row fits
  // Scales: group 32, N 65664, K 2^20: 4.30e9 bytes for one expert.
  args.a_rows = 1024;
  args.n = 65664;
  args.k = 1 << 20;
  args.lda = args.k;
  CHECK_THAT(chord::w4a16_offset_limit_error(wgmma, args, 1000, 132), Catch::Contains("at most 4 GiB"));
  wgmma.weight = chord::kW4A16WeightInt4G128;  // a quarter of the bytes
  CHECK(chord::w4a16_offset_limit_error(wgmma, args, 1000, 132).empty());
  wgmma.weight = chord::kW4A16WeightInt4Zp;
  args.n = 32896;  // zero points: 8 bytes per 64 k and row
  CHECK_THAT(chord::w4a16_offset_limit_error(wgmma, args, 1000, 132), Catch::Contains("at most 4 GiB"));
  // The warp-specialized tile counter: tiles + one grid step must stay an int.
  args.n = 128;
  args.k = 4096;
  args.lda = 4096;
  CHECK_THAT(chord::w4a16_offset_limit_error(ws, args, 2147483640LL, 132), Catch::Contains("counts at most"));
  CHECK(chord::w4a16_offset_limit_error(ws, args, 2147483647LL - 132, 132).empty());
}
