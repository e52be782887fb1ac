#include "launcher/driver_api.hpp"

#include <dlfcn.h>
#include <mutex>

#include "core/error.hpp"

namespace chord {
namespace {

struct LoadedDriver {
  DriverApi api;
  bool ok = false;
  std::string error;
};

const LoadedDriver& load() {
  static LoadedDriver loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      loaded.error = fmt::format("the CUDA driver (libcuda.so.1) could not be loaded: {}", dlerror());
      return;
    }
    // Resolve the exact symbol cuda.h maps each name to (cuMemAlloc -> cuMemAlloc_v2), so
    // every pointer has the ABI of the declaration we call it through. (cuGetProcAddress
    // by base name may return a newer version with another signature: cuCtxGetDevice_v2.)
    std::string missing;
#define CHORD_STRINGIFY_EXPANDED(x) CHORD_STRINGIFY(x)
#define CHORD_STRINGIFY(x) #x
#define CHORD_RESOLVE_DRIVER_FUNCTION(name)                                            \
  loaded.api.name = reinterpret_cast<decltype(loaded.api.name)>(                       \
      dlsym(handle, CHORD_STRINGIFY_EXPANDED(name)));                                  \
  if (loaded.api.name == nullptr) missing += std::string(" ") + CHORD_STRINGIFY_EXPANDED(name);
    CHORD_DRIVER_FUNCTIONS(CHORD_RESOLVE_DRIVER_FUNCTION)
#undef CHORD_RESOLVE_DRIVER_FUNCTION
    if (!missing.empty()) {
      loaded.error = "the CUDA driver lacks entry points chord needs:" + missing;
      return;
    }
    CUresult init = loaded.api.cuInit(0);
    if (init != CUDA_SUCCESS) {
      const char* text = nullptr;
      loaded.api.cuGetErrorString(init, &text);
      loaded.error = fmt::format("cuInit failed: {} (no usable GPU?)", text ? text : "unknown error");
      return;
    }
    loaded.ok = true;
  });
  return loaded;
}

}  // namespace

bool driver_available(std::string* why) {
  const LoadedDriver& d = load();
  if (!d.ok && why != nullptr) *why = d.error;
  return d.ok;
}

const DriverApi& driver() {
  const LoadedDriver& d = load();
  if (!d.ok) throw Error(CHORD_ERROR_NO_DRIVER, d.error);
  return d.api;
}

void check_cuda(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  const char* text = nullptr;
  if (driver_available()) driver().cuGetErrorString(result, &text);
  throw Error(CHORD_ERROR_CUDA,
              fmt::format("CUDA call {} failed: {} ({})", call, text ? text : "unknown error", static_cast<int>(result)),
              static_cast<int>(result));
}

bool cuda_error_blames_image(int result) {
  switch (static_cast<CUresult>(result)) {
    case CUDA_ERROR_OUT_OF_MEMORY:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_SYSTEM_NOT_READY:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_EXTERNAL_DEVICE:
    case CUDA_ERROR_MPS_CONNECTION_FAILED:
    case CUDA_ERROR_MPS_RPC_FAILURE:
    case CUDA_ERROR_MPS_SERVER_NOT_READY:
    case CUDA_ERROR_MPS_MAX_CLIENTS_REACHED:
    case CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED:
    case CUDA_ERROR_MPS_CLIENT_TERMINATED:
      return false;
    default:
      return true;
  }
}

}  // namespace chord
