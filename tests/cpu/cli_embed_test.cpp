// The `chord` CLI and the embedded kernel headers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <unistd.h>
#include <vector>

#include "chord/chord.h"
#include "core/arch.hpp"
#include "core/embedded_headers.hpp"
#include "precompile/kernel_sets.hpp"
#include "test_support.hpp"

using chord::test::TempDir;
using chord::test::run_command;


TEST_CASE("embedded headers equal the source tree", "[embed]") {
  const auto& headers = chord::embedded_headers();
  REQUIRE(headers.size() >= 3);
  for (const auto& h : headers) {
    std::ifstream in(std::string(CHORD_SOURCE_DIR) + "/kernels_src/" + std::string(h.name));
    std::stringstream text;
    text << in.rdbuf();
    CHECK(text.str() == std::string(h.contents));
  }
}

TEST_CASE("cli: precompile fills the cache without a GPU, and a second run compiles nothing", "[cli]") {
  TempDir dir;
  std::string prefix = "CHORD_CACHE_DIR=" + dir.path() + " " + CHORD_CLI_PATH;
  int code = -1;
  std::string out = run_command(prefix + " precompile --arch sm_90a --profile dequant", &code);
  CHECK(code == 0);
  CHECK(out.find("2/2") != std::string::npos);  // the progress bar reached the end
  CHECK(out.find("(2 compiled, 0 from cache)") != std::string::npos);
  CHECK(chord::test::cache_files(dir.path(), ".cubin").size() == 2);
  out = run_command(prefix + " precompile --arch sm_90a --profile dequant", &code);
  CHECK(code == 0);
  CHECK(out.find("(0 compiled, 2 from cache)") != std::string::npos);
}

TEST_CASE("cli: bad arguments fail with a clear message", "[cli]") {
  int code = 0;
  std::string out = run_command(std::string(CHORD_CLI_PATH) + " precompile --arch sm_42 --profile dequant", &code);
  CHECK(code != 0);
  CHECK(out.find("sm_42") != std::string::npos);
  out = run_command(std::string(CHORD_CLI_PATH) + " precompile --arch sm_90a --profile nonsense", &code);
  CHECK(code != 0);
  CHECK(out.find("known kernel sets") != std::string::npos);
  // A --moe shape the operators cannot run: named before anything compiles.
  out = run_command(std::string(CHORD_CLI_PATH) + " precompile --arch sm_90a --moe 8,4096,96", &code);
  CHECK(code == 2);  // as a --moe that does not parse
  CHECK(out.find("--moe 8,4096,96: ") != std::string::npos);
  CHECK(out.find("multiples of 64, got 4096 and 96") != std::string::npos);
  out = run_command(std::string(CHORD_CLI_PATH) + " precompile --arch sm_90a --moe 0,4096,1536", &code);
  CHECK(code == 2);
  CHECK(out.find("--moe 0,4096,1536: experts must be in [1, 65536], got 0") != std::string::npos);
  out = run_command(std::string(CHORD_CLI_PATH) + " precompile --arch sm_90a --moe 8,4096,1536 --top-k 65", &code);
  CHECK(code != 0);
  CHECK(out.find("--top-k needs an integer in [1, 64], not '65'") != std::string::npos);
  out = run_command(std::string(CHORD_CLI_PATH) + " frobnicate", &code);
  CHECK(code == 2);
  out = run_command("CHORD_JIT_DEBUG=maybe " + std::string(CHORD_CLI_PATH) + " info", &code);
  CHECK(code != 0);
  CHECK(out.find("CHORD_JIT_DEBUG") != std::string::npos);
}

TEST_CASE("cli: --help lists the commands, each command's options, the arches and the kernel sets", "[cli]") {
  const std::string cli = CHORD_CLI_PATH;
  std::vector<std::string> arches, sets = chord::kernel_set_names();
  for (const char* const* a = chord::supported_arch_names(); *a != nullptr; ++a) arches.push_back(*a);
  struct HelpCase {
    std::string args;
    std::vector<std::string> needles;
  };
  const HelpCase cases[] = {
      {"--help", {"usage: chord <command> [options]", "precompile", "info", "config", "chord <command> --help"}},
      {"-h", {"usage: chord <command> [options]"}},
      {"precompile --help", {"usage: chord precompile --arch ARCH (--profile NAME | --moe E,H,I) [options]", "--out DIR",
                             "--moe E,H,I", "--nf4", "kernel sets",
                             "48 experts, N x K 4096 x 7168, 7168 x 2048", "FP16", "zero points"}},
      {"precompile --arch sm_90a -h", {"usage: chord precompile"}},
      {"config --help", {"usage: chord config --arch ARCH --mode MODE --n N --k K --experts E --rows R [options]",
                         "contiguous, masked, offsets, indexed", "int4, int4-fp16, nf4, nf4-fp16, int4-zp, int4-zp-fp16",
                         "--a-rows S", "--groups G", "--max-m M", "--capacity C", "--block-size B", "--sms SMS", "--cubin FILE"}},
      {"info --help", {"usage: chord info\n"}},
  };
  for (const auto& c : cases) {
    int code = -1;
    // Help goes to stdout (chord --help | less): stderr is dropped here.
    const std::string out = run_command("{ " + cli + " " + c.args + " 2>/dev/null; }", &code);
    INFO("chord " << c.args << " -> " << out);
    CHECK(code == 0);
    for (const auto& needle : c.needles) CHECK(out.find(needle) != std::string::npos);
    if (c.args == "--help" || c.args.rfind("precompile", 0) == 0) {
      for (const auto& name : arches) CHECK(out.find(name) != std::string::npos);
      for (const auto& name : sets) CHECK(out.find(name) != std::string::npos);
    }
  }
  int code = -1;
  CHECK(run_command(cli + " --version", &code) == std::string("chord ") + chord_version() + "\n");
  CHECK(code == 0);
}

