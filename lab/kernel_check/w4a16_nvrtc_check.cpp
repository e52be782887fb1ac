// Compiles W4A16 instantiations through NVRTC with no include path other than kernels_src/
// (no CUDA headers), for sm_80, sm_90a and sm_100a, and prints per-kernel resource usage.
// Build: g++ -std=c++17 -I/usr/local/cuda/include lab/kernel_check/w4a16_nvrtc_check.cpp \
//          -L/usr/local/cuda/lib64 -lnvrtc -o /tmp/nvrtc_chk && /tmp/nvrtc_chk kernels_src
#include <nvrtc.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "kernels_src";
  const char* names[] = {"w4a16_args.cuh", "weight_kind_args.cuh", "nf4_args.cuh", "ptx.cuh", "w4a16_layout.cuh",
                         "w4a16_decode.cuh", "w4a16_schedule.cuh", "w4a16_gemm.cuh", "w4a16_pack.cuh"};
  std::vector<std::string> bodies;
  std::vector<const char*> hdrs, hnames;
  for (const char* n : names) bodies.push_back(slurp(dir + "/" + n));
  for (size_t i = 0; i < bodies.size(); ++i) {
    hdrs.push_back(bodies[i].c_str());
    hnames.push_back(names[i]);
  }
  std::string src = "#include \"w4a16_gemm.cuh\"\n#include \"w4a16_pack.cuh\"\n";
  const char* cfgs[] = {"8, 128, 128, 4, 1, 4", "16, 64, 128, 4, 1, 2", "128, 128, 64, 4, 2, 4", "64, 256, 64, 3, 2, 4"};
  int id = 0;
  for (int mode = 0; mode < 4; ++mode)
    for (const char* c : cfgs) {
      src += "extern \"C\" __global__ void k" + std::to_string(id++) + "(const __grid_constant__ chord::W4A16Args args) { chord::w4a16_gemm_body<" +
             std::to_string(mode) + ", " + c + ">(args); }\n";
    }
  src += "extern \"C\" __global__ void pack0(const __grid_constant__ chord::W4A16PackArgs a) { chord::w4a16_pack_body<0>(a); }\n";
  src += "extern \"C\" __global__ void pack1(const __grid_constant__ chord::W4A16PackArgs a) { chord::w4a16_pack_body<1>(a); }\n";
  src += "extern \"C\" __global__ void unpack(const __grid_constant__ chord::W4A16UnpackArgs a) { chord::w4a16_unpack_body(a); }\n";
  int fails = 0;
  for (const char* arch : {"sm_80", "sm_90a", "sm_100a"}) {
    nvrtcProgram prog;
    nvrtcCreateProgram(&prog, src.c_str(), "w4a16_inst.cu", (int)hdrs.size(), hdrs.data(), hnames.data());
    std::string a = std::string("-arch=") + arch;
    const char* opts[] = {"-std=c++17", a.c_str(), "-Xptxas=-v"};
    nvrtcResult r = nvrtcCompileProgram(prog, 3, opts);
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, &log[0]);
    size_t cubin = 0;
    if (r == NVRTC_SUCCESS) nvrtcGetCUBINSize(prog, &cubin);
    std::printf("== %s: %s (cubin %zu bytes)\n%s\n", arch, nvrtcGetErrorString(r), cubin, log.c_str());
    fails += r != NVRTC_SUCCESS;
    nvrtcDestroyProgram(&prog);
  }
  return fails;
}
