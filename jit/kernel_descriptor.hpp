// What identifies one compiled kernel: family, arch and the family's template arguments.
// The in-memory memo is keyed by this small value, so the launch path never builds or
// hashes source text.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/arch.hpp"

namespace chord {

enum class KernelFamily : int32_t {
  kInt4Dequant = 1,
  kW4A16Gemm = 2,
  kW4A16Pack = 3,
  kW4A16Unpack = 4,
  kRoutingCheck = 5,
  kNF4Pack = 6,
  kNF4Dequant = 7,
  kActivation = 8,
  kL2Flush = 9,
};

struct KernelDescriptor {
  KernelFamily family{};
  Arch arch;
  std::array<int32_t, 12> params{};  // meaning defined by the family (jit/families/)

  bool operator==(const KernelDescriptor& o) const {
    return family == o.family && arch == o.arch && params == o.params;
  }
};

struct KernelDescriptorHash {
  size_t operator()(const KernelDescriptor& d) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(static_cast<uint64_t>(d.family));
    mix(static_cast<uint64_t>(d.arch.sm() * 2 + (d.arch.family_specific ? 1 : 0)));
    for (int32_t p : d.params) mix(static_cast<uint32_t>(p));
    return static_cast<size_t>(h);
  }
};

}  // namespace chord
