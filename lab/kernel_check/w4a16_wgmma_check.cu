// Standalone checker of the sm_90a WGMMA prefill kernels of kernels_src/w4a16_wgmma.cuh (no JIT):
// instantiates the template directly, runs every supported mode on random ragged inputs,
// compares with the CPU reference, and times the prefill shapes of docs/shapes.md
// next to the mma.sync kernel of w4a16_gemm.cuh. The harness (buffers, problems, reference
// comparison, timing) is check_harness.cuh. NF4 weights (BF16 and FP16 activations) are
// checked on the same routing problems against the NF4 reference dequantization
// (reference/nf4_reference.hpp) and an FP32 GEMM, and timed on the Qwen3 shapes.
//
// Build and run: see README.md (nvcc -std=c++17 -O3, sm_90a, -I. from the repo root, with
// reference/*.cpp). Options: --no-timing, --quick (10 timing reps instead of 20), --reps N,
// --qwen3-timing (time only the Qwen3 T=4096 shapes).
//
// Exit status 0 when every check passes.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels_src/w4a16_gemm.cuh"
#include "kernels_src/w4a16_wgmma.cuh"
#include "reference/nf4_reference.hpp"
#include "kernels_src/w4a16_wgmma_ws.cuh"
#include "lab/kernel_check/check_harness.cuh"

using chord::W4A16Args;
using namespace chord::check;

// ------------------------------------------------------------------------------------------
// Kernels: one-line wrappers, as the JIT would generate them.
// ------------------------------------------------------------------------------------------
template <int MODE, int BM, int BN, int WG, int ST, int MINB, int INFL, int WEIGHT>
__global__ void __launch_bounds__(128 * WG, MINB) wgmma_entry(const __grid_constant__ W4A16Args args) {
  if constexpr (WEIGHT == chord::kW4A16WeightInt4) {
    chord::w4a16_wgmma_body<MODE, BM, BN, WG, ST, INFL>(args);  // the JIT's INT4 text
  } else {
    chord::w4a16_wgmma_body<MODE, BM, BN, WG, ST, INFL, WEIGHT>(args);
  }
}
template <int MODE, int BN, int ST, int WEIGHT>
__global__ void __launch_bounds__(chord::kW4A16WgmmaWsThreads, 1) ws_entry(const __grid_constant__ W4A16Args args) {
  chord::w4a16_wgmma_ws_body<MODE, BN, ST, WEIGHT>(args);
}
template <int MODE, int BM, int BN, int BK, int ST, int WM, int WN, int WEIGHT>
__global__ void __launch_bounds__(32 * WM * WN) mma_entry(const __grid_constant__ W4A16Args args) {
  if constexpr (WEIGHT == chord::kW4A16WeightInt4) {
    chord::w4a16_gemm_body<MODE, BM, BN, BK, ST, WM, WN>(args);
  } else {  // the JIT's NF4 text
    chord::w4a16_gemm_body<MODE, BM, BN, BK, ST, WM, WN, chord::w4a16_default_path(BM, WM, ST), WEIGHT>(args);
  }
}