TEST_CASE("cli: a wrong command line names what is wrong, with the usage, and exits 2", "[cli]") {
  struct UsageCase {
    std::string args;
    std::string message;  // the first line
  };
  const UsageCase cases[] = {
      {"", "chord: missing command: one of precompile, info, config"},
      {"frobnicate", "chord: unknown command 'frobnicate'"},
      {"--frobnicate", "chord: unknown option '--frobnicate'"},
      {"info garbage", "chord info: unexpected argument 'garbage'"},
      {"info --verbose", "chord info: unknown option '--verbose'"},
      {"precompile --profile dequant", "chord precompile: missing --arch ARCH"},
      {"precompile", "chord precompile: missing --arch ARCH"},
      {"precompile --arch sm_90a", "chord precompile: give one of --profile NAME, --moe E,H,I"},
      {"precompile --arch sm_90a --profile ep8 --moe 8,4096,1536", "chord precompile: give one of --profile NAME, --moe E,H,I"},
      {"precompile --arch sm_90a --profile dequant --nf4", "chord precompile: --nf4 only applies to --moe (a kernel set fixes its own)"},
      {"precompile --arch sm_90a --moe 8,4096", "chord precompile: --moe needs three decimal integers E,HIDDEN,INTERMEDIATE of at most 9 digits, not '8,4096'"},
      {"precompile --arch sm_90a --moe 8,4096,-1", "chord precompile: --moe needs three decimal integers E,HIDDEN,INTERMEDIATE of at most 9 digits, not '8,4096,-1'"},
      {"precompile --arch sm_90a --moe 8,4096,1536,2", "chord precompile: --moe needs three decimal integers E,HIDDEN,INTERMEDIATE of at most 9 digits, not '8,4096,1536,2'"},
      {"precompile --arch sm_90a --profile ep8 --top-k 2", "chord precompile: --top-k only applies to --moe (a kernel set fixes its own)"},
      {"precompile --arch sm_90a --moe 8,4096,1536 --sms", "chord precompile: --sms needs a value (SMS)"},
      {"precompile --arch sm_90a --profile", "chord precompile: --profile needs a value (NAME)"},
      // A following option is not taken for the missing value.
      {"precompile --arch --profile dequant", "chord precompile: --arch needs a value (ARCH)"},
      {"precompile --arch sm_90a --profile dequant --out ''", "chord precompile: --out needs a value (DIR)"},
      {"precompile --arch sm_90a --profile dequant --arch sm_80", "chord precompile: --arch is given twice"},
      {"precompile --arch sm_90a --profile dequant --jobs 4", "chord precompile: unknown option '--jobs'"},
      {"config --arch sm_90a --mode contiguous --n 64", "chord config: missing --k K, --experts E, --rows R"},
      {"config --arch sm_90a --mode contiguous --n 64 --k 128 --experts 2 --rows 16 extra",
       "chord config: unexpected argument 'extra'"},
  };
  for (const auto& c : cases) {
    int code = -1;
    const std::string out = run_command(std::string(CHORD_CLI_PATH) + " " + c.args, &code);
    INFO("chord " << c.args << " -> " << out);
    CHECK(code == 2);
    const size_t end = out.find('\n');
    REQUIRE(end != std::string::npos);
    CHECK(out.substr(0, end) == c.message);
    // Then one line of usage that says where the options are listed.
    const std::string usage = out.substr(end + 1);
    CHECK(usage.rfind("usage: chord ", 0) == 0);
    CHECK(usage.find("--help' lists the") != std::string::npos);
    CHECK(std::count(usage.begin(), usage.end(), '\n') == 1);
  }
}

