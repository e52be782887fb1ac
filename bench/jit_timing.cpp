// Host-side costs of the JIT path on a GPU machine: cold NVRTC compile, disk-cache hit in
// a new process, and host time per cache-hit launch through the C API.
// Usage: chord_jit_timing            (prints one JSON object)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "chord/chord.h"
#include "jit/families/int4_dequant.hpp"
#include "launcher/device_context.hpp"
#include "launcher/driver_api.hpp"
#include "runtime/runtime.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

CUcontext make_context_current() {
  const chord::DriverApi& d = chord::driver();
  CUdevice device;
  CUcontext context;
  CHORD_CU(d.cuDeviceGet(&device, 0));
  CHORD_CU(d.cuDevicePrimaryCtxRetain(&context, device));
  CHORD_CU(d.cuCtxSetCurrent(context));
  return context;
}

// Compile (or load from disk) and load the dequant kernel into the context: ms.
double get_kernel_ms(const std::string& cache_dir) {
  chord::DeviceContext device = chord::current_device_context(nullptr);
  auto start = Clock::now();
  chord::JitRuntime runtime(cache_dir);
  runtime.kernel(chord::Int4DequantConfig{}.descriptor(device.arch), device.context);
  return ms_since(start);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    make_context_current();
    if (argc == 3 && std::string(argv[1]) == "--disk-hit") {  // the child process
      std::printf("%.3f\n", get_kernel_ms(argv[2]));
      return 0;
    }
    char pattern[] = "/tmp/chord-timing-XXXXXX";
    std::string dir = mkdtemp(pattern);
    double cold_ms = get_kernel_ms(dir);

    std::string command = std::string(argv[0]) + " --disk-hit " + dir;
    FILE* child = popen(command.c_str(), "r");
    double disk_hit_ms = -1;
    if (child == nullptr || std::fscanf(child, "%lf", &disk_hit_ms) != 1) disk_hit_ms = -1;
    if (child != nullptr) pclose(child);

    // Cache-hit launches: a tiny problem so the GPU never backs up the launch queue.
    const chord::DriverApi& d = chord::driver();
    CUdeviceptr weight, scales, out;
    CHORD_CU(d.cuMemAlloc(&weight, 64 * 8 * 4));
    CHORD_CU(d.cuMemAlloc(&scales, 64 * 2 * 2));
    CHORD_CU(d.cuMemAlloc(&out, 64 * 64 * 2));
    CHORD_CU(d.cuMemsetD8(weight, 0x35, 64 * 8 * 4));
    CHORD_CU(d.cuMemsetD8(scales, 0x3c, 64 * 2 * 2));
    CUstream stream;
    CHORD_CU(d.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    auto call = [&] {
      chord_status_t s = chord_int4_dequantize_compressed(reinterpret_cast<void*>(weight), reinterpret_cast<void*>(scales),
                                                          reinterpret_cast<void*>(out), 1, 64, 64, stream);
      if (s != CHORD_SUCCESS) {
        std::fprintf(stderr, "launch failed: %s\n", chord_last_error());
        std::exit(1);
      }
    };
    for (int i = 0; i < 100; ++i) call();
    CHORD_CU(d.cuStreamSynchronize(stream));
    std::vector<double> per_call_us;
    for (int batch = 0; batch < 50; ++batch) {
      const int calls = 200;
      auto start = Clock::now();
      for (int i = 0; i < calls; ++i) call();
      per_call_us.push_back(ms_since(start) * 1000.0 / calls);
      CHORD_CU(d.cuStreamSynchronize(stream));
    }
    std::sort(per_call_us.begin(), per_call_us.end());
    std::printf("{\"cold_compile_and_load_ms\": %.1f, \"disk_hit_new_process_ms\": %.2f, "
                "\"launch_host_us_median\": %.2f, \"launch_host_us_min\": %.2f}\n",
                cold_ms, disk_hit_ms, per_call_us[per_call_us.size() / 2], per_call_us.front());
    std::system(("rm -rf '" + dir + "'").c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chord_jit_timing: %s\n", e.what());
    return 1;
  }
}
