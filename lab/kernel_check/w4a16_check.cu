// Standalone checker of the W4A16 kernel family (no JIT): instantiates the templates of
// kernels_src/ directly, runs every mode on random inputs, compares against the CPU
// reference, and times the decode / prefill shapes of docs/shapes.md.
// The harness (buffers, problems, reference comparison, timing) is check_harness.cuh.
//
// Build and run: see README.md (nvcc -std=c++17 -O3, sm_90a and sm_80, -I. from the repo root,
// with reference/*.cpp).
//
// Options: --no-timing, --quick (10 timing reps instead of 50), --reps N.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels_src/w4a16_gemm.cuh"
#include "kernels_src/w4a16_pack.cuh"
#include "reference/w4a16_pack.hpp"
#include "lab/kernel_check/check_harness.cuh"

using chord::W4A16Args;
namespace ref = chord::ref;
using namespace chord::check;

// ------------------------------------------------------------------------------------------
// Kernels: the same one-line wrappers the JIT generates.
// ------------------------------------------------------------------------------------------
template <int MODE, int BM, int BN, int BK, int ST, int WM, int WN, int PATH, int MINB, int SPLIT>
__global__ void __launch_bounds__(32 * WM * WN, MINB) gemm_entry(const __grid_constant__ W4A16Args args) {
  chord::w4a16_gemm_body<MODE, BM, BN, BK, ST, WM, WN, PATH, chord::kW4A16WeightInt4, SPLIT>(args);
}
template <int SRC>
__global__ void __launch_bounds__(chord::kW4A16PackThreads) pack_entry(const __grid_constant__ chord::W4A16PackArgs a) {
  chord::w4a16_pack_body<SRC>(a);
}
__global__ void __launch_bounds__(chord::kW4A16PackThreads) unpack_entry(const __grid_constant__ chord::W4A16UnpackArgs a) {
  chord::w4a16_unpack_body(a);
}

// ------------------------------------------------------------------------------------------
// Configs
// ------------------------------------------------------------------------------------------
// PATH: the main-loop variant (kW4A16PathStaged / kW4A16PathDirect); by default the one the
// JIT gets for this config (w4a16_default_path), so the old path stays measurable.
// MINB: __launch_bounds__ minimum CTAs per SM (caps the registers); 0 = unspecified, as the
// JIT's wrapper for CTAs below 256 threads (an explicit 1 lets ptxas use more registers).
// SPLIT: split-K over clusters of SPLIT CTAs (sm_90+).
template <int BM_, int BN_, int BK_, int ST_, int WM_, int WN_, int PATH_ = chord::w4a16_default_path(BM_, WM_, ST_),
          int MINB = 0, int SPLIT = 1>
struct Cfg {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, ST = ST_, WM = WM_, WN = WN_, PATH = PATH_;
  static constexpr int kThreads = 32 * WM * WN;
  static constexpr int kSmem = chord::w4a16_smem_bytes(BM, BN, BK, ST);
  static std::string name() {
    char b[112];
    std::snprintf(b, sizeof b, "BM%d_BN%d_BK%d_S%d_W%dx%d_%s%s%s", BM, BN, BK, ST, WM, WN,
                  PATH == chord::kW4A16PathDirect ? "direct" : "staged", MINB > 1 ? ("_minb" + std::to_string(MINB)).c_str() : "",
                  SPLIT > 1 ? ("_splitk" + std::to_string(SPLIT)).c_str() : "");
    return b;
  }
  template <int MODE>
  static KernelInfo prepare() {
    return prepare_entry(gemm_entry<MODE, BM, BN, BK, ST, WM, WN, PATH, MINB, SPLIT>, kThreads, kSmem);
  }
  template <int MODE>
  static void launch(const W4A16Args& args) {
    launch_entry<gemm_entry<MODE, BM, BN, BK, ST, WM, WN, PATH, MINB, SPLIT>>(args, BM, BN, kThreads, kSmem, SPLIT);
  }
};