// ------------------------------------------------------------------------------------------
// Kernel configurations under test.
// ------------------------------------------------------------------------------------------
// WGMMA config: BLOCK_M tokens (wgmma N), BLOCK_N weight rows, WG warpgroups, ST stages,
// MINB = minimum CTAs per SM requested from ptxas (register cap), INFL = wgmma groups left in
// flight while the next k block is decoded, WEIGHT_ = W4A16WeightKind.
template <int BM_, int BN_, int WG_, int ST_, int MINB_, int INFL_ = 1, int WEIGHT_ = chord::kW4A16WeightInt4>
struct WCfg {
  static constexpr int BM = BM_, BN = BN_, BK = 64, WG = WG_, ST = ST_;
  static constexpr bool kTab = WEIGHT_ != chord::kW4A16WeightInt4;  // NF4: the pair table
  static constexpr int kThreads = chord::w4a16_wgmma_threads(WG);
  static constexpr int kSmem = chord::w4a16_wgmma_smem_bytes(BM, BN, ST, kTab);
  static constexpr bool supports(int mode) {
    return chord::w4a16_wgmma_config_error(mode, BM, BN, WG, ST, kTab) == nullptr;
  }
  static std::string name() {
    char b[96];
    std::snprintf(b, sizeof b, "wgmma BM%d_BN%d_WG%d_S%d_MINB%d_INFL%d%s", BM, BN, WG, ST, MINB_, INFL_,
                  WEIGHT_ == chord::kW4A16WeightNF4 ? "_nf4" : WEIGHT_ == chord::kW4A16WeightNF4Fp16 ? "_nf4f16" : "");
    return b;
  }
  template <int MODE>
  static KernelInfo prepare() {
    if constexpr (supports(MODE)) {
      return prepare_entry(wgmma_entry<MODE, BM, BN, WG, ST, MINB_, INFL_, WEIGHT_>, kThreads, kSmem);
    } else {
      return KernelInfo{};
    }
  }
  template <int MODE>
  static void launch(const W4A16Args& a) {
    if constexpr (supports(MODE)) {
      launch_entry<wgmma_entry<MODE, BM, BN, WG, ST, MINB_, INFL_, WEIGHT_>>(a, BM, BN, kThreads, kSmem);
    } else {
      std::fprintf(stderr, "%s does not support mode %d\n", name().c_str(), MODE);
      std::exit(2);
    }
  }
};

// Warp-specialized WGMMA config (w4a16_wgmma_ws.cuh): 128-token tiles, BLOCK_N weight rows, ST
// stages; persistent, launched with one CTA per SM, or g_ws_ctas CTAs when that is set (the
// correctness pass that makes every CTA loop over many tiles).
static int g_ws_ctas = 0;
template <int BN_, int ST_, int WEIGHT_ = chord::kW4A16WeightInt4>
struct WsCfg {
  static constexpr int BM = chord::kW4A16WgmmaWsBlockM, BN = BN_, BK = 64, ST = ST_;
  static constexpr bool kTab = WEIGHT_ != chord::kW4A16WeightInt4;
  static constexpr int kThreads = chord::kW4A16WgmmaWsThreads;
  static constexpr int kSmem = chord::w4a16_wgmma_ws_smem_bytes(chord::kW4A16WgmmaWsBlockM, BN, ST, kTab);
  static constexpr bool supports(int mode) { return chord::w4a16_wgmma_ws_config_error(mode, chord::kW4A16WgmmaWsBlockM, BN, ST, kTab) == nullptr; }
  static std::string name() {
    char b[96];
    std::snprintf(b, sizeof b, "wgmma_ws BM128_BN%d_S%d%s", BN, ST,
                  WEIGHT_ == chord::kW4A16WeightNF4 ? "_nf4" : WEIGHT_ == chord::kW4A16WeightNF4Fp16 ? "_nf4f16" : "");
    return b;
  }
  template <int MODE>
  static KernelInfo prepare() {
    if constexpr (supports(MODE)) {
      return prepare_entry(ws_entry<MODE, BN, ST, WEIGHT_>, kThreads, kSmem);
    } else {
      return KernelInfo{};
    }
  }
  template <int MODE>
  static void launch(const W4A16Args& a) {
    if constexpr (supports(MODE)) {
      const int ctas = g_ws_ctas > 0 ? g_ws_ctas : sm_count();
      W4A16Args args = a;
      set_ws_maps(args, MODE, BN, WEIGHT_ != chord::kW4A16WeightInt4);
      launch_entry<ws_entry<MODE, BN, ST, WEIGHT_>>(args, BM, BN, kThreads, kSmem, 1, ctas, /*exact=*/g_ws_ctas > 0);
    } else {
      std::fprintf(stderr, "%s does not support mode %d\n", name().c_str(), MODE);
      std::exit(2);
    }
  }
};