TEST_CASE("cli: config size arguments out of range are rejected, not wrapped", "[cli]") {
  const std::string cli = std::string(CHORD_CLI_PATH) + " config --arch sm_90a --mode contiguous ";
  const std::string rest = " --experts 8 --rows 16";
  // The operators' bounds (ops/w4a16.hpp): N in [16, 2^20], K in [64, 2^20], E in [1, 2^16].
  const std::string n_range = "--n needs an integer in [16, 1048576]", k_range = "--k needs an integer in [64, 1048576]";
  const std::pair<std::string, std::string> cases[] = {
      {"--n 4294967360 --k 128" + rest, n_range},
      {"--n -64 --k 128" + rest, n_range},
      {"--n ' 64' --k 128" + rest, n_range},
      {"--n +64 --k 128" + rest, n_range},
      {"--n 1048592 --k 128" + rest, n_range},
      {"--n 64 --k 18446744073709551680" + rest, k_range},
      {"--n 64 --k 2147483648" + rest, k_range},
      {"--n 64 --k 1048640" + rest, k_range},
      {"--n 64 --k 128 --experts 65537 --rows 16", "--experts needs an integer in [1, 65536]"}};
  for (const auto& [args, message] : cases) {
    int code = 0;
    const std::string out = run_command(cli + args, &code);
    INFO(args << ": " << out);
    CHECK(code == 1);
    CHECK(out.find(message) != std::string::npos);
  }
  int code = 0;
  const std::string out = run_command(cli + "--n 64 --k 128" + rest, &code);
  CHECK(code == 0);
  CHECK(out.find("engine=") != std::string::npos);
}