// ------------------------------------------------------------------------------------------
// Pack checks
// ------------------------------------------------------------------------------------------
// Random weights whose device copies come from the GPU packer (so the GEMM checks run on what
// it wrote), checked against the reference packer; the unpack kernel against the reference
// dequantization.
static void make_packed_weights(Weights& W, int E, int N, int K, uint64_t seed) {
  random_weights(W, E, N, K, seed);
  const size_t total = (size_t)E * N * K;
  const std::string tag = "pack E" + std::to_string(E) + " N" + std::to_string(N) + " K" + std::to_string(K);
  // Reference layout round trip.
  report(tag + " ref dequantize_packed == dequantize_codes", ref::dequantize_packed(W.packed) == W.logical, "");
  // Compressed-tensors import.
  const std::vector<int32_t> comp = ref::codes_to_compressed(W.codes, static_cast<int64_t>(E) * N, K);
  report(tag + " ref unpack_compressed round trip", ref::compressed_to_codes(comp, static_cast<int64_t>(E) * N, K) == W.codes, "");

  // GPU pack from both sources == reference packer, bit for bit.
  DBuf<uint8_t> d_codes(W.codes);
  DBuf<int32_t> d_comp(comp);
  DBuf<uint16_t> d_scales(W.scales);
  W.d_w.alloc(total / 8);
  W.d_s.alloc(total / 32);
  const chord::W4A16Dim3 pg = chord::w4a16_pack_grid(E, N, K);
  for (int src = 0; src < 2; ++src) {
    chord::W4A16PackArgs pa{};
    pa.src = src == 0 ? (const void*)d_codes.p : (const void*)d_comp.p;
    pa.src_scales = d_scales.p;
    pa.dst = W.d_w.p;
    pa.dst_scales = W.d_s.p;
    pa.num_experts = E; pa.n = N; pa.k = K;
    CK(cudaMemset(W.d_w.p, 0xab, total / 2));
    CK(cudaMemset(W.d_s.p, 0xab, total / 16));
    if (src == 0) pack_entry<0><<<pg.x, chord::kW4A16PackThreads>>>(pa);
    else pack_entry<1><<<pg.x, chord::kW4A16PackThreads>>>(pa);
    CK(cudaGetLastError());
    const bool ok = W.d_w.get() == W.packed.weight && W.d_s.get() == W.packed.scales;
    report(tag + (src == 0 ? " gpu pack(codes)" : " gpu pack(compressed)") + " == ref pack", ok, "");
  }
  // GPU unpack == reference logical weight, bit for bit.
  DBuf<uint16_t> d_deq(total);
  chord::W4A16UnpackArgs ua{};
  ua.w = W.d_w.p; ua.scales = W.d_s.p; ua.out = d_deq.p;
  ua.num_experts = E; ua.n = N; ua.k = K;
  unpack_entry<<<pg.x, chord::kW4A16PackThreads>>>(ua);
  CK(cudaGetLastError());
  report(tag + " gpu unpack == ref dequantize", d_deq.get() == W.logical, "");
}

// ------------------------------------------------------------------------------------------
// Correctness
// ------------------------------------------------------------------------------------------
constexpr int kStaged = chord::kW4A16PathStaged;
constexpr int kDirect = chord::kW4A16PathDirect;
using C1 = Cfg<8, 128, 128, 4, 1, 4>;    // decode: 8 tokens, staged (x2 ldmatrix)
using C2 = Cfg<16, 64, 128, 2, 1, 2>;    // small, direct (STAGES == 2)
using C3 = Cfg<128, 128, 64, 4, 2, 4>;   // prefill (staged)
using C4 = Cfg<32, 256, 64, 3, 2, 4>;    // wide N per warp (4 n-tiles), staged: WARPS_M = 2
using C5 = Cfg<64, 64, 256, 2, 2, 1>;    // BK 256, 2 stages
using C6 = Cfg<8, 128, 128, 4, 1, 4, kDirect>;  // direct with 4 full stages of bytes
using C7 = Cfg<8, 128, 256, 3, 1, 4, kDirect>;    // direct, BK 256 (4 chunks in flight per n tile)
using C8 = Cfg<16, 64, 64, 2, 1, 1>;     // direct, 4 n tiles x 2 token tiles per warp, 2 stages
using C9 = Cfg<32, 128, 128, 2, 1, 4>;   // direct, 4 token tiles per warp
using C10 = Cfg<8, 16, 256, 3, 1, 1, kDirect>;    // direct, one warp, one n tile
using C11 = Cfg<16, 128, 64, 3, 1, 4, kStaged>;  // staged, x4 ldmatrix, WARPS_M = 1
using C12 = Cfg<8, 64, 256, 2, 1, 4>;    // direct by default (STAGES == 2): 4 activation stages in 2 stages' bytes
using C13 = Cfg<8, 128, 128, 3, 1, 4, kStaged, 0, 2>;  // split-K 2 (clusters), staged, INT4 group sums
using C14 = Cfg<16, 64, 128, 2, 1, 2, kDirect, 0, 4>;  // split-K 4, direct, 2 token tiles per warp

