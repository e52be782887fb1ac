// Where the CUDA headers for NVRTC come from: $CUDA_HOME, /usr/local/cuda, or the pip
// nvidia-cuda-runtime package. chord's kernels include none of them today; the folder is
// passed to NVRTC so that kernels may, and `chord info` says which one was found.
#pragma once
#include <string>

namespace chord {

struct CudaHeaders {
  std::string include_dir;  // empty when none was found
  std::string origin;       // "CUDA_HOME", "/usr/local/cuda", "pip nvidia-cuda-runtime", "none"
};

const CudaHeaders& cuda_headers();

}  // namespace chord
