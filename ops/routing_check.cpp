#include "ops/routing_check.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "jit/families/routing_check.hpp"
#include "kernels_src/routing_check_args.cuh"
#include "launcher/device_context.hpp"
#include "launcher/driver_api.hpp"
#include "runtime/runtime.hpp"

namespace chord {
namespace {

constexpr const char* kViolationGlobal = "chord_routing_violation";

const char* violation_text(int code) {
  switch (code) {
    case kRoutingPaddedOverCapacity: return "num_tokens_padded is negative or exceeds the capacity of sorted_ids";
    case kRoutingNegativeRouteId: return "sorted_ids holds a negative route id";
    case kRoutingExpertOutOfRange: return "an expert id is outside [-1, E)";
    case kRoutingMaskedOutOfRange: return "masked_m is negative or exceeds max_m";
    case kRoutingOffsetsDecreasing: return "offsets decrease (or start below 0)";
    case kRoutingOffsetsOverRows: return "the last offset exceeds the rows of the activations";
    case kRoutingSegmentMisaligned: return "an expert segment does not start at a multiple of the contiguous alignment";
  }
  return "unknown violation";
}

const char* tensor_name(int mode) {
  switch (mode) {
    case kW4A16Contiguous: return "m_indices";
    case kW4A16Masked: return "masked_m";
    case kW4A16Offsets: return "offsets";
    case kW4A16Indexed: return "sorted_ids/expert_ids/num_tokens_padded";
  }
  return "routing";
}

const LoadedKernel& check_kernel(const DeviceContext& device) {
  return JitRuntime::global().kernel(RoutingCheckConfig{}.descriptor(device.arch), device.context);
}

}  // namespace

void enqueue_routing_check(const W4A16Args& args, CUstream stream) {
  RoutingCheckArgs check{};
  check.mode = args.mode;
  check.num_experts = args.num_experts;
  switch (args.mode) {
    case kW4A16Indexed:
      check.ids = args.sorted_ids;
      check.expert_ids = args.expert_ids;
      check.num_tokens_padded = args.num_tokens_padded;
      check.count = args.capacity;
      check.block_size = args.block_size;
      break;
    case kW4A16Contiguous:
      check.ids = args.m_indices;
      check.count = args.a_rows;
      check.block_size = kW4A16ContiguousAlign;
      break;
    case kW4A16Masked:
      check.ids = args.masked_m;
      check.count = args.num_groups;
      check.limit = args.max_m;
      break;
    default:
      check.ids = args.offsets;
      check.count = args.num_experts;
      check.limit = args.a_rows;
      break;
  }
  const DeviceContext device = current_device_context(stream);
  const int threads = RoutingCheckConfig::kThreads;
  const uint32_t blocks = static_cast<uint32_t>(std::max(1, std::min(1024, (check.count + threads - 1) / threads)));
  check_kernel(device).launch(LaunchGrid{blocks, 1, 1}, stream, &check);
}

void routing_check_report(chord_routing_report_t* report) {
  const DeviceContext device = current_device_context(nullptr);
  const DriverApi& d = driver();
  const CUdeviceptr flag = check_kernel(device).global(kViolationGlobal);
  CHORD_CU(d.cuCtxSynchronize());
  int32_t found[4] = {0, 0, 0, 0};
  CHORD_CU(d.cuMemcpyDtoH(found, flag, sizeof found));
  const int32_t clear[4] = {0, 0, 0, 0};
  CHORD_CU(d.cuMemcpyHtoD(flag, clear, sizeof clear));
  if (report != nullptr) *report = chord_routing_report_t{found[0], found[1], found[2], found[3]};
  if (found[0] != 0) {
    fail(CHORD_ERROR_INVALID_ARGUMENT, "routing check: {} ({}[{}] = {})", violation_text(found[0]),
         tensor_name(found[3]), found[1], found[2]);
  }
}

}  // namespace chord
