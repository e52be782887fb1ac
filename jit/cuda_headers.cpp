#include "jit/cuda_headers.hpp"

#include <cstdlib>
#include <sys/stat.h>

namespace chord {
namespace {

bool has_cuda_h(const std::string& dir) {
  struct stat st;
  return !dir.empty() && stat((dir + "/cuda.h").c_str(), &st) == 0;
}

CudaHeaders find() {
  if (const char* home = std::getenv("CUDA_HOME")) {
    if (has_cuda_h(std::string(home) + "/include")) return {std::string(home) + "/include", "CUDA_HOME"};
  }
  if (has_cuda_h("/usr/local/cuda/include")) return {"/usr/local/cuda/include", "/usr/local/cuda"};
  // pip wheels: site-packages/nvidia/cuda_runtime/include (CUDA 12) or nvidia/cu13/include.
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    if (const char* prefix = std::getenv(var)) {
      for (const char* py : {"python3.10", "python3.11", "python3.12", "python3.13"}) {
        for (const char* sub : {"nvidia/cu13/include", "nvidia/cuda_runtime/include"}) {
          std::string dir = std::string(prefix) + "/lib/" + py + "/site-packages/" + sub;
          if (has_cuda_h(dir)) return {dir, "pip nvidia-cuda-runtime"};
        }
      }
    }
  }
  return {"", "none"};
}

}  // namespace

const CudaHeaders& cuda_headers() {
  static const CudaHeaders headers = find();
  return headers;
}

}  // namespace chord
