#include "ops/w4a16_stream_k.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "launcher/driver_api.hpp"

namespace chord {
namespace {

// At most this many CTAs per SM on any GPU chord runs on: the flags region holds one per CTA of
// the largest grid.
constexpr size_t kMaxCtasPerSm = 32;
constexpr size_t kAlign = 256;

size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

struct Workspace {
  CUdeviceptr base = 0;
  size_t bytes = 0;
};

using WorkspaceKey = std::tuple<CUcontext, CUstream, uint64_t>;  // uint64_t: the thread, on CU_STREAM_PER_THREAD

struct StreamKState {
  std::mutex mutex;
  std::map<CUfunction, int> ctas_per_sm;
  std::map<WorkspaceKey, Workspace> workspaces;
  std::vector<CUdeviceptr> retired;  // outgrown, but a captured graph may still use them
};

StreamKState& state() {
  static StreamKState* s = new StreamKState;  // never destroyed: launches may run at exit
  return *s;
}

}  // namespace

std::optional<W4A16StreamKLaunch> w4a16_stream_k_launch(const DeviceContext& device, const LoadedKernel& kernel,
                                                        const W4A16GemmConfig& config, const W4A16Args& args,
                                                        CUstream stream, bool may_allocate) {
  // The tile positions the kernel scans: the grid's m tiles of whole-tile launches.
  const long long positions =
      args.mode == kW4A16Masked || args.mode == kW4A16Indexed
          ? w4a16_m_tiles(args.mode, config.block_m, args.a_rows, args.num_experts, args.num_groups, args.max_m,
                          args.capacity)
          : 0;
  if (positions <= 0 || positions > static_cast<long long>(config.threads()) * kW4A16StreamKPositionsPerThread) {
    return std::nullopt;
  }
  const DriverApi& d = driver();
  StreamKState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  int per_sm = 0;
  if (auto it = s.ctas_per_sm.find(kernel.function()); it != s.ctas_per_sm.end()) {
    per_sm = it->second;
  } else {
    CHORD_CU(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel.function(),
                                                           static_cast<int>(kernel.meta().threads),
                                                           kernel.meta().shared_bytes));
    per_sm = std::clamp(per_sm, 1, static_cast<int>(kMaxCtasPerSm));
    s.ctas_per_sm.emplace(kernel.function(), per_sm);
  }
  W4A16StreamKLaunch out;
  out.grid = static_cast<unsigned int>(device.sm_count * per_sm);
  // Every CTA's share must span at most kW4A16StreamKMaxTiles - 1 tiles (the kernel's g_min).
  if (positions > static_cast<long long>(out.grid) * (kW4A16StreamKMaxTiles - 1)) return std::nullopt;
  // Flags first, at a fixed place and size, so that a later call with another tile reads zeros.
  const size_t flag_bytes = align_up(static_cast<size_t>(device.sm_count) * kMaxCtasPerSm * sizeof(uint32_t));
  const size_t need = flag_bytes + 2ull * out.grid * static_cast<size_t>(config.block_m) *
                                       static_cast<size_t>(config.block_n) * sizeof(float);
  // CU_STREAM_PER_THREAD names a different stream on every thread.
  const uint64_t thread = stream == CU_STREAM_PER_THREAD ? std::hash<std::thread::id>{}(std::this_thread::get_id()) : 0;
  Workspace& w = s.workspaces[WorkspaceKey{device.context, stream, thread}];
  if (w.bytes < need) {
    if (!may_allocate) return std::nullopt;
    CUdeviceptr base = 0;
    if (d.cuMemAlloc(&base, need) != CUDA_SUCCESS) return std::nullopt;  // whole tiles need none
    if (d.cuMemsetD8Async(base, 0, flag_bytes, stream) != CUDA_SUCCESS) {
      d.cuMemFree(base);
      return std::nullopt;
    }
    if (w.base != 0) s.retired.push_back(w.base);
    w = Workspace{base, need};
  }
  out.flags = reinterpret_cast<void*>(w.base);
  out.workspace = reinterpret_cast<void*>(w.base + flag_bytes);
  return out;
}

}  // namespace chord