namespace {

// `chord config` ARGS must fail, print no config, and say `message` (when given).
void expect_config_refused(const std::string& args, const std::string& message = "") {
  int code = 0;
  const std::string out = run_command(std::string(CHORD_CLI_PATH) + " config " + args, &code);
  INFO(args << ": " << out);
  CHECK(code != 0);
  CHECK(out.find("block_m=") == std::string::npos);
  if (!message.empty()) CHECK(out.find(message) != std::string::npos);
}

// `chord config` ARGS must succeed and print `needle`.
void expect_config(const std::string& args, const std::string& needle) {
  int code = 0;
  const std::string out = run_command(std::string(CHORD_CLI_PATH) + " config " + args, &code);
  INFO(args << ": " << out);
  CHECK(code == 0);
  CHECK(out.find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("cli: config takes the routing block and row counts the operators take", "[cli]") {
  const std::string call = "--arch sm_90a --mode indexed --n 7168 --k 2048 --experts 48 --rows 170 ";
  // A block that is not a multiple of 8 in 8..1024 has no tile: it used to print BLOCK_M 4 and exit 0.
  // Rows of A at most INT_MAX / 2, as the operators take them; routes (M x top_k) too.
  for (const std::string& bad : {"--block-size 12", "--block-size 3", "--block-size 2048", "--capacity 2147483647",
                                 "--a-rows 2147483000", "--max-m 1073741824", "--a-rows 1073741824", "--top-k 1025",
                                 "--a-rows 1048576 --top-k 1024"}) {
    expect_config_refused(call + bad);
  }
  expect_config(call + "--block-size 16", "block_m=16");
  int code = 0;
  // A table that exists but has no row for the rows is named as such.
  const std::string beyond = run_command(std::string("CHORD_W4A16_PROFILE=ep8 ") + CHORD_CLI_PATH +
                                             " config --arch sm_90a --mode contiguous --n 4096 --k 7168 --experts 48 "
                                             "--rows 1000000001",
                                         &code);
  INFO(beyond);
  CHECK(code == 1);
  CHECK(beyond.find("the sm_90a table has no row for 1000000001 rows per expert") != std::string::npos);
}

TEST_CASE("cli: config refuses the calls the operators refuse: group 128 off K % 128, masked groups past E or rows", "[cli]") {
  expect_config_refused("--arch sm_90a --mode offsets --n 1536 --k 64 --experts 128 --rows 1 --weight int4-g128",
                        "--k must be a multiple of 128 for --weight int4-g128");
  expect_config_refused("--arch sm_90a --mode offsets --n 1536 --k 192 --experts 128 --rows 1 --weight int4-zp-g128-fp16",
                        "--k must be a multiple of 128 for --weight int4-zp-g128-fp16");
  expect_config_refused("--arch sm_90a --mode masked --n 1536 --k 2048 --experts 48 --rows 8 --groups 49 --max-m 8",
                        "--groups needs an integer in [0, 48]");
  expect_config_refused("--arch sm_90a --mode masked --n 1536 --k 2048 --experts 48 --rows 8 --groups 48 --max-m 1073741823",
                        "--groups x --max-m must be at most 1073741823 rows");
  expect_config("--arch sm_90a --mode offsets --n 1536 --k 256 --experts 128 --rows 1 --weight int4-g128", "_g128");
}

TEST_CASE("cli: info prints versions, cache and GPUs", "[cli]") {
  TempDir dir;
  int code = -1;
  std::string out = run_command("CHORD_CACHE_DIR=" + dir.path() + " " + CHORD_CLI_PATH + " info", &code);
  CHECK(code == 0);
  CHECK(out.find("NVRTC 13.") != std::string::npos);
  CHECK(out.find("CUDA headers:") != std::string::npos);
  CHECK(out.find("cache: " + dir.path()) != std::string::npos);
  CHECK(out.find("GPUs:") != std::string::npos);
}

TEST_CASE("cli: CHORD_W4A16_GROUP_SUMS reaches the decode tiles that run the group sums, and only them", "[cli]") {
  const std::string cli = std::string(CHORD_CLI_PATH) + " config --arch sm_90a ";
  // The heuristic's 8-token tile (INT4 BF16, group 32 and 128, symmetric and with zero points)
  // and its 16-token staged tile (group sums on tiles of <= 8 rows): form 1 in the config and
  // the kernel name; form 0, set or not, in neither.
  const std::string decode = "--mode masked --n 4096 --k 7168 --experts 8 --rows 1 --groups 8 --max-m 8";
  const std::string heuristic = "CHORD_W4A16_PROFILE=heuristic ";
  for (int gs = 0; gs < 2; ++gs) {
    const std::pair<const char*, const char*> weights[] = {
        {"int4", ""}, {"int4-g128", "_g128"}, {"int4-zp", "_zp"}, {"int4-zp-g128", "_zpg128"}};
    for (const auto& [weight, suffix] : weights) {
      for (const std::string rows : {"--rows 1 --max-m 8", "--rows 10 --max-m 16"}) {
        int code = -1;
        const std::string command = heuristic + "CHORD_W4A16_GROUP_SUMS=" + std::to_string(gs) + " " + cli +
                                    "--mode masked --n 4096 --k 7168 --experts 8 --groups 8 " + rows + " --weight " +
                                    weight;
        const std::string out = run_command(command, &code);
        INFO(command << " -> " << out);
        CHECK(code == 0);
        const std::string tile = std::string("kernel=w4a16_masked_m") + (rows == "--rows 1 --max-m 8" ? "8" : "16") +
                                 "n128k128s3w1x4" + suffix + "_sk2";
        if (gs == 0) {
          CHECK(out.find(tile + "\n") != std::string::npos);
          CHECK(out.find("group_sums") == std::string::npos);
        } else {
          CHECK(out.find(tile + "_gs" + std::to_string(gs) + "\n") != std::string::npos);
          CHECK(out.find("split_k=2 group_sums=" + std::to_string(gs) + " ") != std::string::npos);
        }
      }
    }
  }
  // Calls whose tile cannot take form 1 keep their kernel: 32 tokens per warp, FP16, NF4,
  // WGMMA prefill.
  const std::string others[] = {
      "--mode masked --n 4096 --k 7168 --experts 8 --rows 20 --groups 8 --max-m 32",
      decode + " --weight int4-fp16", decode + " --weight nf4", decode + " --weight int4-zp-fp16",
      "--mode contiguous --n 4096 --k 7168 --experts 48 --rows 512"};
  for (const std::string& args : others) {
    int code = -1;
    const std::string plain = run_command(heuristic + cli + args, &code);
    REQUIRE(code == 0);
    const std::string out = run_command(heuristic + "CHORD_W4A16_GROUP_SUMS=1 " + cli + args, &code);
    INFO(args << " -> " << out);
    CHECK(code == 0);
    CHECK(out == plain);
    CHECK(out.find("_gs1") == std::string::npos);
  }
  // A value other than 0 or 1 is an environment error naming the variable.
  for (const char* bad : {"2", "4", "-1", "1 ", "x", ""}) {
    int code = -1;
    const std::string out = run_command("CHORD_W4A16_GROUP_SUMS='" + std::string(bad) + "' " + cli + decode, &code);
    INFO(bad << " -> " << out);
    CHECK(code == 1);
    CHECK(out.find("CHORD_W4A16_GROUP_SUMS") != std::string::npos);
  }
}

TEST_CASE("cli: config prints the resolver's choice for a shape, env overrides included", "[cli]") {
  const std::string cli = std::string(CHORD_CLI_PATH) + " config --arch sm_90a ";
  const std::string ep8_down = "--mode indexed --n 7168 --k 2048 --experts 48 --rows 170 --block-size 64";
  struct ConfigCase {
    std::string command;
    int exit_code;
    std::vector<std::string> needles;  // each must appear in the output
  };
  const ConfigCase cases[] = {
      // Qwen3 NF4 gate_up at 1 token: the table's 256-row decode tile, split 2 (1024 of K each).
      {cli + "--mode offsets --n 1536 --k 2048 --experts 128 --rows 1 --a-rows 8 --weight nf4",
       0,
       {"engine=mma_sync block_m=8 block_n=256", "split_k=2", "kernel=w4a16_offsets_m8n256k128s3w1x8_nf4_sk2"}},
      // EP8 contiguous 512 rows per expert: INT4 on the warp-specialized kernel; the indexed hint
      // of EP8 T=4096 (683) stays on the one-role WGMMA kernel.
      {cli + "--mode contiguous --n 4096 --k 7168 --experts 48 --rows 512",
       0,
       {"engine=wgmma_ws block_m=128 block_n=256 block_k=64 stages=6"}},
      {cli + "--mode indexed --n 4096 --k 7168 --experts 48 --rows 683 --block-size 128",
       0,
       {"engine=wgmma block_m=128"}},
      // A TP8 gate_up shape at 8 rows per expert: the TP8 table's BN128 decode tile, and with an
      // explicit CHORD_W4A16_PROFILE the named table's row instead (EP8: BN256).
      {cli + "--mode masked --n 512 --k 7168 --experts 384 --rows 8", 0, {"block_m=16 block_n=128 block_k=128"}},
      {"CHORD_W4A16_PROFILE=ep8 " + cli + "--mode masked --n 512 --k 7168 --experts 384 --rows 8",
       0,
       {"block_m=16 block_n=256 block_k=128"}},
      // Forced knobs on a shape the table runs on WGMMA: the mma.sync kernel with the forced values.
      {"CHORD_W4A16_BM=32 CHORD_W4A16_BN=256 CHORD_W4A16_BK=128 CHORD_W4A16_STAGES=3 " + cli + ep8_down,
       0,
       {"engine=mma_sync block_m=32 block_n=256 block_k=128 stages=3"}},
      // CHORD_W4A16_ENGINE: the engine with its defaults, then the tile knobs on it.
      {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_BN=256 CHORD_W4A16_STAGES=4 " + cli + ep8_down,
       0,
       {"engine=wgmma block_m=64 block_n=256 block_k=64 stages=4"}},
      {"CHORD_W4A16_ENGINE=wgmma_ws " + cli + "--mode contiguous --n 4096 --k 7168 --experts 48 --rows 128",
       0,
       {"engine=wgmma_ws block_m=128 block_n=256 block_k=64 stages=6"}},
      {"CHORD_W4A16_ENGINE=mma_sync " + cli + "--mode contiguous --n 4096 --k 7168 --experts 48 --rows 512",
       0,
       {"engine=mma_sync"}},
      {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_BK=128 " + cli + ep8_down, 1, {"the WGMMA kernels have BLOCK_K 64"}},
      {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_WARPS_N=8 " + cli + ep8_down,
       1,
       {"CHORD_W4A16_WARPS_N=8 applies to the mma.sync kernel, not to wgmma"}},
      {"CHORD_W4A16_ENGINE=wgmma_ws CHORD_W4A16_BM=64 " + cli + ep8_down, 1, {"128-token tiles"}},
      {"CHORD_W4A16_ENGINE=wgmma " + std::string(CHORD_CLI_PATH) +
           " config --arch sm_80 --mode contiguous --n 4096 --k 7168 --experts 48 --rows 512",
       1,
       {"CHORD_W4A16_ENGINE=wgmma needs sm_90a"}},
      {"CHORD_W4A16_SPLIT_K=4 " + cli + "--mode offsets --n 1536 --k 2048 --experts 128 --rows 1 --a-rows 8",
       0,
       {"split_k=4"}},
      // Bad input: a usage error, or the resolver's message.
      {cli + "--mode bogus --n 1536 --k 2048 --experts 128 --rows 1",
       2,
       {"chord config: --mode is one of contiguous, masked, offsets, indexed, not 'bogus'"}},
      {cli + "--mode contiguous --n 64 --k 128 --experts 2 --rows 16 --weight int3",
       2,
       {"chord config: --weight is one of int4, int4-fp16, nf4, nf4-fp16, int4-zp, int4-zp-fp16, int4-g128, "
        "int4-g128-fp16, int4-zp-g128, int4-zp-g128-fp16, not 'int3'"}},
      // --name=value reads as --name value.
      {std::string(CHORD_CLI_PATH) + " config --arch=sm_90a --mode=contiguous --n=4096 --k=7168 --experts=48 --rows=512",
       0,
       {"engine=wgmma_ws"}},
      {cli + "--mode masked --n 100 --k 7168 --experts 48 --rows 8", 1, {"N = 100 is unsupported"}},
      {cli + "--mode masked --n x --k 7168 --experts 48 --rows 8",
       1,
       {"--n needs an integer in [16, 1048576], not 'x'"}},
  };
  for (const auto& c : cases) {
    int code = -1;
    const std::string out = run_command(c.command, &code);
    INFO(c.command << " -> " << out);
    CHECK(code == c.exit_code);
    for (const auto& needle : c.needles) CHECK(out.find(needle) != std::string::npos);
  }
}

namespace {
// What a command printed, less chord's warnings; and how many warnings contain `needle`.
std::string without_warnings(const std::string& out) {
  std::istringstream in(out);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.rfind("chord: warning: ", 0) != 0) kept += line + "\n";
  }
  return kept;
}
size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}
// `chord precompile` of the two dequant kernels into `folder` (--out): its output and exit code.
std::string precompile_dequant_into(const std::string& folder, int* code) {
  return run_command(std::string(CHORD_CLI_PATH) + " precompile --arch sm_90a --profile dequant --out " + folder, code);
}
}  // namespace

TEST_CASE("cli: each deprecated engine setting picks what its CHORD_W4A16_ENGINE value picks, and says so once",
          "[cli]") {
  // A decode and a prefill EP8 call: auto runs mma.sync / wgmma_ws, portable mma.sync on both,
  // prefer_wgmma WGMMA on both, so a setting mapped to the wrong value picks another config.
  const std::string shapes[] = {"--rows 8", "--rows 512"};
  auto config = [&](const std::string& env, const std::string& rows, int* code) {
    return run_command("env -u CHORD_W4A16_ENGINE -u CHORD_W4A16_PORTABLE -u CHORD_SM90_DECODE " + env + " " +
                           CHORD_CLI_PATH + " config --arch sm_90a --mode contiguous --n 4096 --k 7168 --experts 48 " +
                           rows + " --candidates",
                       code);
  };
  std::string picked[3];  // auto, portable, prefer_wgmma: both shapes
  const char* values[] = {"auto", "portable", "prefer_wgmma"};
  for (int v = 0; v < 3; ++v) {
    for (const auto& rows : shapes) {
      int code = -1;
      picked[v] += config(std::string("CHORD_W4A16_ENGINE=") + values[v], rows, &code);
      CHECK(code == 0);
    }
  }
  CHECK(picked[0] != picked[1]);
  CHECK(picked[0] != picked[2]);
  CHECK(picked[1] != picked[2]);
  const std::pair<std::string, int> deprecated[] = {
      {"CHORD_W4A16_PORTABLE=0", 0}, {"CHORD_W4A16_PORTABLE=1", 1},
      {"CHORD_SM90_DECODE=1", 1},    {"CHORD_SM90_DECODE=0", 2},
      {"CHORD_SM90_DECODE=0 CHORD_W4A16_PORTABLE=1", 1}};
  for (const auto& [env, value] : deprecated) {
    std::string out, warnings;
    for (const auto& rows : shapes) {
      int code = -1;
      const std::string text = config(env, rows, &code);
      CHECK(code == 0);
      out += without_warnings(text);
      warnings += text;
    }
    INFO(env << " -> " << out);
    CHECK(out == picked[value]);
    // Each deprecated variable set: one warning per process (two processes here).
    CHECK(count(warnings, "is deprecated") == 2 * static_cast<size_t>(count(env, "=")));
  }
  // Disagreeing with CHORD_W4A16_ENGINE is an error naming both.
  int code = -1;
  const std::string out = config("CHORD_SM90_DECODE=0 CHORD_W4A16_ENGINE=portable", "--rows 8", &code);
  CHECK(code == 1);
  CHECK(out.find("CHORD_SM90_DECODE=0 and CHORD_W4A16_ENGINE=portable conflict") != std::string::npos);
}

TEST_CASE("cli: config --cubin writes the resolved kernel's cubin and ptxas's report", "[cli]") {
  TempDir dir;
  const std::string path = dir.path() + "/tp8_down.cubin";
  const std::string shape = " config --arch sm_90a --mode indexed --n 7168 --k 256 --experts 384 --rows 341 --block-size 128";
  int code = -1;
  std::string out = run_command(std::string(CHORD_CLI_PATH) + shape + " --cubin " + path, &code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("kernel=w4a16_wgmma_ws_indexed_n256s4") != std::string::npos);
  CHECK(out.find("0 bytes spill stores") != std::string::npos);  // ptxas -v's report
  CHECK(out.find("Used ") != std::string::npos);
  std::ifstream cubin(path, std::ios::binary);
  char magic[4] = {0, 0, 0, 0};
  cubin.read(magic, 4);
  CHECK(std::string(magic, 4) == std::string("\x7f" "ELF", 4));

  // An unwritable path is an error that names it.
  out = run_command(std::string(CHORD_CLI_PATH) + shape + " --cubin " + dir.path() + "/missing/x.cubin", &code);
  CHECK(code == 1);
  CHECK(out.find("cannot write") != std::string::npos);
}

TEST_CASE("cli: config --candidates lists the decode tile search's tiles, the rule's first, unless it is off",
          "[cli]") {
  const std::string shape = std::string(CHORD_CLI_PATH) +
                            " config --arch sm_90a --mode indexed --n 4096 --k 7168 --experts 32 --rows 2 --a-rows 8 "
                            "--top-k 8 --block-size 16 --capacity 520 --candidates";
  int code = -1;
  const std::string on = run_command("env -u CHORD_W4A16_SEARCH " + shape, &code);
  CHECK(code == 0);
  const size_t at = on.find("decode tile search");
  REQUIRE(at != std::string::npos);
  // the first tile listed is the config on the first line (this shape's table row: BM16 BN128 BK128)
  CHECK(on.rfind("engine=mma_sync block_m=16 block_n=128 block_k=128 stages=3 ", 0) == 0);
  CHECK(on.find("\n  bm16 bn128 bk128 s3 wm1 wn4 sk1 gs0\n", at) == on.find('\n', at));
  const std::string off = run_command("CHORD_W4A16_SEARCH=0 " + shape, &code);
  CHECK(code == 0);
  CHECK(off.find("decode tile search") == std::string::npos);
  const std::string prefill = run_command("env -u CHORD_W4A16_SEARCH " + std::string(CHORD_CLI_PATH) +
                                              " config --arch sm_90a --mode indexed --n 4096 --k 7168 --experts 32 "
                                              "--rows 512 --a-rows 4096 --top-k 8 --block-size 128 --candidates",
                                          &code);
  CHECK(prefill.find("decode tile search") == std::string::npos);
}

TEST_CASE("cli: precompile fails when the folder does not end up holding every kernel", "[cli]") {
  TempDir dir;
  const std::string file = dir.path() + "/a-file";
  std::ofstream(file) << "x";
  int code = -1;
  std::string out = precompile_dequant_into(file, &code);
  INFO(out);
  CHECK(code == 1);  // an unusable folder: refused before compiling
  CHECK(out.find("none of the 2 kernels would be kept; nothing compiled") != std::string::npos);
  // A name another file holds (a folder): that kernel is not stored, the precompile fails.
  const std::string layer = dir.path() + "/layer";
  out = precompile_dequant_into(layer, &code);
  REQUIRE(code == 0);
  const std::vector<std::string> entries = chord::test::cache_files(layer, ".cubin");
  REQUIRE(entries.size() == 2);
  REQUIRE(std::remove((layer + "/kernels/" + entries[0]).c_str()) == 0);
  REQUIRE(run_command("mkdir -p " + layer + "/kernels/" + entries[0] + "/x", &code).empty());
  out = precompile_dequant_into(layer, &code);
  INFO(out);
  CHECK(code == 1);
  CHECK(out.find("1 of 2 kernels are not in") != std::string::npos);
}

TEST_CASE("cli: config --cubin writes like a redirection: through its own symlink, to stdout, never blocking on a FIFO, "
          "never through another name of a file",
          "[cli]") {
  TempDir dir;
  const std::string cli = std::string(CHORD_CLI_PATH) +
                          " config --arch sm_90a --mode contiguous --n 64 --k 128 --experts 8 --rows 16 --cubin ";
  const std::string target = dir.path() + "/target";
  int code = -1;
  run_command("ln -s " + target + " " + dir.path() + "/link && mkfifo " + dir.path() + "/fifo", &code);
  REQUIRE(code == 0);
  auto starts_as_elf = [](const std::string& path) {
    std::ifstream cubin(path, std::ios::binary);
    char magic[4] = {};
    cubin.read(magic, 4);
    return std::string(magic, 4) == "\x7f" "ELF";
  };
  std::string out = run_command(cli + dir.path() + "/link", &code);
  INFO(out);
  CHECK(code == 0);
  CHECK(starts_as_elf(target));  // this user's symlink is followed
  out = run_command("timeout 120 " + cli + dir.path() + "/fifo", &code);  // no reader: fails, never blocks
  CHECK(code == 1);
  CHECK(out.find("No such device or address") != std::string::npos);
  out = run_command(cli + "/dev/stdout | head -c 4 | od -c | head -1", &code);
  CHECK(out.find("177   E   L   F") != std::string::npos);
  out = run_command(cli + dir.path() + "/no-such-folder/k.cubin", &code);
  CHECK(code == 1);
  CHECK(out.find("No such file or directory") != std::string::npos);
  // A file with another name elsewhere (which, in a shared folder, could be another user's
  // file) is refused and left as it was; the existing own file is truncated and rewritten.
  run_command("echo keep > " + dir.path() + "/kept && ln " + dir.path() + "/kept " + dir.path() + "/alias", &code);
  REQUIRE(code == 0);
  out = run_command(cli + dir.path() + "/alias", &code);
  CHECK(code == 1);
  CHECK(out.find("it has 2 hard links") != std::string::npos);
  CHECK(run_command("cat " + dir.path() + "/kept", &code) == "keep\n");
  // The target exists now, longer than a cubin: truncated and rewritten through the link.
  run_command("head -c 1000000 /dev/zero > " + target, &code);
  REQUIRE(code == 0);
  out = run_command(cli + dir.path() + "/link", &code);
  CHECK(code == 0);
  CHECK(starts_as_elf(target));
  std::ifstream rewritten(target, std::ios::binary | std::ios::ate);
  CHECK(rewritten.tellg() < 1000000);
  if (geteuid() == 0) {  // a symlink another user planted is not followed
    run_command("ln -s " + target + " " + dir.path() + "/planted && chown -h 65534 " + dir.path() + "/planted", &code);
    REQUIRE(code == 0);
    out = run_command(cli + dir.path() + "/planted", &code);
    CHECK(code == 1);
    CHECK(out.find("symlink made by uid 65534") != std::string::npos);
    // Behind a link of our own, the planted one is judged all the same.
    run_command("ln -s " + dir.path() + "/planted " + dir.path() + "/chain", &code);
    REQUIRE(code == 0);
    out = run_command(cli + dir.path() + "/chain", &code);
    CHECK(code == 1);
    CHECK(out.find("symlink made by uid 65534") != std::string::npos);
  }
}

TEST_CASE("cli: a temp file a killed store left under this pid does not keep precompile from storing", "[cli]") {
  // A restarted container often has the pid of the process whose store was killed, and makes
  // the same stores in the same order: a fresh process (exec keeps the shell's pid) with temp
  // files planted under the names pid and counter alone would give.
  TempDir first, second;
  int code = -1;
  run_command("CHORD_CACHE_DIR=" + first.path() + " " + CHORD_CLI_PATH + " precompile --arch sm_90a --profile dequant",
              &code);
  REQUIRE(code == 0);
  std::string plant;
  for (const std::string& entry : chord::test::cache_files(first.path(), ".cubin")) {
    const std::string hex = entry.substr(0, entry.size() - std::string(".cubin").size());
    plant += "for c in 0 1 2 3; do : > " + second.path() + "/kernels/." + hex + ".$$.$c.tmp; done; ";
  }
  const std::string out = run_command("mkdir -m 0700 -p " + second.path() + "/kernels && sh -c '" + plant +
                                          "exec env CHORD_CACHE_DIR=" + second.path() + " " + CHORD_CLI_PATH +
                                          " precompile --arch sm_90a --profile dequant'",
                                      &code);
  INFO(out);
  CHECK(code == 0);
  CHECK(chord::test::cache_files(second.path(), ".cubin").size() == 2);
}

TEST_CASE("cli: an output that cannot be written is a failure", "[cli]") {
  int code = -1;
  run_command(std::string(CHORD_CLI_PATH) + " --version > /dev/full", &code);
  CHECK(code == 1);
}

TEST_CASE("cli: precompile --out refuses a folder others can write, before creating anything in it", "[cli]") {
  TempDir dir;
  const std::string open_folder = dir.path() + "/open";
  int code = -1;
  run_command("mkdir -m 0777 " + open_folder, &code);
  REQUIRE(code == 0);
  const std::string out = precompile_dequant_into(open_folder, &code);
  INFO(out);
  CHECK(code == 1);
  CHECK(out.find("choose another --out folder") != std::string::npos);
  CHECK(out.find("0755 is fine") != std::string::npos);
  CHECK(chord::test::list_dir(open_folder).empty());  // no kernels/ made inside it
}

TEST_CASE("cli: info marks the read-only cache folders it does not use", "[cli]") {
  TempDir dir;
  int code = -1;
  run_command("mkdir -p " + dir.path() + "/good/kernels " + dir.path() + "/open/kernels && chmod 0777 " + dir.path() +
                  "/open/kernels",
              &code);
  REQUIRE(code == 0);
  const std::string out = run_command("CHORD_CACHE_DIR=" + dir.path() + "/cache CHORD_CACHE_READONLY_DIRS=" +
                                          dir.path() + "/good:" + dir.path() + "/open " + CHORD_CLI_PATH + " info",
                                      &code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("read-only cache: " + dir.path() + "/good (0 entries, 0.0 MiB)\n") != std::string::npos);
  CHECK(out.find("read-only cache: " + dir.path() + "/open (0 entries, 0.0 MiB) (not used: see the warning above)") !=
        std::string::npos);
}

TEST_CASE("cli: precompile --out into an existing folder others cannot read says so", "[cli]") {
  TempDir dir;
  const std::string layer = dir.path() + "/layer";
  int code = -1;
  run_command("mkdir -m 0700 " + layer, &code);
  REQUIRE(code == 0);
  std::string out = precompile_dequant_into(layer, &code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("not readable by others (e.g. " + layer + ")") != std::string::npos);
  run_command("chmod 0755 " + layer, &code);
  out = precompile_dequant_into(layer, &code);
  CHECK(code == 0);
  CHECK(out.find("not readable by others") == std::string::npos);  // kernels/ 0755 and entries 0644 as made
}
