// Device memory and stream helpers for the GPU tests, over chord's own driver loader.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "launcher/driver_api.hpp"

namespace chord::test {

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    CHORD_CU(driver().cuMemAlloc(&ptr_, bytes == 0 ? 16 : bytes));
  }
  template <typename T>
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size() * sizeof(T)) {
    upload(host);
  }
  ~DeviceBuffer() { driver().cuMemFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return reinterpret_cast<void*>(ptr_); }
  template <typename T>
  void upload(const std::vector<T>& host) {
    if (!host.empty()) CHORD_CU(driver().cuMemcpyHtoD(ptr_, host.data(), host.size() * sizeof(T)));
  }
  template <typename T>
  std::vector<T> download() const {
    std::vector<T> host(bytes_ / sizeof(T));
    if (!host.empty()) CHORD_CU(driver().cuMemcpyDtoH(host.data(), ptr_, bytes_));
    return host;
  }
  void fill(uint8_t byte) { CHORD_CU(driver().cuMemsetD8(ptr_, byte, bytes_)); }

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_;
};

class Stream {
 public:
  Stream() { CHORD_CU(driver().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING)); }
  ~Stream() { driver().cuStreamDestroy(stream_); }
  CUstream get() const { return stream_; }
  void sync() const { CHORD_CU(driver().cuStreamSynchronize(stream_)); }

 private:
  CUstream stream_ = nullptr;
};

// Captures what `body` enqueues on `stream` into a graph, then replays it once.
template <typename Body>
void capture_and_replay(const Stream& stream, Body&& body) {
  const DriverApi& d = driver();
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  CHORD_CU(d.cuStreamBeginCapture(stream.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  body();
  CHORD_CU(d.cuStreamEndCapture(stream.get(), &graph));
  CHORD_CU(d.cuGraphInstantiateWithFlags(&exec, graph, 0));
  CHORD_CU(d.cuGraphLaunch(exec, stream.get()));
  stream.sync();
  d.cuGraphExecDestroy(exec);
  d.cuGraphDestroy(graph);
}

inline std::vector<uint8_t> random_codes(size_t count, std::mt19937& rng) {
  std::vector<uint8_t> codes(count);
  for (auto& c : codes) c = static_cast<uint8_t>(rng() & 0xf);
  return codes;
}

// BF16 scales of varied magnitude and sign, as real checkpoints have.
std::vector<uint16_t> random_scales(size_t count, std::mt19937& rng);

// A GEMM output element's error over the GPU tests' tolerance: 2% of the larger of the reference
// value and `magnitude`, the element's sqrt(sum_k (a_k w_k)^2) (chord::ref::w4a16_gemm_*). The
// tiles that scale a group's fp32 sum instead of rounding each weight to T differ from the
// reference in proportion to the size of the products, which a row of large scales or a sum that
// cancels makes large against the value. Above 1 fails; a NaN, or any difference where the
// tolerance is 0, is infinite.
inline double tolerance_ratio(double got, double want, double magnitude) {
  const double tol = 0.02 * std::max(std::fabs(want), magnitude);
  const double ratio = tol > 0 ? std::fabs(got - want) / tol : (got == want ? 0.0 : HUGE_VAL);
  return std::isnan(ratio) ? HUGE_VAL : ratio;
}

}  // namespace chord::test
