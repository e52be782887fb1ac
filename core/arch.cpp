#include "core/arch.hpp"

#include "core/error.hpp"

namespace chord {

namespace {
const char* const kSupported[] = {"sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a", "sm_103a", "sm_120a", nullptr};
}

std::string Arch::name() const { return fmt::format("sm_{}{}", sm(), family_specific ? "a" : ""); }

Arch parse_arch(const std::string& name) {
  // Only names of the supported list parse, so "sm_" + digits + optional "a" is all there
  // is: the last digit is the minor version. (No std::regex: its compiler crashed inside
  // a torch process on the GPU machine, a libstdc++ locale mismatch.)
  for (const char* const* s = kSupported; *s != nullptr; ++s) {
    if (name != *s) continue;
    const bool family = name.back() == 'a';
    const std::string digits = name.substr(3, name.size() - 3 - (family ? 1 : 0));
    return Arch{std::stoi(digits.substr(0, digits.size() - 1)), digits.back() - '0', family};
  }
  fail(CHORD_ERROR_UNSUPPORTED, "arch '{}' is not supported; supported: sm_80, sm_86, sm_89, sm_90a, sm_100a, sm_103a, sm_120a",
       name);
}

Arch arch_for_device(int major, int minor) {
  if (major < 8) {
    fail(CHORD_ERROR_UNSUPPORTED, "GPU compute capability {}.{} is not supported: chord needs 8.0 or newer",
         major, minor);
  }
  bool family = (major == 9 && minor == 0) || major == 10 || major == 12;
  return Arch{major, minor, family};
}

int max_shared_bytes_per_block(const Arch& arch) {
  switch (arch.sm()) {
    case 80: return 163 * 1024;
    case 90:
    case 100:
    case 103: return 227 * 1024;
    default: return 99 * 1024;  // sm_86, sm_89, sm_120 (and the smallest of any other)
  }
}

const char* const* supported_arch_names() { return kSupported; }

}  // namespace chord
