// The bad-input table (docs/reliability.md) on a machine without a GPU: every bad argument
// is rejected with a status and a message naming it, before any driver call (here a driver
// call would answer NO_DRIVER instead), and the library keeps answering precisely.
// Environment, arch, cache-dir and cache-entry faults go through the `chord` CLI and the
// resolver in fresh processes, since the environment is read once per process.
//
// CHORD_BAD_INPUT_REPORT=<file> appends each case's status and message as markdown rows.
#include <catch2/catch.hpp>

#include <array>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/disk_cache.hpp"
#include "chord/chord.h"
#include "core/arch.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "launcher/driver_api.hpp"
#include "tests/bad_input_cases.hpp"
#include "tests/crafted_elf.hpp"
#include "test_support.hpp"
#include "tuning_tables/w4a16_resolver.hpp"

using chord::test::ScopedEnv;
using chord::test::TempDir;

namespace {

// Distinct 16-byte-aligned addresses that are never dereferenced.
chord::test::BadInputBuffers fake_buffers() {
  chord::test::BadInputBuffers b;
  b.a = reinterpret_cast<void*>(uintptr_t{0x100000});
  b.out = reinterpret_cast<void*>(uintptr_t{0x200000});
  b.routing = reinterpret_cast<void*>(uintptr_t{0x300000});
  b.codes = reinterpret_cast<void*>(uintptr_t{0x400000});
  b.src_scales = reinterpret_cast<void*>(uintptr_t{0x500000});
  b.tag = chord_w4a16_weight_t{CHORD_W4A16_MAGIC,
                               CHORD_FORMAT_INT4_G32,
                               chord_w4a16_layout_version(),
                               32,
                               chord::test::kCaseE,
                               chord::test::kCaseN,
                               chord::test::kCaseK,
                               reinterpret_cast<void*>(uintptr_t{0x600000}),
                               reinterpret_cast<void*>(uintptr_t{0x700000})};
  return b;
}

std::string escape_cell(std::string s) {
  for (size_t p = 0; (p = s.find('|', p)) != std::string::npos; p += 2) s.replace(p, 1, "\\|");
  return s;
}

void report_row(const std::string& group, const std::string& entry, const std::string& what, chord_status_t status,
                const std::string& message) {
  const char* path = std::getenv("CHORD_BAD_INPUT_REPORT");
  if (path == nullptr) return;
  std::ofstream(path, std::ios::app) << "| " << group << " | `" << entry << "` | " << escape_cell(what) << " | "
                                     << chord_status_string(status) << " | " << escape_cell(message) << " |\n";
}

struct Run {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs a shell command line and captures its output.
Run run(const std::string& command) {
  Run r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) r.output.append(buffer.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string self_path() {
  char path[PATH_MAX] = {0};
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  REQUIRE(n > 0);
  return std::string(path, static_cast<size_t>(n));
}

const char* kCli = CHORD_CLI_PATH;

}  // namespace

TEST_CASE("bad input: every C API case is rejected by name, before any driver call", "[bad_input]") {
  const bool has_driver = chord::driver_available();
  auto cases = chord::test::bad_input_cases(fake_buffers());
  REQUIRE(cases.size() >= 30);
  for (const auto& c : cases) {
    INFO(c.entry << ": " << c.what);
    // A different earlier failure must not leak into this case's message.
    REQUIRE(chord_int4_dequantize_codes(nullptr, nullptr, nullptr, 1, 64, 33, nullptr) == CHORD_ERROR_INVALID_ARGUMENT);
    const std::string previous = chord_last_error();
    chord_status_t status = c.call();
    const std::string message = chord_last_error();
    INFO("status " << chord_status_string(status) << ", message: " << message);
    CHECK(status == c.expect);  // NO_DRIVER here would mean a driver call came first
    CHECK(message != previous);
    for (const auto& needle : c.needles) CHECK(message.find(needle) != std::string::npos);
    report_row("argument", std::string("chord_") + c.entry, c.what, status, message);
    if (!has_driver) {
      // Still usable: a valid call reaches the driver (absent here) and says so.
      CHECK(chord_int4_dequantize_codes(reinterpret_cast<void*>(uintptr_t{0x10000}),
                                        reinterpret_cast<void*>(uintptr_t{0x20000}),
                                        reinterpret_cast<void*>(uintptr_t{0x30000}), 1, 64, 64,
                                        nullptr) == CHORD_ERROR_NO_DRIVER);
    }
  }
}

TEST_CASE("bad input: calls with no work succeed with null pointers and touch nothing", "[bad_input]") {
  for (const auto& c : chord::test::empty_work_cases(fake_buffers())) {
    INFO(c.entry << ": " << c.what << " -> " << chord_last_error());
    CHECK(c.call() == CHORD_SUCCESS);
    CHECK(std::string(chord_last_error()).empty());
    report_row("no work", std::string("chord_") + c.entry, c.what, CHORD_SUCCESS, "(no launch, no driver call)");
  }
}

TEST_CASE("bad input: without libcuda a valid call reports NO_DRIVER and the library stays usable", "[bad_input]") {
  std::string why;
  if (chord::driver_available(&why)) {
    WARN("a CUDA driver is present; the no-driver path is covered on CPU machines only");
    return;
  }
  auto b = fake_buffers();
  chord_status_t status = chord_w4a16_contiguous(b.a, 128, &b.tag, chord::test::ints(b.routing), b.out, nullptr);
  std::string message = chord_last_error();
  CHECK(status == CHORD_ERROR_NO_DRIVER);
  CHECK(message.find("libcuda.so.1") != std::string::npos);
  report_row("driver", "chord_w4a16_contiguous", "valid call, libcuda.so.1 absent", status, message);
  CHECK(chord_w4a16_contiguous(b.a, -1, &b.tag, chord::test::ints(b.routing), b.out, nullptr) ==
        CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("'m'") != std::string::npos);
  CHECK(chord_w4a16_contiguous(b.a, 128, &b.tag, chord::test::ints(b.routing), b.out, nullptr) ==
        CHORD_ERROR_NO_DRIVER);  // asked again, not a stale cached failure of another kind
}

TEST_CASE("bad input: each invalid CHORD_* value is rejected naming the variable, then recovers", "[bad_input]") {
  struct EnvCase {
    const char* name;
    const char* value;
  };
  const EnvCase cases[] = {
      {"CHORD_CACHE_DIR", ""},           {"CHORD_CACHE_DIR", "relative/dir"}, {"CHORD_JIT_DEBUG", "yes"},
      {"CHORD_JIT_DUMP_SOURCE", "2"},    {"CHORD_SM90_DECODE", "on"},        {"CHORD_W4A16_BM", "abc"},
      {"CHORD_W4A16_BN", "-64"},         {"CHORD_W4A16_BK", "0"},            {"CHORD_W4A16_STAGES", "3x"},
      {"CHORD_W4A16_BM", "99999999999"}, {"CHORD_W4A16_BM", " 64"},         {"CHORD_W4A16_BM", "+64"},
      {"CHORD_W4A16_BM", "64 "},         {"CHORD_CACHE_DIR", "/var/cache/chord "},
      {"CHORD_CACHE_READONLY_DIRS", "/opt/chord:relative"},
      // Checked when read, also where a WGMMA call would ignore a valid split.
      {"CHORD_W4A16_SPLIT_K", "3"},
  };
  for (const auto& c : cases) {
    INFO(c.name << "='" << c.value << "'");
    {
      ScopedEnv guard(c.name, std::string(c.value));
      try {
        chord::read_environment();
        FAIL("accepted");
      } catch (const chord::Error& e) {
        CHECK(e.status() == CHORD_ERROR_ENVIRONMENT);
        CHECK(std::string(e.what()).find(c.name) != std::string::npos);
        report_row("environment", "read_environment", std::string(c.name) + "='" + c.value + "'", e.status(), e.what());
      }
      // Through a public entry point, in a fresh process: the CLI fails with the same message.
      Run r = run(std::string(c.name) + "='" + c.value + "' " + kCli + " info");
      INFO(r.output);
      CHECK(r.exit_code == 1);
      CHECK(r.output.find(std::string("chord: error: environment variable ") + c.name) != std::string::npos);
    }
    CHECK_NOTHROW(chord::read_environment());  // fixed value: usable again
  }
}

// Child of the next test: resolves one config under the forced CHORD_W4A16_* values of
// this process's environment and prints the outcome.
TEST_CASE("bad input child: resolve under forced env", "[.bad_input_child]") {
  chord::W4A16Problem p;
  p.mode = std::getenv("CHILD_INDEXED") ? chord::kW4A16Indexed : chord::kW4A16Contiguous;
  p.block_size = 16;
  p.rows_per_expert = 16;
  p.n = 64;
  p.k = 128;
  p.experts = 2;
  p.arch = chord::parse_arch("sm_90a");
  if (std::getenv("CHILD_PREFILL")) {  // a WGMMA prefill shape
    p.rows_per_expert = 512;
    p.n = 4096;
    p.k = 7168;
  }
  try {
    const chord::W4A16GemmConfig c = chord::resolve_w4a16_config(p);
    std::printf("RESULT 0 accepted wgmma=%d split_k=%d\n", c.wgmma() ? 1 : 0, c.split_k);
  } catch (const chord::Error& e) {
    std::printf("RESULT %d %s\n", static_cast<int>(e.status()), e.what());
  }
}

TEST_CASE("bad input: forced CHORD_W4A16_* values that make no valid config are rejected", "[bad_input]") {
  struct ForcedCase {
    const char* assignment;
    const char* needle;
    const char* label;
  };
  const ForcedCase cases[] = {
      {"CHORD_W4A16_BM=48", "BLOCK_M must be", "CHORD_W4A16_BM=48"},
      {"CHORD_W4A16_BN=40", "BLOCK_N must be", "CHORD_W4A16_BN=40"},
      {"CHORD_W4A16_STAGES=9", "STAGES must be", "CHORD_W4A16_STAGES=9"},
      {"CHORD_W4A16_WARPS_N=3", "BLOCK_N / WARPS_N must be a multiple of 16", "CHORD_W4A16_WARPS_N=3"},
      {"CHORD_W4A16_WARPS_M=3", "BLOCK_M / WARPS_M must be a multiple of 8", "CHORD_W4A16_WARPS_M=3"},
      {"CHORD_W4A16_BK=256", "do not fit N = 64, K = 128", "CHORD_W4A16_BK=256 with K = 128"},
      {"CHILD_INDEXED=1 CHORD_W4A16_BM=32", "does not divide the routing block_size 16",
       "CHORD_W4A16_BM=32, indexed call with block_size 16"},
  };
  const std::string self = self_path();
  for (const auto& c : cases) {
    Run r = run(std::string(c.assignment) + " '" + self + "' '[.bad_input_child]'");
    INFO(c.assignment << " -> " << r.output);
    CHECK(r.exit_code == 0);
    auto at = r.output.find("RESULT ");
    REQUIRE(at != std::string::npos);
    std::string line = r.output.substr(at + 7, r.output.find('\n', at) - at - 7);
    CHECK(line.rfind(std::to_string(CHORD_ERROR_ENVIRONMENT) + " ", 0) == 0);
    CHECK(line.find(c.needle) != std::string::npos);
    report_row("environment", "resolver (any GEMM call)", c.label, CHORD_ERROR_ENVIRONMENT, line.substr(2));
  }
  // A forced split applies to mma.sync calls; a call that runs the WGMMA engine ignores it.
  Run forced = run("CHORD_W4A16_SPLIT_K=2 '" + self + "' '[.bad_input_child]'");
  CHECK(forced.output.find("RESULT 0 accepted wgmma=0 split_k=2") != std::string::npos);
  Run prefill = run("CHILD_PREFILL=1 CHORD_W4A16_SPLIT_K=2 '" + self + "' '[.bad_input_child]'");
  CHECK(prefill.output.find("RESULT 0 accepted wgmma=1 split_k=1") != std::string::npos);
}

TEST_CASE("bad input: unsupported GPU arch is rejected with UNSUPPORTED", "[bad_input]") {
  try {
    chord::arch_for_device(7, 5);
    FAIL("compute capability 7.5 accepted");
  } catch (const chord::Error& e) {
    CHECK(e.status() == CHORD_ERROR_UNSUPPORTED);
    CHECK(std::string(e.what()).find("7.5") != std::string::npos);
    report_row("device", "any operator (device lookup)", "GPU of compute capability 7.5", e.status(), e.what());
  }
  Run r = run(std::string(kCli) + " precompile --arch sm_75 --profile dequant");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("arch 'sm_75' is not supported") != std::string::npos);
  report_row("device", "chord precompile", "--arch sm_75", CHORD_ERROR_UNSUPPORTED,
             r.output.substr(0, r.output.find('\n')));
}

TEST_CASE("bad input: an unwritable cache dir degrades to memory-only with a warning", "[bad_input]") {
  TempDir dir;
  // A path under a regular file can be created by nobody, root included.
  std::ofstream(dir.path() + "/file") << "x";
  Run r = run("CHORD_CACHE_DIR='" + dir.path() + "/file/cache' " + kCli + " precompile --arch sm_90a --profile dequant");
  INFO(r.output);
  // The library carries on in memory; precompile, whose job is the folder, fails before compiling.
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("is unusable as a cache folder") != std::string::npos);
  CHECK(r.output.find("none of the 2 kernels would be kept; nothing compiled") != std::string::npos);
  CHECK(r.output.find("compiled kernels are kept in memory only") != std::string::npos);
  CHECK(r.output.find("precompiled") == std::string::npos);
  auto warning = r.output.substr(r.output.find("chord: "), r.output.find('\n', r.output.find("chord: ")) -
                                                               r.output.find("chord: "));
  report_row("cache", "any operator (first compile)", "CHORD_CACHE_DIR not creatable", CHORD_SUCCESS,
             warning);
}

