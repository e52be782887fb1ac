#include "jit/families/routing_check.hpp"

#include <fmt/format.h>

namespace chord {

KernelDescriptor RoutingCheckConfig::descriptor(const Arch& arch) const {
  KernelDescriptor d;
  d.family = KernelFamily::kRoutingCheck;
  d.arch = arch;
  return d;
}

KernelSource RoutingCheckConfig::source() const {
  KernelSource s;
  s.name = "routing_check";
  s.text = fmt::format(R"(#include "routing_check.cuh"

extern "C" __global__ void __launch_bounds__({threads}) chord_entry(const __grid_constant__ chord::RoutingCheckArgs args) {{
  chord::routing_check_body(args);
}}
)",
                       fmt::arg("threads", kThreads));
  s.text += kernel_meta_definition(KernelMeta{static_cast<uint32_t>(kThreads), 0, 1});
  return s;
}

}  // namespace chord
