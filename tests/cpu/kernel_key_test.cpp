#include <catch2/catch.hpp>

#include "cache/kernel_key.hpp"
#include "core/arch.hpp"
#include "core/embedded_headers.hpp"
#include "jit/compiler.hpp"

using chord::EmbeddedHeader;
using chord::make_kernel_key;

namespace {
const std::vector<EmbeddedHeader> kHeaders = {{"a.cuh", "int a;"}, {"b.cuh", "int b;"}};
const std::vector<std::string> kOptions = {"-std=c++17", "--gpu-architecture=sm_90a"};
}  // namespace

TEST_CASE("kernel key: same inputs give the same key", "[key]") {
  auto k1 = make_kernel_key("source", kHeaders, "13.0", kOptions);
  auto k2 = make_kernel_key("source", kHeaders, "13.0", kOptions);
  CHECK(k1 == k2);
  CHECK(k1.hex().size() == 32);
  CHECK(k1.hex() == k2.hex());
}

TEST_CASE("kernel key: a source change changes the key", "[key]") {
  CHECK_FALSE(make_kernel_key("source", kHeaders, "13.0", kOptions) ==
              make_kernel_key("source ", kHeaders, "13.0", kOptions));
}

TEST_CASE("kernel key: an option or arch change changes the key", "[key]") {
  auto base = make_kernel_key("s", kHeaders, "13.0", kOptions);
  CHECK_FALSE(base == make_kernel_key("s", kHeaders, "13.0", {"-std=c++17", "--gpu-architecture=sm_100a"}));
  CHECK_FALSE(base == make_kernel_key("s", kHeaders, "13.0", {"-std=c++17", "--gpu-architecture=sm_90a", "-lineinfo"}));
  CHECK_FALSE(base == make_kernel_key("s", kHeaders, "13.0", {"-std=c++17"}));
}

TEST_CASE("kernel key: header contents and NVRTC version are part of the key", "[key]") {
  auto base = make_kernel_key("s", kHeaders, "13.0", kOptions);
  std::vector<EmbeddedHeader> edited = {{"a.cuh", "int a; "}, {"b.cuh", "int b;"}};
  CHECK_FALSE(base == make_kernel_key("s", edited, "13.0", kOptions));
  CHECK_FALSE(base == make_kernel_key("s", kHeaders, "13.1", kOptions));
}

TEST_CASE("kernel key: field boundaries matter", "[key]") {
  CHECK_FALSE(make_kernel_key("s", kHeaders, "13.0", {"ab", "c"}) ==
              make_kernel_key("s", kHeaders, "13.0", {"a", "bc"}));
}

TEST_CASE("kernel key: where the CUDA toolkit is installed is not part of it", "[key]") {
  // Kernels precompiled on one machine (the wheel's read-only layer) must be hits on a machine
  // whose toolkit lives elsewhere: the include folder reaches NVRTC but not the key's options.
  chord::CompileRequest request{"k", "extern \"C\" __global__ void k() {}", chord::parse_arch("sm_90a"), {}};
  for (const std::string& option : chord::nvrtc_options(request)) {
    CHECK(option.rfind("--include-path", 0) == std::string::npos);
    CHECK(option.find("/usr/local/cuda") == std::string::npos);
  }
}
