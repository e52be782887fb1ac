// The disk-cache key of a kernel: XXH3-128 over everything that decides the cubin bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/embedded_headers.hpp"

namespace chord {

struct KernelKey {
  uint64_t high = 0;
  uint64_t low = 0;
  std::string hex() const;  // 32 lowercase hex digits
  bool operator==(const KernelKey& o) const { return high == o.high && low == o.low; }
};

// Pure function of its inputs (the tests check stability and sensitivity).
KernelKey make_kernel_key(const std::string& source, const std::vector<EmbeddedHeader>& headers,
                          const std::string& nvrtc_version, const std::vector<std::string>& options);

}  // namespace chord