TEST_CASE("bad input: a corrupted cache entry is rebuilt, not loaded", "[bad_input]") {
  TempDir dir;
  const std::string env = "CHORD_CACHE_DIR='" + dir.path() + "' ";
  Run first = run(env + kCli + " precompile --arch sm_90a --profile dequant");
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  auto entries = chord::test::cache_files(dir.path(), ".cubin");
  REQUIRE_FALSE(entries.empty());
  // Flip one byte in the middle of every entry's payload.
  for (const auto& name : entries) {
    std::fstream f(dir.path() + "/kernels/" + name, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const auto size = static_cast<long>(f.tellg());
    f.seekg(size / 2);
    char byte = 0;
    f.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5a);
    f.seekp(size / 2);
    f.write(&byte, 1);
  }
  Run second = run(env + kCli + " precompile --arch sm_90a --profile dequant");
  INFO(second.output);
  CHECK(second.exit_code == 0);
  CHECK(second.output.find("is corrupt or truncated; rebuilding it") != std::string::npos);
  CHECK(second.output.find("(" + std::to_string(entries.size()) + " compiled, 0 from cache)") != std::string::npos);
  Run third = run(env + kCli + " precompile --arch sm_90a --profile dequant");
  CHECK(third.output.find("(0 compiled, " + std::to_string(entries.size()) + " from cache)") != std::string::npos);
  auto at = second.output.find("chord: ");
  report_row("cache", "any operator (first compile)", "cache entry with a flipped payload byte", CHORD_SUCCESS,
             second.output.substr(at, second.output.find('\n', at) - at) + " (entry recompiled)");
}

