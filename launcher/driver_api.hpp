// The CUDA Driver API, loaded lazily with dlopen("libcuda.so.1") so that the library
// loads, and its CPU tests and `chord precompile` run, on a machine with no driver.
// Each entry point is the exact versioned symbol cuda.h declares (cuMemAlloc_v2, ...).
#pragma once
#include <string>

#include <cuda.h>

namespace chord {

#define CHORD_DRIVER_FUNCTIONS(X) \
  X(cuInit)                       \
  X(cuGetErrorString)             \
  X(cuDriverGetVersion)           \
  X(cuDeviceGetCount)             \
  X(cuDeviceGet)                  \
  X(cuDeviceGetName)              \
  X(cuDeviceGetAttribute)         \
  X(cuDevicePrimaryCtxRetain)     \
  X(cuDevicePrimaryCtxGetState)   \
  X(cuCtxGetCurrent)              \
  X(cuCtxSetCurrent)              \
  X(cuCtxGetDevice)               \
  X(cuCtxSynchronize)             \
  X(cuStreamGetCtx)               \
  X(cuModuleLoadData)             \
  X(cuModuleUnload)               \
  X(cuModuleGetFunction)          \
  X(cuModuleGetGlobal)            \
  X(cuFuncSetAttribute)           \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  X(cuLaunchKernelEx)             \
  X(cuTensorMapEncodeTiled)       \
  X(cuMemAlloc)                   \
  X(cuMemFree)                    \
  X(cuMemcpyHtoD)                 \
  X(cuMemcpyHtoDAsync)            \
  X(cuMemcpyDtoH)                 \
  X(cuMemsetD8)                   \
  X(cuMemsetD8Async)              \
  X(cuStreamCreate)               \
  X(cuStreamDestroy)              \
  X(cuStreamSynchronize)          \
  X(cuStreamBeginCapture)         \
  X(cuStreamEndCapture)           \
  X(cuStreamIsCapturing)          \
  X(cuGraphInstantiateWithFlags)  \
  X(cuGraphLaunch)                \
  X(cuGraphExecDestroy)           \
  X(cuGraphDestroy)               \
  X(cuEventCreate)                \
  X(cuEventRecord)                \
  X(cuEventSynchronize)           \
  X(cuEventElapsedTime)           \
  X(cuEventDestroy)

struct DriverApi {
#define CHORD_DECLARE_DRIVER_FUNCTION(name) decltype(&::name) name = nullptr;
  CHORD_DRIVER_FUNCTIONS(CHORD_DECLARE_DRIVER_FUNCTION)
#undef CHORD_DECLARE_DRIVER_FUNCTION
};

// Whether libcuda loaded and cuInit succeeded; `why` says what went wrong otherwise.
bool driver_available(std::string* why = nullptr);

// The loaded driver; throws Error(CHORD_ERROR_NO_DRIVER) when it is unavailable.
const DriverApi& driver();

// Throws Error(CHORD_ERROR_CUDA) naming the call when result is not CUDA_SUCCESS.
void check_cuda(CUresult result, const char* call);

// Whether a failed module load (Error::cuda_result) can be the image's fault: corrupt, built for
// another GPU, missing its kernel, or an error this list does not know. The process's state (out
// of memory, no or a destroyed context, a capture in progress, a sticky error from an earlier
// kernel) is not, and must not condemn a cache entry that other GPUs and processes share.
bool cuda_error_blames_image(int result);

#define CHORD_CU(call) ::chord::check_cuda((call), #call)

}  // namespace chord
