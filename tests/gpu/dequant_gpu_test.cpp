// The dequantize operator through the whole path (C API -> JIT -> launch) matches the
// CPU reference bit for bit, and replays identically from a CUDA Graph.
#include <catch2/catch.hpp>

#include <thread>

#include "chord/chord.h"
#include "gpu_support.hpp"
#include "reference/int4_reference.hpp"

using namespace chord::test;

namespace {

struct Case {
  int64_t e, n, k;
};

}  // namespace

TEST_CASE("gpu dequant: codes and compressed forms match the reference bit for bit", "[gpu][dequant]") {
  std::mt19937 rng(1234);
  Stream stream;
  for (Case c : {Case{1, 1, 32}, Case{3, 7, 96}, Case{48, 64, 7168}, Case{2, 4096, 256}, Case{5, 33, 2048}}) {
    for (int repeat = 0; repeat < 2; ++repeat) {  // fresh random inputs each time
      const int64_t rows = c.e * c.n;
      auto codes = random_codes(static_cast<size_t>(rows * c.k), rng);
      auto scales = random_scales(static_cast<size_t>(rows * c.k / 32), rng);
      auto expected = chord::ref::dequantize_codes(codes, scales, rows, c.k);
      auto packed = chord::ref::codes_to_compressed(codes, rows, c.k);
      DeviceBuffer d_codes(codes), d_packed(packed), d_scales(scales);
      DeviceBuffer out(expected.size() * 2);
      out.fill(0xff);  // poison: NaN patterns everywhere
      REQUIRE(chord_int4_dequantize_codes(d_codes.get(), d_scales.get(), out.get(), c.e, c.n, c.k, stream.get()) ==
              CHORD_SUCCESS);
      stream.sync();
      CHECK(out.download<uint16_t>() == expected);
      out.fill(0xff);
      REQUIRE(chord_int4_dequantize_compressed(d_packed.get(), d_scales.get(), out.get(), c.e, c.n, c.k,
                                               stream.get()) == CHORD_SUCCESS);
      stream.sync();
      CHECK(out.download<uint16_t>() == expected);
    }
  }
}

TEST_CASE("gpu dequant: a CUDA Graph replay gives identical output", "[gpu][dequant][graph]") {
  std::mt19937 rng(99);
  Stream stream;
  const int64_t e = 4, n = 256, k = 1024;
  auto codes = random_codes(static_cast<size_t>(e * n * k), rng);
  auto scales = random_scales(static_cast<size_t>(e * n * k / 32), rng);
  auto packed = chord::ref::codes_to_compressed(codes, e * n, k);
  DeviceBuffer d_packed(packed), d_scales(scales), out(static_cast<size_t>(e * n * k) * 2);
  // Eager first (this also compiles and loads the kernel outside the capture).
  REQUIRE(chord_int4_dequantize_compressed(d_packed.get(), d_scales.get(), out.get(), e, n, k, stream.get()) ==
          CHORD_SUCCESS);
  stream.sync();
  auto eager = out.download<uint16_t>();
  out.fill(0xff);
  capture_and_replay(stream, [&] {
    REQUIRE(chord_int4_dequantize_compressed(d_packed.get(), d_scales.get(), out.get(), e, n, k, stream.get()) ==
            CHORD_SUCCESS);
  });
  CHECK(out.download<uint16_t>() == eager);
  CHECK(eager == chord::ref::dequantize_codes(codes, scales, e * n, k));
}

// A thread with no current CUDA context (a fresh thread whose runtime calls made none current):
// the call takes its stream's context, or device 0's primary one (active: the tests use it) for
// the default stream, makes it current as the CUDA runtime's first call would, and runs.
TEST_CASE("gpu dequant: a thread with no current context runs on its stream's context or device 0's",
          "[gpu][dequant]") {
  const chord::DriverApi& d = chord::driver();
  std::mt19937 rng(4321);
  const int64_t e = 2, n = 16, k = 64;
  auto codes = random_codes(static_cast<size_t>(e * n * k), rng);
  auto scales = random_scales(static_cast<size_t>(e * n * k / 32), rng);
  const auto expected = chord::ref::dequantize_codes(codes, scales, e * n, k);
  DeviceBuffer d_codes(codes), d_scales(scales), out(expected.size() * 2);
  Stream stream;
  CUcontext main_context = nullptr;
  CHORD_CU(d.cuCtxGetCurrent(&main_context));
  for (bool default_stream : {false, true}) {
    out.fill(0xff);
    chord_status_t status = CHORD_ERROR_CUDA;
    CUcontext after = nullptr;
    std::string message;  // chord_last_error() is the worker thread's
    std::thread worker([&] {
      d.cuCtxSetCurrent(nullptr);
      status = chord_int4_dequantize_codes(d_codes.get(), d_scales.get(), out.get(), e, n, k,
                                           default_stream ? nullptr : stream.get());
      message = chord_last_error();
      d.cuCtxGetCurrent(&after);
      if (default_stream) d.cuCtxSynchronize();
    });
    worker.join();
    INFO((default_stream ? "default stream: " : "side stream: ") << message);
    CHECK(status == CHORD_SUCCESS);
    CHECK(after == main_context);  // the tests run on device 0's primary context
    stream.sync();
    CHECK(out.download<uint16_t>() == expected);
  }
}
