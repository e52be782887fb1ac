// Standalone checker of the sm_90a WGMMA prefill kernels of kernels_src/w4a16_wgmma.cuh (no JIT):
// instantiates the template directly, runs every supported mode on random ragged inputs,
// compares with the CPU reference, and times the prefill shapes of shared/design/SHAPES.md
// next to the mma.sync kernel of w4a16_gemm.cuh. The harness (buffers, problems, reference
// comparison, timing) is check_harness.cuh.
//
// Build and run: see README.md (nvcc -std=c++17 -O3, sm_90a, -I. from the repo root, with
// reference/*.cpp). Options: --no-timing, --quick (10 timing reps instead of 20), --reps N.
//
// Exit status 0 when every check passes.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels_src/w4a16_gemm.cuh"
#include "kernels_src/w4a16_wgmma.cuh"
#include "tools/kernel_check/check_harness.cuh"

using chord::W4A16Args;
using namespace chord::check;

// ------------------------------------------------------------------------------------------
// Kernels: one-line wrappers, as the JIT would generate them.
// ------------------------------------------------------------------------------------------
template <int MODE, int BM, int BN, int WG, int ST, int MINB, int INFL>
__global__ void __launch_bounds__(128 * WG, MINB) wgmma_entry(const __grid_constant__ W4A16Args args) {
  chord::w4a16_wgmma_body<MODE, BM, BN, WG, ST, INFL>(args);
}
template <int MODE, int BM, int BN, int BK, int ST, int WM, int WN>
__global__ void __launch_bounds__(32 * WM * WN) mma_entry(const __grid_constant__ W4A16Args args) {
  chord::w4a16_gemm_body<MODE, BM, BN, BK, ST, WM, WN>(args);
}

// ------------------------------------------------------------------------------------------
// Kernel configurations under test.
// ------------------------------------------------------------------------------------------
// WGMMA config: BLOCK_M tokens (wgmma N), BLOCK_N weight rows, WG warpgroups, ST stages,
// MINB = minimum CTAs per SM requested from ptxas (register cap), INFL = wgmma groups left in
// flight while the next k block is decoded.
template <int BM_, int BN_, int WG_, int ST_, int MINB_, int INFL_ = 1>
struct WCfg {
  static constexpr int BM = BM_, BN = BN_, WG = WG_, ST = ST_;
  static constexpr int kThreads = chord::w4a16_wgmma_threads(WG);
  static constexpr int kSmem = chord::w4a16_wgmma_smem_bytes(BM, BN, ST);
  static constexpr bool supports(int mode) {
    return chord::w4a16_wgmma_config_error(mode, BM, BN, WG, ST) == nullptr;
  }
  static std::string name() {
    char b[96];
    std::snprintf(b, sizeof b, "wgmma BM%d_BN%d_WG%d_S%d_MINB%d_INFL%d", BM, BN, WG, ST, MINB_, INFL_);
    return b;
  }
  template <int MODE>
  static KernelInfo prepare() {
    if constexpr (supports(MODE)) {
      return prepare_entry(wgmma_entry<MODE, BM, BN, WG, ST, MINB_, INFL_>, kThreads, kSmem);
    } else {
      return KernelInfo{};
    }
  }
  template <int MODE>
  static void launch(const W4A16Args& a) {
    if constexpr (supports(MODE)) {
      launch_entry<wgmma_entry<MODE, BM, BN, WG, ST, MINB_, INFL_>>(a, BM, BN, kThreads, kSmem);
    } else {
      std::fprintf(stderr, "%s does not support mode %d\n", name().c_str(), MODE);
      std::exit(2);
    }
  }
};

// mma.sync baseline config (w4a16_gemm.cuh), timed in the same run for comparison.
template <int BM_, int BN_, int BK_, int ST_, int WM_, int WN_>
struct MCfg {
  static constexpr int BM = BM_, BN = BN_;
  static constexpr int kThreads = 32 * WM_ * WN_;
  static constexpr int kSmem = chord::w4a16_smem_bytes(BM_, BN_, BK_, ST_);
  static std::string name() {
    char b[96];
    std::snprintf(b, sizeof b, "mma.sync BM%d_BN%d_BK%d_S%d_W%dx%d", BM_, BN_, BK_, ST_, WM_, WN_);
    return b;
  }
  template <int MODE>
  static KernelInfo prepare() {
    return prepare_entry(mma_entry<MODE, BM_, BN_, BK_, ST_, WM_, WN_>, kThreads, kSmem);
  }
  template <int MODE>
  static void launch(const W4A16Args& a) {
    launch_entry<mma_entry<MODE, BM_, BN_, BK_, ST_, WM_, WN_>>(a, BM_, BN_, kThreads, kSmem);
  }
};

