#include "jit/arch.hpp"

#include <regex>

#include "jit/error.hpp"

namespace chord {

namespace {
const char* const kSupported[] = {"sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a", "sm_103a", "sm_120a", nullptr};
}

std::string Arch::name() const { return fmt::format("sm_{}{}", sm(), family_specific ? "a" : ""); }

Arch parse_arch(const std::string& name) {
  for (const char* const* s = kSupported; *s != nullptr; ++s) {
    if (name == *s) {
      static const std::regex pattern("sm_([0-9]+)([0-9])(a?)");
      std::smatch m;
      std::regex_match(name, m, pattern);
      return Arch{std::stoi(m[1].str()), std::stoi(m[2].str()), !m[3].str().empty()};
    }
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

const char* const* supported_arch_names() { return kSupported; }

}  // namespace chord