template <class F>
static void for_each_cfg(F&& f) {
  f(C1{}); f(C2{}); f(C3{}); f(C4{}); f(C5{}); f(C6{}); f(C7{}); f(C8{}); f(C9{}); f(C10{}); f(C11{}); f(C12{});
  f(C13{}); f(C14{});
}

static void correctness() {
  Rng r(1234);
  Weights W;
  make_packed_weights(W, 8, 512, 1024, 7);
  Weights Ws;  // small K: fewer k-blocks than pipeline stages
  make_packed_weights(Ws, 6, 256, 256, 11);

  std::vector<Problem> probs;
  probs.push_back(contiguous("contig E8 [0,1,37,128,130,5,0,64]+pad", W, {0, 1, 37, 128, 130, 5, 0, 64}, 1, r));
  probs.push_back(masked("masked G8 max_m=37", W, 37, {0, 1, 37, 20, 8, 36, 2, 17}, r));
  probs.push_back(masked("masked G8 all-zero", W, 24, {0, 0, 0, 0, 0, 0, 0, 0}, r));
  probs.push_back(offsets("offsets E8 [3,0,1,50,0,17,130,0]", W, {3, 0, 1, 50, 0, 17, 130, 0}, r));
  probs.push_back(offsets("offsets E8 single row", W, {0, 0, 1, 0, 0, 0, 0, 0}, r));
  probs.push_back(indexed("indexed M50 top4 bs128 nonlocal{2,6} overalloc", W, 50, 4, 128, {2, 6}, 133, false, r, 99));
  probs.push_back(indexed("indexed M70 top1 bs128 overalloc", W, 70, 1, 128, {}, 77, false, r, 98));
  probs.push_back(indexed("indexed empty (num_tokens_padded=0)", W, 20, 4, 128, {}, 256, true, r, 97));
  std::vector<Problem> small;
  small.push_back(contiguous("contig smallK E6 [1,0,129,3,0,2]", Ws, {1, 0, 129, 3, 0, 2}, 0, r));
  small.push_back(offsets("offsets smallK E6 [5,0,0,40,1,0]", Ws, {5, 0, 0, 40, 1, 0}, r));
  small.push_back(masked("masked smallK G6 max_m=9", Ws, 9, {9, 0, 1, 3, 8, 2}, r));

  for_each_cfg([&](auto c) {
    using C = decltype(c);
    for (auto& P : probs) run_problem<C>(P, W);
    for (auto& P : small) {
      if (Ws.N % C::BN == 0 && Ws.K % C::BK == 0) run_problem<C>(P, Ws);
    }
    // INDEXED with vLLM block_size == BLOCK_M (the other cases use 128, a multiple of it).
    Problem P = indexed("indexed M50 top4 bs=BM nonlocal{1}", W, 50, 4, C::BM, {1}, 5, false, r, 96);
    run_problem<C>(P, W);
  });

  // M = 0 launches nothing: the grid is empty.
  const bool zero = chord::w4a16_grid(chord::kW4A16Contiguous, 16, 64, 512, 0, 8, 0, 0, 0).x == 0 &&
                    chord::w4a16_grid(chord::kW4A16Offsets, 16, 64, 512, 0, 8, 0, 0, 0).x == 0 &&
                    chord::w4a16_grid(chord::kW4A16Masked, 16, 64, 512, 0, 8, 0, 16, 0).x == 0 &&
                    chord::w4a16_grid(chord::kW4A16Indexed, 16, 64, 512, 0, 8, 0, 0, 0).x == 0;
  report("M=0 -> empty grid (host launches nothing)", zero, "");
}