using W1 = WCfg<128, 128, 2, 5, 2>;  // 2 warpgroups x one m64 tile, 2 CTAs / SM
using W2 = WCfg<128, 256, 2, 4, 1>;  // 2 warpgroups x two m64 tiles, 128 accumulators / thread
using W3 = WCfg<64, 64, 1, 4, 1>;    // smallest: one warpgroup, n64 wgmma
using W4 = WCfg<256, 128, 2, 4, 1>;  // 256-token tiles (not CONTIGUOUS: tiles would span experts)
using W5 = WCfg<128, 128, 1, 3, 1>;  // one warpgroup x two m64 tiles, 3 stages (minimum)
using W6 = WCfg<128, 128, 2, 6, 1>;  // deeper pipeline, 1 CTA / SM
using W7 = WCfg<128, 128, 2, 5, 2, 0>;  // W1 retiring every wgmma group before the next decode
using W8 = WCfg<128, 128, 2, 4, 2>;     // W1 with 4 stages (prefetch distance 2)
using M1 = MCfg<128, 128, 64, 4, 2, 4>;  // the mma.sync prefill config of w4a16_check.cu

// ------------------------------------------------------------------------------------------
// Correctness
// ------------------------------------------------------------------------------------------
template <class C>
static void check_cfg(const std::vector<Problem>& probs, const Weights& W, const std::vector<Problem>& small,
                      const Weights& Ws, Rng& r) {
  for (const auto& P : probs)
    if (C::supports(P.mode) && (P.mode != chord::kW4A16Indexed || P.args.block_size % C::BM == 0))
      run_problem<C>(P, W);
  for (const auto& P : small)
    if (C::supports(P.mode) && Ws.N % C::BN == 0) run_problem<C>(P, Ws);
  // INDEXED with vLLM block_size == BLOCK_M.
  Problem P = indexed("indexed M50 top4 bs=BM nonlocal{1}", W, 50, 4, C::BM, {1}, 5, false, r, 96);
  run_problem<C>(P, W);
}

static void correctness() {
  Rng r(4321);
  Weights W, Ws;
  make_weights(W, 8, 512, 1024, 7);  // 16 k blocks
  make_weights(Ws, 6, 256, 128, 11);  // 2 k blocks: fewer than the pipeline's prefetch distance
  std::vector<Problem> probs;
  probs.push_back(contiguous("contig E8 [0,1,37,128,130,5,0,64]+pad", W, {0, 1, 37, 128, 130, 5, 0, 64}, 1, r));
  probs.push_back(contiguous("contig E8 [256,0,0,1,0,0,0,300]", W, {256, 0, 0, 1, 0, 0, 0, 300}, 0, r));
  probs.push_back(offsets("offsets E8 [3,0,1,50,0,17,300,0]", W, {3, 0, 1, 50, 0, 17, 300, 0}, r));
  probs.push_back(offsets("offsets E8 [0,257,1,0,128,0,0,255]", W, {0, 257, 1, 0, 128, 0, 0, 255}, r));
  probs.push_back(offsets("offsets E8 single row", W, {0, 0, 1, 0, 0, 0, 0, 0}, r));
  probs.push_back(masked("masked G8 max_m=300", W, 300, {0, 1, 300, 129, 8, 256, 2, 65}, r));
  probs.push_back(masked("masked G8 all-zero", W, 24, {0, 0, 0, 0, 0, 0, 0, 0}, r));
  probs.push_back(indexed("indexed M200 top4 bs256 nonlocal{2,6} overalloc", W, 200, 4, 256, {2, 6}, 133, false, r, 99));
  probs.push_back(indexed("indexed M70 top1 bs256 overalloc", W, 70, 1, 256, {}, 77, false, r, 98));
  std::vector<Problem> small;
  small.push_back(contiguous("contig smallK E6 [1,0,129,3,0,2]", Ws, {1, 0, 129, 3, 0, 2}, 0, r));
  small.push_back(offsets("offsets smallK E6 [5,0,0,140,1,0]", Ws, {5, 0, 0, 140, 1, 0}, r));
  small.push_back(masked("masked smallK G6 max_m=9", Ws, 9, {9, 0, 1, 3, 8, 2}, r));

  check_cfg<W1>(probs, W, small, Ws, r);
  check_cfg<W2>(probs, W, small, Ws, r);
  check_cfg<W3>(probs, W, small, Ws, r);
  check_cfg<W4>(probs, W, small, Ws, r);
  check_cfg<W5>(probs, W, small, Ws, r);
  check_cfg<W6>(probs, W, small, Ws, r);
  check_cfg<W7>(probs, W, small, Ws, r);
  check_cfg<W8>(probs, W, small, Ws, r);
}

