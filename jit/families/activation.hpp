// Kernel family: the MoE activation pass (kernels_src/activation.cuh) with the caller's
// expression compiled in. The descriptor holds the expression's 64-bit hash; the text
// itself lives in a process-wide registry, so the launch path never rebuilds source, and
// the disk cache key (which hashes the generated source) covers the text.
#pragma once
#include <cstdint>
#include <string>

#include "jit/kernel_descriptor.hpp"
#include "jit/kernel_source.hpp"

namespace chord {

// Checks that `text` is one expression in `float a, b` that cannot reach outside the
// function it is compiled into (printable ASCII, balanced brackets, no preprocessor, no
// quotes or backslashes, at most kMaxActivationExpression bytes), registers it and returns
// its hash. Registering the same text again is cheap and returns the same hash.
constexpr size_t kMaxActivationExpression = 4096;
uint64_t register_activation_expression(const std::string& text);

struct ActivationConfig {
  int kind = 0;   // ActivationKind (kernels_src/activation_args.cuh)
  int dtype = 0;  // CHORD_DTYPE_BF16 / CHORD_DTYPE_FP16
  int threads = 128;
  uint64_t expression_hash = 0;

  KernelDescriptor descriptor(const Arch& arch) const;
  static ActivationConfig from(const KernelDescriptor& descriptor);
  KernelSource source() const;
};

}  // namespace chord
