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

// Device 0's primary context if it is active (retained once per process, as the runtime
// retains it once), else nullptr.
CUcontext active_primary_context_of_device_0() {
  const DriverApi& d = driver();
  CUdevice first = 0;
  unsigned int flags = 0;
  int active = 0;
  if (d.cuDeviceGet(&first, 0) != CUDA_SUCCESS || d.cuDevicePrimaryCtxGetState(first, &flags, &active) != CUDA_SUCCESS ||
      !active) {
    return nullptr;
  }
  static std::mutex mutex;
  static CUcontext retained = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (retained == nullptr) CHORD_CU(d.cuDevicePrimaryCtxRetain(&retained, first));
  return retained;
}

}  // namespace

DeviceContext current_device_context(CUstream stream) {
  const DriverApi& d = driver();
  DeviceContext dc;
  CUcontext current = nullptr;
  CHORD_CU(d.cuCtxGetCurrent(&current));
  const bool real_stream = stream != nullptr && stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD;
  CUcontext of_stream = nullptr;
  if (real_stream) CHORD_CU(d.cuStreamGetCtx(stream, &of_stream));
  if (current == nullptr) {
    // A thread that has no current context yet (a fresh thread whose CUDA runtime calls made
    // none current: torch skips cudaSetDevice when its device index is already 0): the stream's
    // context, else device 0's primary one where the process already uses it (the CUDA
    // runtime's default device; never created here), made current as the runtime's first call
    // on the thread would. Kernel loads and the decode tile search's allocations need it.
    CUcontext adopt = real_stream ? of_stream : active_primary_context_of_device_0();
    if (adopt == nullptr) {
      fail(CHORD_ERROR_CUDA, "no current CUDA context: make a device current (e.g. cudaSetDevice) before calling chord");
    }
    CHORD_CU(d.cuCtxSetCurrent(adopt));
    current = adopt;
  }
  dc.context = current;
  // The kernels load into the current context; another context's stream could not run them
  // (the launch would fail at the driver, after a decode tile search had timed nothing).
  if (real_stream && of_stream != current) {
    fail(CHORD_ERROR_INVALID_ARGUMENT,
         "the stream belongs to another CUDA context than the current one: make the stream's device current "
         "(e.g. cudaSetDevice) before calling chord");
  }
  CHORD_CU(d.cuCtxGetDevice(&dc.device));
  const DeviceProperties& p = properties(dc.device);
  dc.arch = p.arch;
  dc.sm_count = p.sm_count;
  return dc;
}

}  // namespace chord
