// Standalone checker of the sm_90a WGMMA prefill kernels of kernels_src/w4a16_wgmma.cuh (no JIT):
// instantiates the template directly, runs every supported mode on random ragged inputs,
// compares with the CPU reference, and times the prefill shapes of shared/design/SHAPES.md
// next to the mma.sync kernel of w4a16_gemm.cuh.
//
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I. \
//        tools/kernel_check/w4a16_wgmma_check.cu reference/*.cpp -o /tmp/w4a16_wgmma_check
//   /tmp/w4a16_wgmma_check [--no-timing] [--reps N]
//
// Exit status 0 when every check passes.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels_src/w4a16_gemm.cuh"
#include "kernels_src/w4a16_wgmma.cuh"
#include "reference/bf16.hpp"
#include "reference/int4_reference.hpp"
#include "reference/w4a16_gemm.hpp"
#include "reference/w4a16_pack.hpp"

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                            \
    }                                                                                          \
  } while (0)

using chord::W4A16Args;
namespace ref = chord::ref;

static constexpr uint16_t kPoison = 0x7fc1;
static int g_fail = 0, g_pass = 0, g_reps = 20;

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

__global__ void fill_random_u32(uint32_t* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t x = (uint32_t)i * 0x9e3779b9u ^ seed;
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    p[i] = x;
  }
}
__global__ void fill_random_bf16(uint16_t* p, size_t n, uint32_t seed, float lo, float hi) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t x = (uint32_t)i * 0x85ebca6bu ^ seed;
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    const float f = lo + (hi - lo) * (float)(x >> 8) * (1.0f / 16777216.0f);
    uint32_t u = __float_as_uint(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    p[i] = (uint16_t)(u >> 16);
  }
}
__global__ void fill_u16(uint16_t* p, size_t n, uint16_t v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = v;
}

// ------------------------------------------------------------------------------------------
// Kernel configurations under test.
// ------------------------------------------------------------------------------------------
struct Info {
  int regs = 0, smem = 0, occ = 0, threads = 0;
};

template <class F>
static Info prepare_fn(F fn, int threads, int smem) {
  CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaFuncAttributes at;
  CK(cudaFuncGetAttributes(&at, fn));
  Info in;
  in.regs = at.numRegs;
  in.smem = smem;
  in.threads = threads;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&in.occ, fn, threads, smem));
  return in;
}

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
  static Info prepare() {
    if constexpr (chord::w4a16_wgmma_config_error(MODE, BM, BN, WG, ST) == nullptr) {
      return prepare_fn(wgmma_entry<MODE, BM, BN, WG, ST, MINB_, INFL_>, kThreads, kSmem);
    } else {
      return Info{};
    }
  }
  template <int MODE>
  static void launch(const W4A16Args& a) {
    if constexpr (chord::w4a16_wgmma_config_error(MODE, BM, BN, WG, ST) == nullptr) {
      static bool ready = false;
      if (!ready) {
        prepare<MODE>();
        ready = true;
      }
      const chord::W4A16Dim3 g = chord::w4a16_grid(a, BM, BN);
      if (g.x == 0) return;
      wgmma_entry<MODE, BM, BN, WG, ST, MINB_, INFL_><<<dim3(g.x, g.y, g.z), kThreads, kSmem>>>(a);
      CK(cudaGetLastError());
    } else {
      std::fprintf(stderr, "%s does not support mode %d\n", name().c_str(), MODE);
      std::exit(2);
    }
  }
  static void launch_mode(int mode, const W4A16Args& a) {
    switch (mode) {
      case 0: launch<0>(a); break;
      case 1: launch<1>(a); break;
      case 2: launch<2>(a); break;
      default: launch<3>(a); break;
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
  static Info prepare() {
    return prepare_fn(mma_entry<MODE, BM_, BN_, BK_, ST_, WM_, WN_>, kThreads, kSmem);
  }
  template <int MODE>
  static void launch(const W4A16Args& a) {
    static bool ready = false;
    if (!ready) {
      prepare<MODE>();
      ready = true;
    }
    const chord::W4A16Dim3 g = chord::w4a16_grid(a, BM_, BN_);
    if (g.x == 0) return;
    mma_entry<MODE, BM_, BN_, BK_, ST_, WM_, WN_><<<dim3(g.x, g.y, g.z), kThreads, kSmem>>>(a);
    CK(cudaGetLastError());
  }
};

using W1 = WCfg<128, 128, 2, 5, 2>;  // 2 warpgroups x one m64 tile, 2 CTAs / SM
using W2 = WCfg<128, 256, 2, 4, 1>;  // 2 warpgroups x two m64 tiles, 128 accumulators / thread
using W3 = WCfg<64, 64, 1, 4, 1>;    // smallest: one warpgroup, n64 wgmma
using W4 = WCfg<256, 128, 2, 4, 1>;  // 256-token tiles (not CONTIGUOUS: tiles would span experts)
using W5 = WCfg<128, 128, 1, 3, 1>;  // one warpgroup x two m64 tiles, 3 stages (minimum)
using W6 = WCfg<128, 128, 2, 6, 1>;  // deeper pipeline, 1 CTA / SM
using W7 = WCfg<128, 128, 2, 5, 2, 0>;  // W1 retiring every wgmma group before the next decode
using M1 = MCfg<128, 128, 64, 4, 2, 4>;  // the mma.sync prefill config of w4a16_check.cu

// ------------------------------------------------------------------------------------------
// Host helpers
// ------------------------------------------------------------------------------------------
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 1) {}
  uint32_t next() {
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;
    return (uint32_t)(s >> 11);
  }
  float uni() { return (next() & 0xffffff) / 16777216.0f; }
  int below(int n) { return (int)(next() % (uint32_t)n); }
};

