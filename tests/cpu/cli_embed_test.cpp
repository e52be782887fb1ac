// The `chord` CLI and the embedded kernel headers.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include "jit/embedded_headers.hpp"
#include "test_support.hpp"

using chord::test::list_dir;
using chord::test::TempDir;

namespace {

std::string run(const std::string& command, int* exit_code) {
  std::string output;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer;
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) output += buffer.data();
  int status = pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

}  // namespace

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
  std::string out = run(prefix + " precompile --arch sm_90a --profile dequant", &code);
  CHECK(code == 0);
  CHECK(out.find("2/2") != std::string::npos);  // the progress bar reached the end
  CHECK(out.find("(2 compiled, 0 from cache)") != std::string::npos);
  CHECK(list_dir(dir.path() + "/kernels").size() == 2);
  out = run(prefix + " precompile --arch sm_90a --profile dequant", &code);
  CHECK(code == 0);
  CHECK(out.find("(0 compiled, 2 from cache)") != std::string::npos);
}

TEST_CASE("cli: bad arguments fail with a clear message", "[cli]") {
  int code = 0;
  std::string out = run(std::string(CHORD_CLI_PATH) + " precompile --arch sm_42 --profile dequant", &code);
  CHECK(code != 0);
  CHECK(out.find("sm_42") != std::string::npos);
  out = run(std::string(CHORD_CLI_PATH) + " precompile --arch sm_90a --profile nonsense", &code);
  CHECK(code != 0);
  CHECK(out.find("known profiles") != std::string::npos);
  out = run(std::string(CHORD_CLI_PATH) + " frobnicate", &code);
  CHECK(code == 2);
  out = run("CHORD_JIT_DEBUG=maybe " + std::string(CHORD_CLI_PATH) + " info", &code);
  CHECK(code != 0);
  CHECK(out.find("CHORD_JIT_DEBUG") != std::string::npos);
}

TEST_CASE("cli: info prints versions, cache and GPUs", "[cli]") {
  TempDir dir;
  int code = -1;
  std::string out = run("CHORD_CACHE_DIR=" + dir.path() + " " + CHORD_CLI_PATH + " info", &code);
  CHECK(code == 0);
  CHECK(out.find("NVRTC 13.") != std::string::npos);
  CHECK(out.find("CUDA headers:") != std::string::npos);
  CHECK(out.find("cache: " + dir.path()) != std::string::npos);
  CHECK(out.find("GPUs:") != std::string::npos);
}
