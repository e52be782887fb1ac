#include "launcher/device_context.hpp"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>

#include "core/error.hpp"
#include "launcher/driver_api.hpp"

namespace chord {
namespace {

struct DeviceProperties {
  Arch arch;
  int sm_count = 0;
};

// Every launch asks: once a device's entry is published it is read without a lock, so that
// threads launching at once do not serialize here (the mutex only orders the first fills).
const DeviceProperties& properties(CUdevice device) {
  static std::mutex mutex;
  static std::array<std::unique_ptr<DeviceProperties>, 64> owned;
  static std::array<std::atomic<const DeviceProperties*>, 64> published{};
  if (device < 0 || device >= static_cast<int>(owned.size())) {
    fail(CHORD_ERROR_UNSUPPORTED, "device ordinal {} is out of range", device);
  }
  if (const DeviceProperties* p = published[device].load(std::memory_order_acquire)) return *p;
  std::lock_guard<std::mutex> lock(mutex);
  if (!owned[device]) {
    const DriverApi& d = driver();
    int major = 0, minor = 0, sms = 0;
    CHORD_CU(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
    CHORD_CU(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
    CHORD_CU(d.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));
    owned[device] = std::make_unique<DeviceProperties>(DeviceProperties{arch_for_device(major, minor), sms});
    published[device].store(owned[device].get(), std::memory_order_release);
  }
  return *owned[device];
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
    // The kernels load into the current context; another context's stream could not run them
    // (the launch would fail at the driver, after a decode tile search had timed nothing).
    if (stream != nullptr && stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD) {
      CUcontext of_stream = nullptr;
      CHORD_CU(d.cuStreamGetCtx(stream, &of_stream));
      if (of_stream != current) {
        fail(CHORD_ERROR_INVALID_ARGUMENT,
             "the stream belongs to another CUDA context than the current one: make the stream's device current "
             "(e.g. cudaSetDevice) before calling chord");
      }
    }
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