TEST_CASE("bad input: a cache entry holding a crafted cubin under a valid checksum is rebuilt, run after run",
          "[bad_input]") {
  TempDir dir;
  const std::string env = "CHORD_CACHE_DIR='" + dir.path() + "' ";
  REQUIRE(run(env + kCli + " precompile --arch sm_90a --profile dequant").exit_code == 0);
  const auto entries = chord::test::cache_files(dir.path(), ".cubin");
  REQUIRE(entries.size() == 2);
  const char* damage_name = "string table at a wild offset";  // crashed the old reader (SIGSEGV)
  for (const auto& name : entries) {
    const std::string path = dir.path() + "/kernels/" + name;
    const chord::KernelKey key{std::stoull(name.substr(0, 16), nullptr, 16),
                               std::stoull(name.substr(16, 16), nullptr, 16)};
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> entry((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t header = chord::encode_cache_entry(key, {}).size();
    std::vector<char> cubin(entry.begin() + static_cast<long>(header), entry.end());
    REQUIRE(chord::encode_cache_entry(key, cubin) == entry);
    for (const auto& damage : chord::test::elf_damages()) {
      if (std::string(damage.name) == damage_name) REQUIRE(damage.apply(cubin));
    }
    const std::vector<char> crafted = chord::encode_cache_entry(key, cubin);
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(crafted.data(), static_cast<long>(crafted.size()));
  }
  Run first = run(env + kCli + " precompile --arch sm_90a --profile dequant");
  INFO(first.output);
  CHECK(first.exit_code == 0);
  CHECK(first.output.find("is not a usable cubin") != std::string::npos);
  CHECK(first.output.find("(2 compiled, 0 from cache)") != std::string::npos);
  Run second = run(env + kCli + " precompile --arch sm_90a --profile dequant");
  CHECK(second.exit_code == 0);
  CHECK(second.output.find("(0 compiled, 2 from cache)") != std::string::npos);
  const auto at = first.output.find("chord: ");
  report_row("cache", "any operator (first compile)",
             "cache entry with a valid checksum holding a crafted cubin (string table at a wild offset)", CHORD_SUCCESS,
             first.output.substr(at, first.output.find('\n', at) - at) + " (entry recompiled; the next run loads it)");
}
