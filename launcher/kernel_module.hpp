// A cubin loaded into one CUDA context, and the launch of its entry point.
#pragma once
#include <cstdint>
#include <vector>

#include <cuda.h>

#include "core/cubin_info.hpp"

namespace chord {

// Every generated source defines its kernel under this name.
inline constexpr const char* kEntryPoint = "chord_entry";

struct LaunchGrid {
  uint32_t x = 1, y = 1, z = 1;
};

class LoadedKernel {
 public:
  // Loads the cubin into `context` and raises the function's dynamic shared-memory limit
  // once, here, so that launches need no attribute calls.
  LoadedKernel(const std::vector<char>& cubin, const KernelMeta& meta, CUcontext context);
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;

  // cuLaunchKernelEx on `stream` with the kernel's one by-value argument struct.
  // No allocation, no host synchronization.
  void launch(const LaunchGrid& grid, CUstream stream, const void* args) const;

  // Device address of a module global (e.g. a flag a kernel writes).
  CUdeviceptr global(const char* name) const;

  const KernelMeta& meta() const { return meta_; }
  CUfunction function() const { return function_; }

 private:
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  KernelMeta meta_;
};

}  // namespace chord
