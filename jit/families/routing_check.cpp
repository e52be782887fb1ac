#include "jit/families/routing_check.hpp"

#include <fmt/format.h>

namespace chord {
namespace {
const bool kRegistered = register_source_generator(
    KernelFamily::kRoutingCheck, [](const KernelDescriptor&) { return RoutingCheckConfig{}.source(); });
}  // namespace

KernelDescriptor RoutingCheckConfig::descriptor(const Arch& arch) const {
  KernelDescriptor d;
  d.family = KernelFamily::kRoutingCheck;
  d.arch = arch;
  return d;
}

KernelSource RoutingCheckConfig::source() const {
  KernelSource s;
  s.name = "routing_check";
  s.text = entry_point_source("routing_check.cuh", std::to_string(kThreads), "RoutingCheckArgs",
                              "chord::routing_check_body");
  s.text += kernel_meta_definition(KernelMeta{static_cast<uint32_t>(kThreads), 0, 1});
  return s;
}

}  // namespace chord