// ------------------------------------------------------------------------------------------
// Timing
// ------------------------------------------------------------------------------------------
// MASKED, `tokens` rows in each of the E groups of `max_m` rows (decode with deep-EP dispatch).
template <class C>
static void time_masked(const char* label, BigWeights& W, int tokens, int max_m, bool check) {
  const int G = W.E;
  DBuf<uint16_t> a((size_t)G * max_m * W.K), out((size_t)G * max_m * W.N);
  fill_activations(a, 5);
  std::vector<int> mm(G, tokens);
  DBuf<int32_t> d_mm(mm);
  W4A16Args args = timed_args(W, a, out, chord::kW4A16Masked);
  args.masked_m = d_mm.p;
  args.num_groups = G;
  args.max_m = max_m;
  const double us = time_kernel<C, chord::kW4A16Masked>(args);
  const std::string name = std::string(label) + " " + C::name();
  timing_line(name, us, weight_bytes(W, G), 2.0 * G * tokens * W.N * W.K);
  if (check) {
    std::vector<std::array<int, 3>> rows;
    for (int i = 0; i < 6; ++i) {
      const int g = (i * 17) % G, r = (i * 5) % tokens;
      rows.push_back({g * max_m + r, g * max_m + r, g});
    }
    sampled_check(name, W, a, out, rows);
  }
}

// Rows of the sampled check of time_offsets: evenly spread from row 0.
static int spread_rows(int i, int rows) { return i * std::max(1, rows / 6); }

// Timed variants. S* = staged (the configs the resolver picked before the direct path),
// D* = direct-register weights.
using S1 = Cfg<8, 128, 128, 3, 1, 4, kStaged>;   // resolver's decode config before: BM8
using S2 = Cfg<16, 128, 128, 3, 1, 4, kStaged>;  // same at BM16 (bench masked 8 tok/expert)
using DA = Cfg<8, 128, 128, 3, 1, 4, kDirect>;   // 2 n tiles/warp, 2 chunks ahead
using DB = Cfg<8, 128, 256, 3, 1, 4, kDirect>;   // 2 n tiles/warp, 4 chunks ahead
using DC = Cfg<8, 64, 256, 3, 1, 4, kDirect>;    // 1 n tile/warp, 4 chunks ahead
using DD = Cfg<8, 128, 256, 2, 1, 4, kDirect>;   // smem for 2 full stages, 4 activation stages
using DE = Cfg<8, 256, 128, 3, 1, 4, kDirect>;   // 4 n tiles/warp, 2 chunks ahead
using DF = Cfg<8, 64, 256, 3, 1, 2, kDirect>;    // 64 threads, 2 n tiles/warp
using DG = Cfg<16, 128, 256, 2, 1, 4, kDirect>;  // resolver at BM16
using DH = Cfg<16, 128, 128, 2, 1, 4, kDirect>;
using DK = Cfg<8, 128, 128, 2, 1, 4, kDirect>;
using DI = Cfg<8, 32, 256, 3, 1, 2, kDirect>;    // tiny problems: many small CTAs
using DJ = Cfg<8, 16, 256, 3, 1, 1, kDirect>;
using SJ = Cfg<8, 64, 256, 4, 1, 4, kStaged>;    // staged, deep ring, for tiny problems
using DL = Cfg<8, 64, 256, 2, 1, 4>;             // direct by default: resolver for small experts
using P1 = C3;                                   // <128,128,64,4,2,4>, registers uncapped
using P2 = Cfg<128, 128, 64, 4, 2, 4, kStaged, 2>;  // the same, capped for 2 CTAs/SM (the JIT's wrapper)
using SA = Cfg<8, 128, 256, 3, 1, 4, kStaged>;   // staged, half the barriers per byte
using SB = Cfg<8, 256, 128, 3, 1, 8, kStaged>;   // 8 warps sharing one activation tile
using SC = Cfg<8, 256, 128, 3, 1, 4, kStaged>;   // 4 n tiles per warp
using SD = Cfg<16, 128, 128, 4, 1, 4, kStaged>;  // BM16, 4 stages
using SE = Cfg<16, 128, 128, 3, 1, 4, kStaged, 4>;  // BM16, registers capped for 4 CTAs/SM
using SF = Cfg<16, 256, 128, 3, 1, 8, kStaged, 2>;  // BM16, 8 warps (the JIT caps 256 threads at 2 CTAs/SM)
using SG = Cfg<16, 64, 128, 4, 1, 2, kStaged>;      // BM16, 64 threads
using SH = Cfg<16, 256, 128, 3, 1, 4, kStaged>;     // BM16, 4 n tiles per warp
using SI = Cfg<8, 256, 128, 4, 1, 4, kStaged>;      // the EP8 decode row with 4 stages
// Qwen3 at 1 token (96 CTAs of the S1 tile on 132 SMs): deeper rings and split-K.
using Q1 = Cfg<8, 128, 128, 6, 1, 4, kStaged>;
using Q2 = Cfg<8, 128, 128, 8, 1, 4, kStaged>;
using Q3 = Cfg<8, 128, 128, 3, 1, 8, kStaged>;      // the qwen3 table row (8 warps, 1 n tile each)
using K2 = Cfg<8, 128, 128, 3, 1, 4, kStaged, 0, 2>;
using K4 = Cfg<8, 128, 128, 3, 1, 4, kStaged, 0, 4>;
using K8 = Cfg<8, 128, 64, 3, 1, 4, kStaged, 0, 8>;
using K2W = Cfg<8, 128, 128, 3, 1, 8, kStaged, 0, 2>;
using K4W = Cfg<8, 128, 128, 3, 1, 8, kStaged, 0, 4>;