// mma.sync config (w4a16_gemm.cuh): the INT4 prefill baseline timed in the same run for
// comparison, and the NF4 decode / prefill tiles (WEIGHT_ = W4A16WeightKind).
template <int BM_, int BN_, int BK_, int ST_, int WM_, int WN_, int WEIGHT_ = chord::kW4A16WeightInt4>
struct MCfg {
  static constexpr int BM = BM_, BN = BN_, BK = BK_;
  static constexpr bool kTab = WEIGHT_ != chord::kW4A16WeightInt4;  // NF4: the pair table
  static constexpr int kThreads = 32 * WM_ * WN_;
  static constexpr int kSmem = chord::w4a16_smem_bytes(BM_, BN_, BK_, ST_, kTab);
  static constexpr bool supports(int) { return true; }
  static std::string name() {
    char b[96];
    std::snprintf(b, sizeof b, "mma.sync BM%d_BN%d_BK%d_S%d_W%dx%d%s%s", BM_, BN_, BK_, ST_, WM_, WN_,
                  chord::w4a16_default_path(BM_, WM_, ST_) == chord::kW4A16PathDirect ? "_direct" : "",
                  WEIGHT_ == chord::kW4A16WeightNF4 ? "_nf4" : WEIGHT_ == chord::kW4A16WeightNF4Fp16 ? "_nf4f16" : "");
    return b;
  }
  template <int MODE>
  static KernelInfo prepare() {
    return prepare_entry(mma_entry<MODE, BM_, BN_, BK_, ST_, WM_, WN_, WEIGHT_>, kThreads, kSmem);
  }
  template <int MODE>
  static void launch(const W4A16Args& a) {
    launch_entry<mma_entry<MODE, BM_, BN_, BK_, ST_, WM_, WN_, WEIGHT_>>(a, BM_, BN_, kThreads, kSmem);
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
using S1 = WsCfg<128, 8>;  // warp-specialized, 8 stages
using S2 = WsCfg<128, 5>;
using SN1 = WsCfg<128, 6, chord::kW4A16WeightNF4>;
using SH1 = WsCfg<128, 6, chord::kW4A16WeightNF4Fp16>;
using S3 = WsCfg<256, 6>;  // two m64 tiles per consumer, one fragment array
using SN3 = WsCfg<256, 5, chord::kW4A16WeightNF4>;
using SN4 = WsCfg<256, 6, chord::kW4A16WeightNF4>;  // one more stage: a stage is held one block longer
// NF4 with BF16 (N*) and FP16 (H*) activations: the resolver's config, two m64 tiles, the
// smallest (wgmma n64) and 256-token tiles (n256).
constexpr int kNF4 = chord::kW4A16WeightNF4, kNF4F16 = chord::kW4A16WeightNF4Fp16;
using N1 = WCfg<128, 128, 2, 4, 2, 1, kNF4>;
using N2 = WCfg<128, 256, 2, 4, 1, 1, kNF4>;
using N3 = WCfg<64, 64, 1, 4, 1, 1, kNF4>;
using N4 = WCfg<256, 128, 2, 4, 1, 1, kNF4>;
using H1 = WCfg<128, 128, 2, 4, 2, 1, kNF4F16>;
using H3 = WCfg<64, 64, 1, 4, 1, 1, kNF4F16>;
using H4 = WCfg<256, 128, 2, 4, 1, 1, kNF4F16>;
// NF4 on mma.sync: the Qwen3 decode row (BM8, 8 tokens per warp: group sums), 16 and 32
// tokens per warp (per-weight scale), the direct path at 8 and 32 tokens.
using D1 = MCfg<8, 128, 128, 3, 1, 4, kNF4>;
using D2 = MCfg<16, 128, 128, 3, 1, 4, kNF4>;
using D3 = MCfg<64, 128, 64, 4, 2, 4, kNF4>;
using D4 = MCfg<8, 64, 256, 2, 1, 4, kNF4>;
using D5 = MCfg<32, 64, 128, 2, 1, 2, kNF4>;
using DH1 = MCfg<8, 128, 128, 3, 1, 4, kNF4F16>;
using DH2 = MCfg<16, 128, 128, 3, 1, 4, kNF4F16>;
using Q1 = MCfg<8, 128, 128, 3, 1, 4>;  // the same decode row with INT4 weights

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

// ------------------------------------------------------------------------------------------
// NF4 correctness: the INT4 problems' routing with NF4 weights of the same shape.
// ------------------------------------------------------------------------------------------
static float elem_to_float(uint16_t v, bool fp16) {
  return fp16 ? chord::ref::fp16_to_float(v) : chord::ref::bf16_to_float(v);
}

struct NF4Weights {
  int E = 0, N = 0, K = 0;
  std::vector<float> logical[2];  // [E, N, K] dequantized to BF16 [0] / FP16 [1], widened
  DBuf<uint32_t> d_w;                // packed words (w4a16 order)
  DBuf<float> d_absmax;              // [E, K/64, N], rows permuted within 16
};

static void make_nf4_weights(NF4Weights& W, int E, int N, int K, uint64_t seed) {
  W.E = E; W.N = N; W.K = K;
  Rng r(seed);
  chord::ref::NF4QuantState st;
  st.num_experts = E; st.n = N; st.k = K;
  st.packed.resize((size_t)E * N * K / 2);
  for (auto& b : st.packed) b = (uint8_t)(r.next() & 0xff);
  st.absmax.resize((size_t)E * N * K / 64);
  for (auto& a : st.absmax) a = 0.01f + 0.05f * r.uni();
  const chord::ref::NF4Packed p = chord::ref::pack_nf4(st);
  for (int t = 0; t < 2; ++t) {
    const std::vector<uint16_t> v =
        chord::ref::nf4_dequantize(st, t ? chord::ref::NF4Float::kFP16 : chord::ref::NF4Float::kBF16);
    W.logical[t].resize(v.size());
    for (size_t i = 0; i < v.size(); ++i) W.logical[t][i] = elem_to_float(v[i], t == 1);
  }
  W.d_w.upload(p.weight);
  W.d_absmax.upload(p.absmax);
}

// (output row, input row, expert) of every row the problem's routing selects.
static std::vector<std::array<int, 3>> routed_rows(const Problem& P, int E) {
  std::vector<std::array<int, 3>> rows;
  const W4A16Args& a = P.args;
  switch (P.mode) {
    case chord::kW4A16Contiguous:
      for (int r = 0; r < a.a_rows; ++r)
        if (P.r0[r] >= 0) rows.push_back({r, r, P.r0[r]});
      break;
    case chord::kW4A16Masked:
      for (int g = 0; g < a.num_groups; ++g)
        for (int i = 0; i < P.r0[g]; ++i) rows.push_back({g * a.max_m + i, g * a.max_m + i, g});
      break;
    case chord::kW4A16Offsets: {
      int start = 0;
      for (int e = 0; e < E; ++e) {
        for (int r = start; r < P.r0[e]; ++r) rows.push_back({r, r, e});
        start = P.r0[e];
      }
      break;
    }
    default:
      for (int i = 0; i < P.r2[0]; ++i) {
        const int id = P.r0[i], e = P.r1[i / a.block_size];
        if (id < a.a_rows * a.top_k && e >= 0) rows.push_back({id, id / a.top_k, e});
      }
  }
  return rows;
}

// An INT4 problem's routing with NF4 weights: activations as T (FP16: the BF16 values
// rounded), reference = T(FP32 sum of T(act) * T(dequantized weight)).
struct NF4Problem {
  const Problem* base = nullptr;
  bool fp16 = false;
  std::vector<uint16_t> a, ref_out;
};

static NF4Problem nf4_problem(const Problem& P, const NF4Weights& W, bool fp16) {
  NF4Problem q;
  q.base = &P;
  q.fp16 = fp16;
  q.a = P.a;
  if (fp16)
    for (auto& v : q.a) v = chord::ref::float_to_fp16(chord::ref::bf16_to_float(v));
  q.ref_out.assign((size_t)P.out_rows * W.N, kPoison);
  std::vector<float> arow(W.K);
  const std::vector<float>& logical = W.logical[fp16 ? 1 : 0];
  for (const auto& t : routed_rows(P, W.E)) {
    for (int k = 0; k < W.K; ++k) arow[k] = elem_to_float(q.a[(size_t)t[1] * W.K + k], fp16);
    for (int n = 0; n < W.N; ++n) {
      const float* w = &logical[((size_t)t[2] * W.N + n) * W.K];
      float s[4] = {0.f, 0.f, 0.f, 0.f};  // K % 64 == 0
      for (int k = 0; k < W.K; k += 4)
        for (int j = 0; j < 4; ++j) s[j] += arow[k + j] * w[k + j];
      const float acc = (s[0] + s[1]) + (s[2] + s[3]);
      q.ref_out[(size_t)t[0] * W.N + n] = fp16 ? chord::ref::float_to_fp16(acc) : chord::ref::float_to_bf16(acc);
    }
  }
  // routed_rows must select the rows the INT4 reference of the harness writes.
  if (P.out_rows > 0 && !P.ref_out.empty()) {
    const size_t n_int = P.ref_out.size() / P.out_rows;
    long diff = 0;
    for (int r = 0; r < P.out_rows; ++r)
      diff += (P.ref_out[r * n_int] == kPoison) != (q.ref_out[(size_t)r * W.N] == kPoison);
    if (diff) report(P.name + " NF4 reference rows", false, std::to_string(diff) + " rows differ from the INT4 reference");
  }
  return q;
}

// run_problem for NF4: the absmax goes where the INT4 scales go.
template <class C>
static void run_nf4(const NF4Problem& q, const NF4Weights& W) {
  const Problem& P = *q.base;
  run_routed<C>(P, q.a, W.d_w.p, W.d_absmax.p, W.E, W.N, W.K, q.ref_out, q.fp16,
                P.name + (q.fp16 ? " fp16 " : " ") + C::name());
}

template <class C>
static void check_nf4_cfg(const std::vector<NF4Problem>& probs, const NF4Weights& W,
                          const std::vector<NF4Problem>& small, const NF4Weights& Ws,
                          const std::vector<Problem>& idx) {
  const bool fp16 = C::name().find("nf4f16") != std::string::npos;
  for (const auto& q : probs) {
    const Problem& P = *q.base;
    if (q.fp16 == fp16 && C::supports(P.mode) && (P.mode != chord::kW4A16Indexed || P.args.block_size % C::BM == 0))
      run_nf4<C>(q, W);
  }
  for (const auto& q : small)
    if (q.fp16 == fp16 && C::supports(q.base->mode) && Ws.N % C::BN == 0 && Ws.K % C::BK == 0) run_nf4<C>(q, Ws);
  // INDEXED with vLLM block_size == BLOCK_M.
  for (const auto& P : idx)
    if (P.args.block_size == C::BM) run_nf4<C>(nf4_problem(P, W, fp16), W);
}

static void correctness_nf4(const std::vector<Problem>& probs, const std::vector<Problem>& small) {
  NF4Weights W, Ws;
  make_nf4_weights(W, 8, 512, 1024, 17);
  make_nf4_weights(Ws, 6, 256, 128, 19);
  std::vector<NF4Problem> nprobs, nsmall;
  for (bool fp16 : {false, true}) {
    for (const auto& P : probs) nprobs.push_back(nf4_problem(P, W, fp16));
    for (const auto& P : small) nsmall.push_back(nf4_problem(P, Ws, fp16));
  }
  Rng r(777);
  Weights Wi;  // shape only (N = 16 keeps the builder's INT4 reference cheap)
  Wi.E = W.E; Wi.N = 16; Wi.K = W.K;
  Wi.logical.assign((size_t)Wi.E * Wi.N * Wi.K, 0);
  std::vector<Problem> idx;
  for (int bm : {64, 128, 256}) {
    idx.push_back(indexed("indexed M50 top4 bs=BM nonlocal{1}", Wi, 50, 4, bm, {1}, 5, false, r, 96));
  }
  check_nf4_cfg<N1>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<SN1>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<SH1>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<SN3>(nprobs, W, nsmall, Ws, idx);
  g_ws_ctas = 3;
  check_nf4_cfg<SN1>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<SH1>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<SN3>(nprobs, W, nsmall, Ws, idx);
  g_ws_ctas = 0;
  check_nf4_cfg<N2>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<N3>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<N4>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<H1>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<H3>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<H4>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<D1>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<D2>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<D3>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<D4>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<D5>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<DH1>(nprobs, W, nsmall, Ws, idx);
  check_nf4_cfg<DH2>(nprobs, W, nsmall, Ws, idx);
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
  check_cfg<S1>(probs, W, small, Ws, r);
  check_cfg<S2>(probs, W, small, Ws, r);
  check_cfg<S3>(probs, W, small, Ws, r);
  // The persistent kernel with 3 CTAs (every CTA loops over many tiles, empty ones included)
  // and with 1000 (more CTAs than tiles: some find none).
  for (int ctas : {3, 1000}) {
    g_ws_ctas = ctas;
    check_cfg<S1>(probs, W, small, Ws, r);
    check_cfg<S2>(probs, W, small, Ws, r);
    check_cfg<S3>(probs, W, small, Ws, r);
  }
  g_ws_ctas = 0;
  correctness_nf4(probs, small);
}

// ------------------------------------------------------------------------------------------
// Timing
// ------------------------------------------------------------------------------------------
// Rows of the sampled check of time_offsets: scattered over all rows.
static int scattered_rows(int i, int rows) { return (int)(((long long)i * 5003 + 11) % rows); }

static bool g_qwen3_only = false;  // --qwen3-timing

// NF4 timings reuse BigWeights: its scale buffer (E * N * K / 16 bytes) has the size of the
// FP32 absmax, read as floats in [0.002, 0.032]; FP16 activations read the BF16 fill's bits
// (finite values of magnitude < 2). No sampled check: the reference is INT4.
static void timing_qwen3() {
  // Decode: T = 1 (8 experts with one row), 8 and 64 tokens, top-8 of E = 128, on the tuning
  // table's decode row (BM8 BN128 BK128 S3), INT4 next to NF4; the wider token tiles (per-weight
  // scale) at T = 64 and 512.
  {
    std::vector<int> one(128, 0);
    for (int e = 0; e < 8; ++e) one[e * 16 + 3] = 1;
    const std::vector<int> counts[4] = {one, topk_counts(128, 8, 8, 77), topk_counts(128, 64, 8, 78),
                                        topk_counts(128, 512, 8, 79)};
    const char* tok[4] = {"1", "8", "64", "512"};
    for (int proj = 0; proj < 2; ++proj) {
      BigWeights W(128, proj ? 2048 : 1536, proj ? 768 : 2048, 3 + proj);
      for (int t = 0; t < 4; ++t) {
        const std::string l = std::string("offsets Qwen3 T=") + tok[t] + (proj ? " down N2048 K768" : " gate_up N1536 K2048");
        if (t < 3) {
          time_offsets<Q1>(l, W, counts[t], 7, nullptr);
          time_offsets<D1>(l, W, counts[t], 7, nullptr);
          time_offsets<DH1>(l, W, counts[t], 7, nullptr);
        }
        if (t >= 2) {
          time_offsets<D2>(l, W, counts[t], 7, nullptr);
          time_offsets<D3>(l, W, counts[t], 7, nullptr);
        }
      }
    }
  }
  {
    BigWeights W(128, 1536, 2048, 3);
    const char* l = "offsets Qwen3 T=4096 top8 E128 N1536 K2048 (32768 rows)";
    const std::vector<int> counts = topk_counts(W.E, 4096, 8, 2024);
    if (g_qwen3_only) time_offsets<W1>(l, W, counts, 8, scattered_rows);  // else timed above
    if (g_qwen3_only) time_offsets<S1>(l, W, counts, 8, scattered_rows);
    time_offsets<N1>(l, W, counts, 8, nullptr);
    time_offsets<SN1>(l, W, counts, 8, nullptr);
    time_offsets<SN3>(l, W, counts, 8, nullptr);
    time_offsets<SN4>(l, W, counts, 8, nullptr);
    time_offsets<H1>(l, W, counts, 8, nullptr);
    time_offsets<N2>(l, W, counts, 8, nullptr);
    time_offsets<N4>(l, W, counts, 8, nullptr);
  }
  {
    BigWeights W(128, 2048, 768, 4);
    const char* l = "offsets Qwen3 T=4096 top8 E128 N2048 K768 (32768 rows)";
    const std::vector<int> counts = topk_counts(W.E, 4096, 8, 2024);
    time_offsets<W1>(l, W, counts, 8, nullptr);
    time_offsets<S1>(l, W, counts, 8, scattered_rows);
    time_offsets<S3>(l, W, counts, 8, scattered_rows);
    time_offsets<N1>(l, W, counts, 8, nullptr);
    time_offsets<SN1>(l, W, counts, 8, nullptr);
    time_offsets<SN3>(l, W, counts, 8, nullptr);
    time_offsets<SN4>(l, W, counts, 8, nullptr);
    time_offsets<H1>(l, W, counts, 8, nullptr);
    time_offsets<N2>(l, W, counts, 8, nullptr);
  }
}

// Ragged prefill rows as offsets: the one-role and the warp-specialized INT4 kernels side by side.
static void time_ragged(const char* label, BigWeights& W, const std::vector<int>& counts) {
  time_offsets<W1>(label, W, counts, 8, scattered_rows);
  time_offsets<S3>(label, W, counts, 8, scattered_rows);
}

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
  print_info<S1, 0>("contig");
  print_info<S2, 0>("contig");
  print_info<SN1, 2>("offsets");
  print_info<S3, 0>("contig");
  print_info<SN3, 2>("offsets");
  print_info<N1, 2>("offsets");
  print_info<N2, 2>("offsets");
  print_info<N3, 2>("offsets");
  print_info<N4, 2>("offsets");
  print_info<H1, 2>("offsets");
  print_info<H3, 2>("offsets");
  print_info<H4, 2>("offsets");
  print_info<D1, 2>("offsets");
  print_info<D2, 2>("offsets");
  print_info<D3, 2>("offsets");
  print_info<D4, 2>("offsets");
  print_info<D5, 2>("offsets");
  print_info<DH1, 2>("offsets");
  print_info<DH2, 2>("offsets");
  print_info<Q1, 2>("offsets");
  if (g_qwen3_only) {
    std::printf("\n== timings (median of %d after 3 warm-up launches, L2 flushed by a 256 MB memset before each)\n",
                g_settings.reps);
    timing_qwen3();
    return;
  }

  std::printf("\n== timings (median of %d after 3 warm-up launches, L2 flushed by a 256 MB memset before each)\n",
              g_settings.reps);
  {
    BigWeights W(48, 4096, 7168, 1);
    const char* l = "EP8 contiguous 512 rows/expert gate_up E48 N4096 K7168";
    time_contig<W1>(l, W, 512, true);
    time_contig<S1>(l, W, 512, true);
    time_contig<S2>(l, W, 512, false);
    time_contig<S3>(l, W, 512, true);
    time_contig<W2>(l, W, 512, true);
    time_contig<W3>(l, W, 512, false);
    time_contig<W5>(l, W, 512, false);
    time_contig<W6>(l, W, 512, false);
    time_contig<W7>(l, W, 512, true);
    time_contig<W8>(l, W, 512, false);
    time_contig<M1>(l, W, 512, false);
    // EP8 T=16384 prefill rows as offsets: 21392 rows over 48 experts, ragged tails.
    time_ragged("EP8 T=16384-like offsets gate_up E48 N4096 K7168 (21392 rows)", W, topk_counts(W.E, 2674, 8, 16384));
  }
  {
    BigWeights W(48, 7168, 2048, 2);
    const char* l = "EP8 contiguous 512 rows/expert down E48 N7168 K2048";
    time_contig<W1>(l, W, 512, true);
    time_contig<S1>(l, W, 512, true);
    time_contig<S3>(l, W, 512, true);
    time_contig<W2>(l, W, 512, true);
    time_contig<W5>(l, W, 512, false);
    time_contig<W6>(l, W, 512, false);
    time_contig<W8>(l, W, 512, false);
    time_contig<M1>(l, W, 512, false);
    time_ragged("EP8 T=16384-like offsets down E48 N7168 K2048 (21392 rows)", W, topk_counts(W.E, 2674, 8, 16384));
  }
  {
    // TP8 T=16384 gate_up as offsets: 131072 rows over 384 experts (N = 512: BN256 fits).
    BigWeights W(384, 512, 7168, 7);
    time_ragged("TP8 T=16384-like offsets gate_up E384 N512 K7168 (131072 rows)", W, topk_counts(W.E, 16384, 8, 16385));
  }
  {
    BigWeights W(128, 1536, 2048, 3);
    const char* l = "offsets Qwen3 T=4096 top8 E128 N1536 K2048 (32768 rows)";
    const std::vector<int> counts = topk_counts(W.E, 4096, 8, 2024);
    time_offsets<W1>(l, W, counts, 8, scattered_rows);
    time_offsets<S1>(l, W, counts, 8, scattered_rows);
    time_offsets<S3>(l, W, counts, 8, scattered_rows);
    time_offsets<W2>(l, W, counts, 8, nullptr);
    time_offsets<W4>(l, W, counts, 8, scattered_rows);
    time_offsets<W5>(l, W, counts, 8, nullptr);
    time_offsets<W6>(l, W, counts, 8, nullptr);
    time_offsets<W7>(l, W, counts, 8, nullptr);
    time_offsets<W8>(l, W, counts, 8, nullptr);
    time_offsets<M1>(l, W, counts, 8, nullptr);
  }
  {
    // TP8 down at T = 16384 (K = 256: four k blocks per tile): 131072 routed rows on 384
    // experts, as contiguous 384-row blocks.
    BigWeights W(384, 7168, 256, 5);
    const char* l = "TP8-like down contiguous 384 rows/expert E384 N7168 K256";
    time_contig<W1>(l, W, 384, true);
    time_contig<S1>(l, W, 384, true);
    time_contig<S2>(l, W, 384, false);
    time_contig<S3>(l, W, 384, true);
  }
  timing_qwen3();
}

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--qwen3-timing")
      g_qwen3_only = true;
    else
      args.push_back(argv[i]);
  }
  argc = (int)args.size();
  argv = args.data();
  // reps, PASS/FAIL and TIME name columns, weight GB/s, resource-table columns, bf16 fill hash
  const Settings settings{20, 78, 96, false, 8, 36, 0x85ebca6bu};
  return checker_main(argc, argv, settings, correctness, timing, 9,
                      "the WGMMA kernels need sm_90a; nothing to check on this device");
}