template <class T>
struct DBuf {
  T* p = nullptr;
  size_t n = 0;
  DBuf() = default;
  explicit DBuf(size_t count) { alloc(count); }
  explicit DBuf(const std::vector<T>& v) {
    alloc(v.size());
    if (!v.empty()) CK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  void alloc(size_t count) {
    n = count;
    CK(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)));
  }
  std::vector<T> get() const {
    std::vector<T> v(n);
    if (n) CK(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
  ~DBuf() {
    if (p) cudaFree(p);
  }
  DBuf(const DBuf&) = delete;
  DBuf& operator=(const DBuf&) = delete;
};

static void report(const std::string& name, bool ok, const std::string& detail) {
  std::printf("%s %-78s %s\n", ok ? "PASS" : "FAIL", name.c_str(), detail.c_str());
  std::fflush(stdout);
  (ok ? g_pass : g_fail)++;
}

struct Weights {
  int E = 0, N = 0, K = 0;
  std::vector<uint16_t> logical;  // bf16 [E, N, K]
  DBuf<uint32_t> d_w;
  DBuf<uint16_t> d_s;
};

static void make_weights(Weights& W, int E, int N, int K, uint64_t seed) {
  W.E = E; W.N = N; W.K = K;
  Rng r(seed);
  const size_t total = (size_t)E * N * K;
  std::vector<uint8_t> codes(total);
  for (auto& c : codes) c = (uint8_t)(r.next() & 15);
  std::vector<uint16_t> scales(total / 32);
  for (auto& s : scales) s = ref::float_to_bf16(0.002f + 0.03f * r.uni());
  W.logical = ref::dequantize_codes(codes, scales, (int64_t)E * N, K);
  const ref::W4A16Packed packed = ref::pack_w4a16(codes.data(), scales.data(), E, N, K);
  W.d_w.alloc(packed.weight.size());
  W.d_s.alloc(packed.scales.size());
  CK(cudaMemcpy(W.d_w.p, packed.weight.data(), packed.weight.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(W.d_s.p, packed.scales.data(), packed.scales.size() * 2, cudaMemcpyHostToDevice));
}

struct Problem {
  std::string name;
  int mode = 0;
  int out_rows = 0;
  std::vector<uint16_t> a;
  std::vector<int32_t> r0, r1, r2;
  W4A16Args args{};
  std::vector<uint16_t> ref_out;
};

static std::vector<uint16_t> random_a(size_t n, Rng& r) {
  std::vector<uint16_t> a(n);
  for (auto& v : a) v = ref::float_to_bf16(2.f * r.uni() - 1.f);
  return a;
}

static void compute_ref(Problem& P, const Weights& W) {
  P.ref_out.assign((size_t)P.out_rows * W.N, kPoison);
  const W4A16Args& a = P.args;
  switch (P.mode) {
    case chord::kW4A16Contiguous:
      ref::w4a16_gemm_contiguous(P.a.data(), a.a_rows, P.r0.data(), W.logical.data(), W.E, W.N, W.K, P.ref_out.data());
      break;
    case chord::kW4A16Masked:
      ref::w4a16_gemm_masked(P.a.data(), a.num_groups, a.max_m, P.r0.data(), W.logical.data(), W.N, W.K,
                             P.ref_out.data());
      break;
    case chord::kW4A16Offsets:
      ref::w4a16_gemm_offsets(P.a.data(), a.a_rows, P.r0.data(), W.logical.data(), W.E, W.N, W.K, P.ref_out.data());
      break;
    default:
      ref::w4a16_gemm_indexed(P.a.data(), a.a_rows, a.top_k, P.r0.data(), a.capacity, P.r1.data(), a.block_size,
                              P.r2[0], W.logical.data(), W.E, W.N, W.K, P.ref_out.data());
  }
}

struct Cmp {
  bool ok = true;
  double rel_l2 = 0, max_rel = 0;
  long valid_rows = 0, bad_untouched = 0, nan_valid = 0;
};

// Rows whose reference is poison must stay poison; valid rows within 1e-2 (relative L2 and
// max error relative to max |ref|), no NaN.
static Cmp compare(const std::vector<uint16_t>& out, const std::vector<uint16_t>& refo, int rows, int n) {
  Cmp c;
  double num = 0, den = 0, max_abs = 0, max_ref = 0;
  for (int r = 0; r < rows; ++r) {
    const uint16_t* o = &out[(size_t)r * n];
    const uint16_t* f = &refo[(size_t)r * n];
    if (f[0] == kPoison) {
      for (int j = 0; j < n; ++j) c.bad_untouched += o[j] != kPoison;
      continue;
    }
    ++c.valid_rows;
    for (int j = 0; j < n; ++j) {
      const double x = ref::bf16_to_float(o[j]), y = ref::bf16_to_float(f[j]);
      if (!std::isfinite(x)) {
        ++c.nan_valid;
        continue;
      }
      num += (x - y) * (x - y);
      den += y * y;
      max_abs = std::max(max_abs, std::fabs(x - y));
      max_ref = std::max(max_ref, std::fabs(y));
    }
  }
  c.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  c.max_rel = max_ref > 0 ? max_abs / max_ref : max_abs;
  c.ok = c.rel_l2 < 1e-2 && c.max_rel < 1e-2 && c.bad_untouched == 0 && c.nan_valid == 0;
  return c;
}

template <class C>
static void run_problem(const Problem& P, const Weights& W) {
  DBuf<uint16_t> d_a(P.a);
  DBuf<int32_t> d0(P.r0), d1(P.r1), d2(P.r2);
  DBuf<uint16_t> d_out((size_t)P.out_rows * W.N);
  if (d_out.n) fill_u16<<<256, 256>>>(d_out.p, d_out.n, kPoison);
  CK(cudaGetLastError());
  W4A16Args a = P.args;
  a.a = d_a.p; a.w = W.d_w.p; a.scales = W.d_s.p; a.out = d_out.p;
  a.m_indices = a.masked_m = a.offsets = a.sorted_ids = a.expert_ids = a.num_tokens_padded = nullptr;
  switch (P.mode) {
    case 0: a.m_indices = d0.p; break;
    case 1: a.masked_m = d0.p; break;
    case 2: a.offsets = d0.p; break;
    default: a.sorted_ids = d0.p; a.expert_ids = d1.p; a.num_tokens_padded = d2.p;
  }
  a.n = W.N; a.k = W.K; a.num_experts = W.E; a.lda = W.K; a.ldc = W.N; a.mode = P.mode;
  const chord::W4A16Dim3 g = chord::w4a16_grid(a, C::BM, C::BN);
  C::launch_mode(P.mode, a);
  CK(cudaDeviceSynchronize());
  const Cmp c = compare(d_out.get(), P.ref_out, P.out_rows, W.N);
  char det[200];
  std::snprintf(det, sizeof det, "rows=%ld grid=%u rel_l2=%.2e max_rel=%.2e untouched_bad=%ld nan=%ld", c.valid_rows,
                g.x, c.rel_l2, c.max_rel, c.bad_untouched, c.nan_valid);
  report(P.name + " " + C::name(), c.ok, det);
}

// ------------------------------------------------------------------------------------------
// Problem builders (ragged: empty experts, 1-row experts, partial tiles)
// ------------------------------------------------------------------------------------------
static Problem contiguous(const std::string& name, const Weights& W, const std::vector<int>& counts, int pad_blocks,
                          Rng& r) {
  Problem P;
  P.name = name;
  P.mode = chord::kW4A16Contiguous;
  const int al = chord::kW4A16ContiguousAlign;
  for (size_t e = 0; e < counts.size(); ++e) {
    const int padded = (counts[e] + al - 1) / al * al;
    for (int i = 0; i < padded; ++i) P.r0.push_back(i < counts[e] ? (int)e : -1);
  }
  for (int i = 0; i < pad_blocks * al; ++i) P.r0.push_back(-1);
  const int m = (int)P.r0.size();
  P.out_rows = m;
  P.a = random_a((size_t)m * W.K, r);
  P.args.a_rows = m;
  compute_ref(P, W);
  return P;
}

static Problem offsets(const std::string& name, const Weights& W, const std::vector<int>& counts, Rng& r) {
  Problem P;
  P.name = name;
  P.mode = chord::kW4A16Offsets;
  int s = 0;
  for (int c : counts) P.r0.push_back(s += c);
  P.out_rows = s;
  P.a = random_a((size_t)s * W.K, r);
  P.args.a_rows = s;
  compute_ref(P, W);
  return P;
}

static Problem masked(const std::string& name, const Weights& W, int max_m, const std::vector<int>& mm, Rng& r) {
  Problem P;
  P.name = name;
  P.mode = chord::kW4A16Masked;
  P.r0 = mm;
  P.args.num_groups = (int)mm.size();
  P.args.max_m = max_m;
  P.out_rows = (int)mm.size() * max_m;
  P.a = random_a((size_t)P.out_rows * W.K, r);
  compute_ref(P, W);
  return P;
}

// vLLM moe_align_block_size emulation: skewed top_k routing, expert E-1 never chosen,
// experts in `nonlocal_` get expert id -1, garbage past num_tokens_padded.
static Problem indexed(const std::string& name, const Weights& W, int tokens, int top_k, int block_size,
                       const std::vector<int>& nonlocal_, int over_alloc, Rng& r, uint64_t route_seed) {
  Problem P;
  P.name = name;
  P.mode = chord::kW4A16Indexed;
  const int E = W.E, routes = tokens * top_k;
  std::vector<std::vector<int>> per(E);
  Rng rr(route_seed);
  for (int t = 0; t < tokens; ++t) {
    std::vector<int> chosen;
    while ((int)chosen.size() < top_k) {
      const int e = std::min(rr.below(E - 1), rr.below(E - 1));
      if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) chosen.push_back(e);
    }
    for (int k = 0; k < top_k; ++k) per[chosen[k]].push_back(t * top_k + k);
  }
  std::vector<int> sorted, eids;
  for (int e = 0; e < E; ++e) {
    const bool local = std::find(nonlocal_.begin(), nonlocal_.end(), e) == nonlocal_.end();
    const int cnt = (int)per[e].size();
    const int padded = (cnt + block_size - 1) / block_size * block_size;
    for (int i = 0; i < padded; ++i) sorted.push_back(i < cnt ? per[e][i] : routes);
    for (int b = 0; b < padded / block_size; ++b) eids.push_back(local ? e : -1);
  }
  const int ntp = (int)sorted.size();
  const int capacity = ntp + over_alloc;
  while ((int)sorted.size() < capacity) sorted.push_back(rr.below(routes));
  while ((int)eids.size() < (capacity + block_size - 1) / block_size) eids.push_back(rr.below(E));
  P.r0 = sorted;
  P.r1 = eids;
  P.r2 = {ntp};
  P.args.a_rows = tokens;
  P.args.top_k = top_k;
  P.args.block_size = block_size;
  P.args.capacity = capacity;
  P.out_rows = routes;
  P.a = random_a((size_t)tokens * W.K, r);
  compute_ref(P, W);
  return P;
}

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
  Problem P = indexed("indexed M50 top4 bs=BM nonlocal{1}", W, 50, 4, C::BM, {1}, 5, r, 96);
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
  probs.push_back(indexed("indexed M200 top4 bs256 nonlocal{2,6} overalloc", W, 200, 4, 256, {2, 6}, 133, r, 99));
  probs.push_back(indexed("indexed M70 top1 bs256 overalloc", W, 70, 1, 256, {}, 77, r, 98));
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
}

