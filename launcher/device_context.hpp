// The context and device a call runs on, with the device properties chord needs,
// looked up once per device.
#pragma once
#include <cuda.h>

#include "core/arch.hpp"

namespace chord {

struct DeviceContext {
  CUcontext context = nullptr;
  CUdevice device = 0;
  Arch arch;
  int sm_count = 0;
};

// The current context (or the stream's, when none is current). Throws a clear error when
// there is no driver, no context, or the GPU's arch is not supported.
DeviceContext current_device_context(CUstream stream);

}  // namespace chord
