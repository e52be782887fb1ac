#include "launcher/kernel_module.hpp"

#include "core/error.hpp"
#include "launcher/driver_api.hpp"

namespace chord {

LoadedKernel::LoadedKernel(const std::vector<char>& cubin, const KernelMeta& meta, CUcontext context)
    : meta_(meta) {
  const DriverApi& d = driver();
  CUcontext previous = nullptr;
  CHORD_CU(d.cuCtxGetCurrent(&previous));
  if (previous != context) CHORD_CU(d.cuCtxSetCurrent(context));
  CUresult loaded = d.cuModuleLoadData(&module_, cubin.data());
  if (previous != context) d.cuCtxSetCurrent(previous);
  CHORD_CU(loaded);
  CHORD_CU(d.cuModuleGetFunction(&function_, module_, kEntryPoint));
  if (meta_.shared_bytes > 0) {
    CHORD_CU(d.cuFuncSetAttribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  static_cast<int>(meta_.shared_bytes)));
  }
}

LoadedKernel::~LoadedKernel() {
  // Modules live as long as the process: unloading during exit races driver teardown.
}

CUdeviceptr LoadedKernel::global(const char* name) const {
  CUdeviceptr address = 0;
  size_t bytes = 0;
  CHORD_CU(driver().cuModuleGetGlobal(&address, &bytes, module_, name));
  return address;
}

void LoadedKernel::launch(const LaunchGrid& grid, CUstream stream, const void* args) const {
  CUlaunchConfig config = {};
  config.gridDimX = grid.x;
  config.gridDimY = grid.y;
  config.gridDimZ = grid.z;
  config.blockDimX = meta_.threads;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = meta_.shared_bytes;
  config.hStream = stream;
  CUlaunchAttribute attributes[1];
  if (meta_.cluster_size > 1) {
    attributes[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attributes[0].value.clusterDim.x = meta_.cluster_size;
    attributes[0].value.clusterDim.y = 1;
    attributes[0].value.clusterDim.z = 1;
    config.attrs = attributes;
    config.numAttrs = 1;
  }
  void* params[] = {const_cast<void*>(args)};
  CHORD_CU(driver().cuLaunchKernelEx(&config, function_, params, nullptr));
}

}  // namespace chord
