// GPU tests: exit 77 (ctest: skipped) with a message when no GPU is usable.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "gpu_support.hpp"
#include "reference/bf16.hpp"

namespace chord::test {
std::vector<uint16_t> random_scales(size_t count, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<uint16_t> scales(count);
  for (auto& s : scales) s = ref::float_to_bf16(dist(rng));
  return scales;
}
}  // namespace chord::test

int main(int argc, char** argv) {
  std::string why;
  if (!chord::driver_available(&why)) {
    std::printf("chord GPU tests skipped: %s\n", why.c_str());
    return 77;
  }
  const chord::DriverApi& d = chord::driver();
  int count = 0;
  d.cuDeviceGetCount(&count);
  if (count == 0) {
    std::printf("chord GPU tests skipped: no CUDA device is visible\n");
    return 77;
  }
  CUdevice device;
  CUcontext context;
  CHORD_CU(d.cuDeviceGet(&device, 0));
  CHORD_CU(d.cuDevicePrimaryCtxRetain(&context, device));
  CHORD_CU(d.cuCtxSetCurrent(context));
  return Catch::Session().run(argc, argv);
}