// ------------------------------------------------------------------------------------------
// Timing
// ------------------------------------------------------------------------------------------
// Rows of the sampled check of time_offsets: scattered over all rows.
static int scattered_rows(int i, int rows) { return (int)(((long long)i * 5003 + 11) % rows); }

static void timing() {
  std::printf("\n== kernel resources\n");
  print_info<W1, 0>("contig");
  print_info<W2, 0>("contig");
  print_info<W3, 0>("contig");
  print_info<W4, 2>("offsets");
  print_info<W5, 0>("contig");
  print_info<W6, 0>("contig");
  print_info<W7, 0>("contig");
  print_info<W8, 0>("contig");
  print_info<M1, 0>("contig");

  std::printf("\n== timings (median of %d after 3 warm-up launches, L2 flushed by a 256 MB memset before each)\n",
              g_settings.reps);
  {
    BigWeights W(48, 4096, 7168, 1);
    const char* l = "EP8 contiguous 512 rows/expert gate_up E48 N4096 K7168";
    time_contig<W1>(l, W, 512, true);
    time_contig<W2>(l, W, 512, true);
    time_contig<W3>(l, W, 512, false);
    time_contig<W5>(l, W, 512, false);
    time_contig<W6>(l, W, 512, false);
    time_contig<W7>(l, W, 512, true);
    time_contig<W8>(l, W, 512, false);
    time_contig<M1>(l, W, 512, false);
  }
  {
    BigWeights W(48, 7168, 2048, 2);
    const char* l = "EP8 contiguous 512 rows/expert down E48 N7168 K2048";
    time_contig<W1>(l, W, 512, true);
    time_contig<W2>(l, W, 512, true);
    time_contig<W5>(l, W, 512, false);
    time_contig<W6>(l, W, 512, false);
    time_contig<W8>(l, W, 512, false);
    time_contig<M1>(l, W, 512, false);
  }
  {
    BigWeights W(128, 1536, 2048, 3);
    const char* l = "offsets Qwen3 T=4096 top8 E128 N1536 K2048 (32768 rows)";
    const std::vector<int> counts = topk_counts(W.E, 4096, 8, 2024);
    time_offsets<W1>(l, W, counts, 8, scattered_rows);
    time_offsets<W2>(l, W, counts, 8, nullptr);
    time_offsets<W4>(l, W, counts, 8, scattered_rows);
    time_offsets<W5>(l, W, counts, 8, nullptr);
    time_offsets<W6>(l, W, counts, 8, nullptr);
    time_offsets<W7>(l, W, counts, 8, nullptr);
    time_offsets<W8>(l, W, counts, 8, nullptr);
    time_offsets<M1>(l, W, counts, 8, nullptr);
  }
}

int main(int argc, char** argv) {
  // reps, PASS/FAIL and TIME name columns, weight GB/s, resource-table columns, bf16 fill hash
  const Settings settings{20, 78, 96, false, 8, 36, 0x85ebca6bu};
  return checker_main(argc, argv, settings, correctness, timing, 9,
                      "the WGMMA kernels need sm_90a; nothing to check on this device");
}