// ------------------------------------------------------------------------------------------
// Timing
// ------------------------------------------------------------------------------------------
struct BigWeights {
  int E, N, K;
  DBuf<uint32_t> w;
  DBuf<uint16_t> s;
  BigWeights(int e, int n, int k, uint32_t seed) : E(e), N(n), K(k), w((size_t)e * n * k / 8), s((size_t)e * n * k / 32) {
    fill_random_u32<<<4096, 256>>>(w.p, w.n, seed);
    fill_random_bf16<<<4096, 256>>>(s.p, s.n, seed + 1, 0.002f, 0.032f);
    CK(cudaGetLastError());
  }
};

template <class C, int MODE>
static double time_kernel(const W4A16Args& a, uint8_t* flush, size_t flush_bytes) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) C::template launch<MODE>(a);
  CK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int i = 0; i < g_reps; ++i) {
    CK(cudaMemsetAsync(flush, i & 0xff, flush_bytes));
    CK(cudaEventRecord(e0));
    C::template launch<MODE>(a);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float t;
    CK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return ms[ms.size() / 2] * 1e3;
}

// Sampled reference check of a timed problem: (output row, input row, expert) triples x 256 columns.
static void sampled_check(const std::string& name, const BigWeights& W, const DBuf<uint16_t>& d_a,
                          const DBuf<uint16_t>& d_out, const std::vector<std::array<int, 3>>& rows) {
  const std::vector<uint32_t> hw = W.w.get();
  const std::vector<uint16_t> hs = W.s.get();
  std::vector<uint16_t> ref_rows, out_rows, arow(W.K), orow(W.N);
  const int cols = 256;
  for (const auto& t : rows) {
    CK(cudaMemcpy(arow.data(), d_a.p + (size_t)t[1] * W.K, W.K * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(orow.data(), d_out.p + (size_t)t[0] * W.N, W.N * 2, cudaMemcpyDeviceToHost));
    for (int c = 0; c < cols; ++c) {
      const int n = (int)(((long long)c * 7919 + t[0] * 131) % W.N);
      float acc = 0.f;
      for (int k = 0; k < W.K; ++k)
        acc += ref::bf16_to_float(arow[k]) *
               ref::bf16_to_float(ref::dequantize_packed_element(hw.data(), hs.data(), W.N, W.K, t[2], n, k));
      ref_rows.push_back(ref::float_to_bf16(acc));
      out_rows.push_back(orow[n]);
    }
  }
  const Cmp c = compare(out_rows, ref_rows, (int)rows.size(), cols);
  char det[160];
  std::snprintf(det, sizeof det, "sampled %zu rows x %d cols rel_l2=%.2e max_rel=%.2e", rows.size(), cols, c.rel_l2,
                c.max_rel);
  report(name + " (sampled check)", c.ok, det);
}

static void timing_line(const std::string& name, double us, double flops) {
  std::printf("TIME %-96s %9.1f us  %7.1f TFLOP/s\n", name.c_str(), us, flops / us * 1e-6);
  std::fflush(stdout);
}

template <class C>
static void time_contig(const char* label, BigWeights& W, int rows_per_expert, uint8_t* flush, size_t fb, bool check) {
  const int m = W.E * rows_per_expert;
  DBuf<uint16_t> a((size_t)m * W.K), out((size_t)m * W.N);
  fill_random_bf16<<<4096, 256>>>(a.p, a.n, 6, -1.f, 1.f);
  std::vector<int> mi(m);
  for (int i = 0; i < m; ++i) mi[i] = i / rows_per_expert;
  DBuf<int32_t> d_mi(mi);
  W4A16Args args{};
  args.a = a.p; args.w = W.w.p; args.scales = W.s.p; args.out = out.p; args.m_indices = d_mi.p;
  args.lda = W.K; args.ldc = W.N; args.n = W.N; args.k = W.K; args.num_experts = W.E; args.a_rows = m;
  args.mode = chord::kW4A16Contiguous;
  const double us = time_kernel<C, 0>(args, flush, fb);
  timing_line(std::string(label) + " " + C::name(), us, 2.0 * m * W.N * W.K);
  if (check) {
    std::vector<std::array<int, 3>> rows;
    for (int i = 0; i < 6; ++i) {
      const int r = (int)(((long long)i * 4099 + 77) % m);
      rows.push_back({r, r, mi[r]});
    }
    sampled_check(std::string(label) + " " + C::name(), W, a, out, rows);
  }
}

// Qwen3 offsets: T tokens, top-8 of E experts drawn uniformly per token (seeded), rows sorted
// by expert.
template <class C>
static void time_offsets(const char* label, BigWeights& W, int tokens, int top_k, uint8_t* flush, size_t fb,
                         bool check) {
  Rng rr(2024);
  std::vector<int> counts(W.E, 0);
  for (int t = 0; t < tokens; ++t) {
    std::vector<int> chosen;
    while ((int)chosen.size() < top_k) {
      const int e = rr.below(W.E);
      if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) chosen.push_back(e);
    }
    for (int e : chosen) ++counts[e];
  }
  std::vector<int> offs(W.E);
  int s = 0;
  for (int e = 0; e < W.E; ++e) offs[e] = s += counts[e];
  DBuf<uint16_t> a((size_t)s * W.K), out((size_t)s * W.N);
  fill_random_bf16<<<4096, 256>>>(a.p, a.n, 8, -1.f, 1.f);
  DBuf<int32_t> d_off(offs);
  W4A16Args args{};
  args.a = a.p; args.w = W.w.p; args.scales = W.s.p; args.out = out.p; args.offsets = d_off.p;
  args.lda = W.K; args.ldc = W.N; args.n = W.N; args.k = W.K; args.num_experts = W.E; args.a_rows = s;
  args.mode = chord::kW4A16Offsets;
  const double us = time_kernel<C, 2>(args, flush, fb);
  timing_line(std::string(label) + " " + C::name(), us, 2.0 * s * W.N * W.K);
  if (check) {
    std::vector<std::array<int, 3>> rows;
    for (int i = 0; i < 6; ++i) {
      const int r = (int)(((long long)i * 5003 + 11) % s);
      const int e = (int)(std::upper_bound(offs.begin(), offs.end(), r) - offs.begin());
      rows.push_back({r, r, e});
    }
    sampled_check(std::string(label) + " " + C::name(), W, a, out, rows);
  }
}

