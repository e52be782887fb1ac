#include "launcher/device_context.hpp"

#include <array>
#include <mutex>

#include "core/error.hpp"
#include "launcher/driver_api.hpp"

namespace chord {
namespace {

struct DeviceProperties {
  Arch arch;
  int sm_count = 0;
};

const DeviceProperties& properties(CUdevice device) {
  static std::mutex mutex;
  static std::array<std::unique_ptr<DeviceProperties>, 64> table;
  if (device < 0 || device >= static_cast<int>(table.size())) {
    fail(CHORD_ERROR_UNSUPPORTED, "device ordinal {} is out of range", device);
  }
  std::lock_guard<std::mutex> lock(mutex);
  auto& entry = table[device];
  if (!entry) {
    const DriverApi& d = driver();
    int major = 0, minor = 0, sms = 0;
    CHORD_CU(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
    CHORD_CU(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
    CHORD_CU(d.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));
    entry = std::make_unique<DeviceProperties>(DeviceProperties{arch_for_device(major, minor), sms});
  }
  return *entry;
}

}  // namespace

DeviceContext current_device_context(CUstream stream) {
  const DriverApi& d = driver();
  DeviceContext dc;
  CUcontext current = nullptr;
  CHORD_CU(d.cuCtxGetCurrent(&current));
  dc.context = current;
  if (dc.context == nullptr && stream != nullptr) CHORD_CU(d.cuStreamGetCtx(stream, &dc.context));
  if (dc.context == nullptr) {
    fail(CHORD_ERROR_CUDA, "no current CUDA context: make a device current (e.g. cudaSetDevice) before calling chord");
  }
  if (current == dc.context) {
    CHORD_CU(d.cuCtxGetDevice(&dc.device));
  } else {  // only the stream named a context: ask it, then restore the caller's state
    CHORD_CU(d.cuCtxSetCurrent(dc.context));
    CUresult got = d.cuCtxGetDevice(&dc.device);
    d.cuCtxSetCurrent(current);
    CHORD_CU(got);
  }
  const DeviceProperties& p = properties(dc.device);
  dc.arch = p.arch;
  dc.sm_count = p.sm_count;
  return dc;
}

}  // namespace chord