static void timing() {
  std::printf("\n== kernel resources\n");
  print_info<S1, 1>("masked");
  print_info<DA, 1>("masked");
  print_info<DB, 1>("masked");
  print_info<DC, 1>("masked");
  print_info<DD, 1>("masked");
  print_info<DE, 1>("masked");
  print_info<DF, 1>("masked");
  print_info<DG, 1>("masked");
  print_info<DH, 1>("masked");
  print_info<DK, 1>("masked");
  print_info<SA, 1>("masked");
  print_info<SB, 1>("masked");
  print_info<SC, 1>("masked");
  print_info<SD, 1>("masked");
  print_info<SE, 1>("masked");
  print_info<SF, 1>("masked");
  print_info<SG, 1>("masked");
  print_info<SH, 1>("masked");
  print_info<SI, 1>("masked");
  print_info<DI, 2>("offsets");
  print_info<DJ, 2>("offsets");
  print_info<P1, 0>("contig");
  print_info<P2, 0>("contig");
  print_info<C1, 3>("indexed");

  std::printf("\n== timings (median of %d, L2 flushed with a 256 MB memset between reps)\n", g_settings.reps);
  {
    BigWeights W(48, 4096, 7168, 1);
    const char* L = "EP8 masked 8 tok/expert gate_up E48 N4096 K7168 max_m=64";
    time_masked<S1>(L, W, 8, 64, false);
    time_masked<DA>(L, W, 8, 64, true);
    time_masked<DB>(L, W, 8, 64, true);
    time_masked<DC>(L, W, 8, 64, false);
    time_masked<DD>(L, W, 8, 64, false);
    time_masked<DE>(L, W, 8, 64, false);
    time_masked<DF>(L, W, 8, 64, false);
    time_masked<DK>(L, W, 8, 64, false);
    time_masked<SA>(L, W, 8, 64, true);
    time_masked<SB>(L, W, 8, 64, true);
    time_masked<SC>(L, W, 8, 64, false);
    time_masked<SI>(L, W, 8, 64, false);
    time_masked<SH>(L, W, 8, 64, true);  // BM16 tile holding 8 rows: the narrow group-sum path
    const char* L12 = "EP8 masked 12 tok/expert gate_up E48 N4096 K7168 max_m=64";
    time_masked<S2>(L12, W, 12, 64, false);
    time_masked<SD>(L12, W, 12, 64, true);
    time_masked<SE>(L12, W, 12, 64, true);
    time_masked<SF>(L12, W, 12, 64, true);
    time_masked<SG>(L12, W, 12, 64, false);
    time_masked<SH>(L12, W, 12, 64, false);
    time_masked<DG>(L12, W, 12, 64, true);
    time_masked<DH>(L12, W, 12, 64, false);
    time_contig<P1>("EP8 contiguous 512 rows/expert gate_up E48 N4096 K7168", W, 512, true);
    time_contig<P2>("EP8 contiguous 512 rows/expert gate_up E48 N4096 K7168", W, 512, true);
  }
  {
    BigWeights W(48, 7168, 2048, 2);
    const char* L = "EP8 masked 8 tok/expert down E48 N7168 K2048 max_m=64";
    time_masked<S1>(L, W, 8, 64, false);
    time_masked<DA>(L, W, 8, 64, true);
    time_masked<DB>(L, W, 8, 64, false);
    time_masked<DC>(L, W, 8, 64, false);
    time_masked<DD>(L, W, 8, 64, false);
    time_masked<DE>(L, W, 8, 64, false);
    time_masked<DF>(L, W, 8, 64, false);
    time_masked<DK>(L, W, 8, 64, false);
    time_masked<SA>(L, W, 8, 64, false);
    time_masked<SB>(L, W, 8, 64, false);
    time_masked<SC>(L, W, 8, 64, false);
    time_masked<SI>(L, W, 8, 64, false);
    time_masked<SH>(L, W, 8, 64, true);
    const char* L12 = "EP8 masked 12 tok/expert down E48 N7168 K2048 max_m=64";
    time_masked<S2>(L12, W, 12, 64, false);
    time_masked<SD>(L12, W, 12, 64, false);
    time_masked<SE>(L12, W, 12, 64, false);
    time_masked<SF>(L12, W, 12, 64, false);
    time_masked<SG>(L12, W, 12, 64, false);
    time_masked<SH>(L12, W, 12, 64, false);
    time_masked<DG>(L12, W, 12, 64, false);
    time_masked<DH>(L12, W, 12, 64, false);
  }
  // Qwen3 (E 128): 1 token x 8 routes = 8 experts with one row; 8 tokens = 64 rows.
  std::vector<int> one(128, 0);
  for (int e = 0; e < 8; ++e) one[e * 16 + 3] = 1;
  const std::vector<int> eight = topk_counts(128, 8, 8, 77);
  for (int proj = 0; proj < 2; ++proj) {
    BigWeights W(128, proj ? 2048 : 1536, proj ? 768 : 2048, 3 + proj);
    for (int t = 0; t < 2; ++t) {
      const std::vector<int>& cnt = t ? eight : one;
      const std::string L = std::string("Qwen3 offsets ") + (t ? "8 tok" : "1 tok") + (proj ? " down N2048 K768" : " gate_up N1536 K2048");
      time_offsets<S1>(L, W, cnt, 7, nullptr);
      time_offsets<Q1>(L, W, cnt, 7, nullptr);
      time_offsets<Q2>(L, W, cnt, 7, nullptr);
      time_offsets<Q3>(L, W, cnt, 7, nullptr);
      time_offsets<K2>(L, W, cnt, 7, spread_rows);
      time_offsets<K4>(L, W, cnt, 7, spread_rows);
      time_offsets<K8>(L, W, cnt, 7, spread_rows);
      time_offsets<K2W>(L, W, cnt, 7, spread_rows);
      time_offsets<K4W>(L, W, cnt, 7, spread_rows);
      time_offsets<DA>(L, W, cnt, 7, spread_rows);
      if (W.K % 256 == 0) {
        time_offsets<DD>(L, W, cnt, 7, nullptr);
        time_offsets<DB>(L, W, cnt, 7, nullptr);
        time_offsets<DC>(L, W, cnt, 7, nullptr);
        time_offsets<DI>(L, W, cnt, 7, nullptr);
        time_offsets<DJ>(L, W, cnt, 7, nullptr);
        time_offsets<DL>(L, W, cnt, 7, spread_rows);
        time_offsets<SJ>(L, W, cnt, 7, nullptr);
      }
    }
  }
  // Compare weight GB/s against the ~4470 GB/s streaming-read floor of docs/shapes.md.
}

int main(int argc, char** argv) {
  // reps, PASS/FAIL and TIME name columns, weight GB/s, resource-table columns, bf16 fill hash
  const Settings settings{50, 62, 58, true, 10, 28, 0x9e3779b9u};
  return checker_main(argc, argv, settings, correctness, timing);
}
