#include "jit/families/l2_flush.hpp"

#include <string>

namespace chord {
namespace {
const bool kRegistered =
    register_source_generator(KernelFamily::kL2Flush, [](const KernelDescriptor&) { return L2FlushConfig{}.source(); });
}  // namespace

KernelDescriptor L2FlushConfig::descriptor(const Arch& arch) const {
  KernelDescriptor d;
  d.family = KernelFamily::kL2Flush;
  d.arch = arch;
  return d;
}

KernelSource L2FlushConfig::source() const {
  KernelSource s;
  s.name = "l2_flush";
  s.text = entry_point_source("l2_flush.cuh", std::to_string(kThreads), "L2FlushArgs", "chord::l2_flush_body");
  s.text += kernel_meta_definition(KernelMeta{static_cast<uint32_t>(kThreads), 0, 1});
  return s;
}

}  // namespace chord
