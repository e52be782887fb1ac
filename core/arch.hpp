// A GPU target: compute capability plus the arch-specific ('a') feature set.
#pragma once
#include <string>

namespace chord {

struct Arch {
  int major = 0;
  int minor = 0;
  bool family_specific = false;  // sm_90a, sm_100a: wgmma / tcgen05 need it

  int sm() const { return major * 10 + minor; }
  std::string name() const;      // "sm_90a"
  bool operator==(const Arch& o) const {
    return major == o.major && minor == o.minor && family_specific == o.family_specific;
  }
};

// Parses "sm_80", "sm_90a", "sm_100a", "sm_103a", "sm_120a"; throws on anything else.
Arch parse_arch(const std::string& name);

// The target chord compiles for on a device of compute capability major.minor:
// the arch-specific variant where one exists (9.0 -> sm_90a, 10.x -> sm_10xa).
Arch arch_for_device(int major, int minor);

// The most dynamic shared memory one CTA may opt into on a GPU of this arch (the driver's
// CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN): 227 KiB on sm_90 / sm_100 / sm_103,
// 163 KiB on sm_80, 99 KiB on sm_86 / sm_89 / sm_120. A kernel that asks for more fails to load.
int max_shared_bytes_per_block(const Arch& arch);

// Arches chord knows how to compile for (CI compiles every template for each).
const char* const* supported_arch_names();  // null-terminated list

}  // namespace chord