template <class C, int MODE>
static void print_info(const char* tag) {
  const Info in = C::template prepare<MODE>();
  std::printf("  %-8s %-36s threads=%d regs=%d smem=%d B occupancy=%d CTA/SM\n", tag, C::name().c_str(), in.threads,
              in.regs, in.smem, in.occ);
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
  print_info<M1, 0>("contig");

  const size_t fb = 256ull << 20;
  DBuf<uint8_t> flush(fb);
  std::printf("\n== timings (median of %d after 3 warm-up launches, L2 flushed by a 256 MB memset before each)\n",
              g_reps);
  {
    BigWeights W(48, 4096, 7168, 1);
    const char* l = "EP8 contiguous 512 rows/expert gate_up E48 N4096 K7168";
    time_contig<W1>(l, W, 512, flush.p, fb, true);
    time_contig<W2>(l, W, 512, flush.p, fb, true);
    time_contig<W3>(l, W, 512, flush.p, fb, false);
    time_contig<W5>(l, W, 512, flush.p, fb, false);
    time_contig<W6>(l, W, 512, flush.p, fb, false);
    time_contig<W7>(l, W, 512, flush.p, fb, true);
    time_contig<M1>(l, W, 512, flush.p, fb, false);
  }
  {
    BigWeights W(48, 7168, 2048, 2);
    const char* l = "EP8 contiguous 512 rows/expert down E48 N7168 K2048";
    time_contig<W1>(l, W, 512, flush.p, fb, true);
    time_contig<W2>(l, W, 512, flush.p, fb, true);
    time_contig<W5>(l, W, 512, flush.p, fb, false);
    time_contig<W6>(l, W, 512, flush.p, fb, false);
    time_contig<M1>(l, W, 512, flush.p, fb, false);
  }
  {
    BigWeights W(128, 1536, 2048, 3);
    const char* l = "offsets Qwen3 T=4096 top8 E128 N1536 K2048 (32768 rows)";
    time_offsets<W1>(l, W, 4096, 8, flush.p, fb, true);
    time_offsets<W2>(l, W, 4096, 8, flush.p, fb, false);
    time_offsets<W4>(l, W, 4096, 8, flush.p, fb, true);
    time_offsets<W5>(l, W, 4096, 8, flush.p, fb, false);
    time_offsets<W6>(l, W, 4096, 8, flush.p, fb, false);
    time_offsets<W7>(l, W, 4096, 8, flush.p, fb, false);
    time_offsets<M1>(l, W, 4096, 8, flush.p, fb, false);
  }
}

int main(int argc, char** argv) {
  bool do_timing = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--no-timing")) do_timing = false;
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) g_reps = std::max(1, std::atoi(argv[++i]));
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  if (prop.major != 9) {
    std::printf("the WGMMA kernels need sm_90a; nothing to check on this device\n");
    return 77;
  }
  correctness();
  if (do_timing) timing();
  std::printf("\nSUMMARY: %d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
