#include "launcher/driver_api.hpp"

#include <dlfcn.h>
#include <mutex>

#include "jit/error.hpp"

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
    using GetProcAddress = decltype(&::cuGetProcAddress);
    auto get_proc = reinterpret_cast<GetProcAddress>(dlsym(handle, "cuGetProcAddress_v2"));
    if (get_proc == nullptr) {
      loaded.error = "the CUDA driver is too old: cuGetProcAddress_v2 is missing (need a CUDA 12+ driver)";
      return;
    }
    std::string missing;
#define CHORD_RESOLVE_DRIVER_FUNCTION(name)                                                          \
  {                                                                                                  \
    void* fn = nullptr;                                                                              \
    CUdriverProcAddressQueryResult status;                                                           \
    if (get_proc(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS || \
        fn == nullptr) {                                                                             \
      missing += std::string(" ") + #name;                                                           \
    }                                                                                                \
    loaded.api.name = reinterpret_cast<decltype(loaded.api.name)>(fn);                               \
  }
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
  fail(CHORD_ERROR_CUDA, "CUDA call {} failed: {} ({})", call, text ? text : "unknown error", static_cast<int>(result));
}

}  // namespace chord
