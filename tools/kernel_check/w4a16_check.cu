// Standalone checker of the W4A16 kernel family (no JIT): instantiates the templates of
// kernels_src/ directly, runs every mode on random inputs, compares against the CPU
// reference, and times the decode / prefill shapes of shared/design/SHAPES.md.
//
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I. \
//        tools/kernel_check/w4a16_check.cu reference/*.cpp -o /tmp/w4a16_check && /tmp/w4a16_check
//
// Options: --no-timing, --quick (10 timing reps instead of 50).
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels_src/w4a16_gemm.cuh"
#include "kernels_src/w4a16_pack.cuh"
#include "reference/bf16.hpp"
#include "reference/w4a16_gemm.hpp"
#include "reference/int4_reference.hpp"
#include "reference/w4a16_pack.hpp"

#define CK(x)                                                                                          \
  do {                                                                                                 \
    cudaError_t e_ = (x);                                                                              \
    if (e_ != cudaSuccess) {                                                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));         \
      std::exit(2);                                                                                    \
    }                                                                                                  \
  } while (0)

using chord::W4A16Args;
namespace ref = chord::ref;

static constexpr uint16_t kPoison = 0x7fc1;
static int g_fail = 0, g_pass = 0;

// ------------------------------------------------------------------------------------------
// Kernels: the same one-line wrappers the JIT generates.
// ------------------------------------------------------------------------------------------
template <int MODE, int BM, int BN, int BK, int ST, int WM, int WN, int PATH>
__global__ void __launch_bounds__(32 * WM * WN) gemm_entry(const __grid_constant__ W4A16Args args) {
  chord::w4a16_gemm_body<MODE, BM, BN, BK, ST, WM, WN, PATH>(args);
}
template <int SRC>
__global__ void __launch_bounds__(chord::kW4A16PackThreads) pack_entry(const __grid_constant__ chord::W4A16PackArgs a) {
  chord::w4a16_pack_body<SRC>(a);
}
__global__ void __launch_bounds__(chord::kW4A16PackThreads) unpack_entry(const __grid_constant__ chord::W4A16UnpackArgs a) {
  chord::w4a16_unpack_body(a);
}

__global__ void fill_random_u32(uint32_t* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t x = (uint32_t)i * 0x9e3779b9u ^ seed;
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    p[i] = x;
  }
}
// bf16 values lo + (hi - lo) * u, u uniform in [0, 1).
__global__ void fill_random_bf16(uint16_t* p, size_t n, uint32_t seed, float lo, float hi) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t x = (uint32_t)i * 0x9e3779b9u ^ seed;
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    float f = lo + (hi - lo) * (float)(x >> 8) * (1.0f / 16777216.0f);
    uint32_t u = __float_as_uint(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    p[i] = (uint16_t)(u >> 16);
  }
}
__global__ void fill_u16(uint16_t* p, size_t n, uint16_t v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = v;
}

// ------------------------------------------------------------------------------------------
// Configs
// ------------------------------------------------------------------------------------------
struct KernelInfo {
  int regs = 0, smem = 0, occupancy = 0, threads = 0;
};

// PATH: the main-loop variant (kW4A16PathStaged / kW4A16PathDirect); by default the one the
// JIT gets for this config (w4a16_default_path), so the old path stays measurable.
template <int BM_, int BN_, int BK_, int ST_, int WM_, int WN_, int PATH_ = chord::w4a16_default_path(BM_, WM_, ST_)>
struct Cfg {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, ST = ST_, WM = WM_, WN = WN_, PATH = PATH_;
  static constexpr int kThreads = 32 * WM * WN;
  static constexpr int kSmem = chord::w4a16_smem_bytes(BM, BN, BK, ST);
  static std::string name() {
    char b[96];
    std::snprintf(b, sizeof b, "BM%d_BN%d_BK%d_S%d_W%dx%d_%s", BM, BN, BK, ST, WM, WN,
                  PATH == chord::kW4A16PathDirect ? "direct" : "staged");
    return b;
  }
  template <int MODE>
  static KernelInfo prepare() {
    auto fn = gemm_entry<MODE, BM, BN, BK, ST, WM, WN, PATH>;
    CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    cudaFuncAttributes at;
    CK(cudaFuncGetAttributes(&at, fn));
    KernelInfo ki;
    ki.regs = at.numRegs;
    ki.smem = kSmem;
    ki.threads = kThreads;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ki.occupancy, fn, kThreads, kSmem));
    return ki;
  }
  template <int MODE>
  static void launch(const W4A16Args& args, cudaStream_t s = 0) {
    static bool ready = false;
    if (!ready) {
      prepare<MODE>();
      ready = true;
    }
    const chord::W4A16Dim3 g = chord::w4a16_grid(args, BM, BN);
    if (g.x == 0) return;
    gemm_entry<MODE, BM, BN, BK, ST, WM, WN, PATH><<<dim3(g.x, g.y, g.z), kThreads, kSmem, s>>>(args);
    CK(cudaGetLastError());
  }
  static void launch_mode(int mode, const W4A16Args& args, cudaStream_t s = 0) {
    switch (mode) {
      case 0: launch<0>(args, s); break;
      case 1: launch<1>(args, s); break;
      case 2: launch<2>(args, s); break;
      default: launch<3>(args, s); break;
    }
  }
};

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
  void alloc(size_t count) {
    n = count;
    CK(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)));
  }
  DBuf(const std::vector<T>& v) {
    alloc(v.size());
    if (!v.empty()) CK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> get() const {
    std::vector<T> v(n);
    if (n) CK(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
  ~DBuf() { if (p) cudaFree(p); }
  DBuf(const DBuf&) = delete;
  DBuf& operator=(const DBuf&) = delete;
};

static void report(const std::string& name, bool ok, const std::string& detail) {
  std::printf("%s %-62s %s\n", ok ? "PASS" : "FAIL", name.c_str(), detail.c_str());
  std::fflush(stdout);
  (ok ? g_pass : g_fail)++;
}

// Weights of one (E, N, K) problem, on host (codes, scales, logical bf16) and device (packed).
struct Weights {
  int E, N, K;
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales, logical;
  ref::W4A16Packed packed;
  DBuf<uint32_t> d_w;
  DBuf<uint16_t> d_s;
};

static void make_weights(Weights& W, int E, int N, int K, uint64_t seed) {
  W.E = E; W.N = N; W.K = K;
  Rng r(seed);
  const size_t total = (size_t)E * N * K;
  W.codes.resize(total);
  for (auto& c : W.codes) c = (uint8_t)(r.next() & 15);
  W.scales.resize(total / 32);
  for (auto& s : W.scales) s = ref::float_to_bf16(0.002f + 0.03f * r.uni());
  W.logical = ref::dequantize_codes(W.codes, W.scales, static_cast<int64_t>(E) * N, K);
  W.packed = ref::pack_w4a16(W.codes.data(), W.scales.data(), E, N, K);
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

// A GEMM problem: inputs, routing, reference output; the valid-row mask is derived from ref.
struct Problem {
  std::string name;
  int mode = 0;
  int a_rows_total = 0;  // rows of A buffer
  int out_rows = 0;      // rows of out buffer
  std::vector<uint16_t> a;
  std::vector<int32_t> r0, r1, r2;  // routing tensors (mode specific)
  W4A16Args args{};                 // host fields filled; pointers set at run
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

static Cmp compare(const std::vector<uint16_t>& out, const std::vector<uint16_t>& refo, int rows, int n) {
  Cmp c;
  double num = 0, den = 0, max_abs = 0, max_ref = 0;
  for (int r = 0; r < rows; ++r) {
    const uint16_t* o = &out[(size_t)r * n];
    const uint16_t* f = &refo[(size_t)r * n];
    const bool valid = f[0] != kPoison;
    if (!valid) {
      for (int j = 0; j < n; ++j) c.bad_untouched += o[j] != kPoison;
      continue;
    }
    ++c.valid_rows;
    for (int j = 0; j < n; ++j) {
      const double x = ref::bf16_to_float(o[j]), y = ref::bf16_to_float(f[j]);
      if (!std::isfinite(x)) { ++c.nan_valid; continue; }
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

// Runs problem P with config C; pointers are set here.
template <class C>
static void run_problem(Problem& P, const Weights& W, const std::string& extra = "") {
  DBuf<uint16_t> d_a(P.a);
  DBuf<int32_t> d0(P.r0), d1(P.r1), d2(P.r2);
  DBuf<uint16_t> d_out((size_t)P.out_rows * W.N);
  {
    const size_t n = d_out.n;
    if (n) fill_u16<<<256, 256>>>(d_out.p, n, kPoison);
    CK(cudaGetLastError());
  }
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
  char det[256];
  std::snprintf(det, sizeof det, "rows=%ld grid=%u rel_l2=%.2e max_rel=%.2e untouched_bad=%ld nan=%ld", c.valid_rows,
                g.x, c.rel_l2, c.max_rel, c.bad_untouched, c.nan_valid);
  report(P.name + extra + " " + C::name(), c.ok, det);
}

// ------------------------------------------------------------------------------------------
// Problem builders
// ------------------------------------------------------------------------------------------
static Problem contiguous(const std::string& name, const Weights& W, const std::vector<int>& counts, int extra_pad_blocks,
                          Rng& r) {
  Problem P;
  P.name = name;
  P.mode = chord::kW4A16Contiguous;
  const int al = chord::kW4A16ContiguousAlign;
  for (size_t e = 0; e < counts.size(); ++e) {
    const int padded = (counts[e] + al - 1) / al * al;
    for (int i = 0; i < padded; ++i) P.r0.push_back(i < counts[e] ? (int)e : -1);
  }
  for (int i = 0; i < extra_pad_blocks * al; ++i) P.r0.push_back(-1);
  const int m = (int)P.r0.size();
  P.a_rows_total = P.out_rows = m;
  P.a = random_a((size_t)m * W.K, r);
  P.args.a_rows = m;
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
  P.a_rows_total = P.out_rows = (int)mm.size() * max_m;
  P.a = random_a((size_t)P.a_rows_total * W.K, r);
  compute_ref(P, W);
  return P;
}

static Problem offsets(const std::string& name, const Weights& W, const std::vector<int>& counts, Rng& r) {
  Problem P;
  P.name = name;
  P.mode = chord::kW4A16Offsets;
  int s = 0;
  for (int c : counts) P.r0.push_back(s += c);
  P.a_rows_total = P.out_rows = s;
  P.a = random_a((size_t)s * W.K, r);
  P.args.a_rows = s;
  compute_ref(P, W);
  return P;
}

// vLLM moe_align_block_size emulation; experts in `nonlocal_` get expert id -1.
static Problem indexed(const std::string& name, const Weights& W, int tokens, int top_k, int block_size,
                       const std::vector<int>& nonlocal_, int over_alloc, bool empty, Rng& r, uint64_t route_seed) {
  Problem P;
  P.name = name;
  P.mode = chord::kW4A16Indexed;
  const int E = W.E, routes = tokens * top_k;
  std::vector<std::vector<int>> per(E);
  Rng rr(route_seed);
  for (int t = 0; t < tokens; ++t) {
    std::vector<int> chosen;
    while ((int)chosen.size() < top_k) {
      // skewed: low expert ids more likely, the last expert never chosen (empty expert)
      int e = std::min(rr.below(E - 1), rr.below(E - 1));
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
  const int ntp = empty ? 0 : (int)sorted.size();
  const int capacity = (int)sorted.size() + over_alloc;
  while ((int)sorted.size() < capacity) sorted.push_back(rr.below(routes));  // garbage past the valid prefix
  while ((int)eids.size() < (capacity + block_size - 1) / block_size) eids.push_back(rr.below(E));
  P.r0 = sorted;
  P.r1 = eids;
  P.r2 = {ntp};
  P.args.a_rows = tokens;
  P.args.top_k = top_k;
  P.args.block_size = block_size;
  P.args.capacity = capacity;
  P.a_rows_total = tokens;
  P.out_rows = routes;
  P.a = random_a((size_t)tokens * W.K, r);
  compute_ref(P, W);
  return P;
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

template <class F>
static void for_each_cfg(F&& f) {
  f(C1{}); f(C2{}); f(C3{}); f(C4{}); f(C5{}); f(C6{}); f(C7{}); f(C8{}); f(C9{}); f(C10{}); f(C11{}); f(C12{});
}

static void correctness() {
  Rng r(1234);
  Weights W;
  make_weights(W, 8, 512, 1024, 7);
  Weights Ws;  // small K: fewer k-blocks than pipeline stages
  make_weights(Ws, 6, 256, 256, 11);

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
static int g_reps = 50;

struct BigWeights {
  int E, N, K;
  DBuf<uint32_t> w;
  DBuf<uint16_t> s;
  BigWeights(int e, int n, int k, uint32_t seed)
      : E(e), N(n), K(k), w((size_t)e * n * k / 8), s((size_t)e * n * k / 32) {
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
  return ms[ms.size() / 2] * 1e3;  // us
}

// Sampled check of a big problem: `rows` (output row, input row, expert) triples, `cols` columns.
static void sampled_check(const std::string& name, const BigWeights& W, const DBuf<uint16_t>& d_a, const DBuf<uint16_t>& d_out,
                          const std::vector<std::array<int, 3>>& rows) {
  std::vector<uint32_t> hw = W.w.get();
  std::vector<uint16_t> hs = W.s.get();
  std::vector<uint16_t> ref_rows, out_rows;
  std::vector<uint16_t> arow(W.K), orow(W.N);
  const int cols = 256;
  for (auto& t : rows) {
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

template <class C, int MODE>
static void print_info(const char* tag) {
  const KernelInfo ki = C::template prepare<MODE>();
  std::printf("  %-10s %-28s threads=%d regs=%d smem=%d B occupancy=%d CTA/SM\n", tag, C::name().c_str(), ki.threads,
              ki.regs, ki.smem, ki.occupancy);
}

static void timing_line(const std::string& name, double us, double weight_bytes, double flops) {
  std::printf("TIME %-58s %9.1f us  %7.1f GB/s(weights)  %7.1f TFLOP/s\n", name.c_str(), us, weight_bytes / us * 1e-3,
              flops / us * 1e-6);
  std::fflush(stdout);
}

template <class C>
static void time_masked(const char* label, BigWeights& W, int tokens, int max_m, uint8_t* flush, size_t fb, bool check) {
  const int G = W.E;
  DBuf<uint16_t> a((size_t)G * max_m * W.K), out((size_t)G * max_m * W.N);
  fill_random_bf16<<<4096, 256>>>(a.p, a.n, 5, -1.f, 1.f);
  std::vector<int> mm(G, tokens);
  DBuf<int32_t> d_mm(mm);
  W4A16Args args{};
  args.a = a.p; args.w = W.w.p; args.scales = W.s.p; args.out = out.p; args.masked_m = d_mm.p;
  args.lda = W.K; args.ldc = W.N; args.n = W.N; args.k = W.K; args.num_experts = W.E;
  args.num_groups = G; args.max_m = max_m; args.mode = chord::kW4A16Masked;
  const double us = time_kernel<C, 1>(args, flush, fb);
  const double wb = (double)G * W.N * (W.K / 2 + 2.0 * W.K / 32);
  timing_line(std::string(label) + " " + C::name(), us, wb, 2.0 * G * tokens * W.N * W.K);
  if (check) {
    std::vector<std::array<int, 3>> rows;
    for (int i = 0; i < 6; ++i) {
      const int g = (i * 17) % G, r = (i * 5) % tokens;
      rows.push_back({g * max_m + r, g * max_m + r, g});
    }
    sampled_check(std::string(label) + " " + C::name(), W, a, out, rows);
  }
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
  const double wb = (double)W.E * W.N * (W.K / 2 + 2.0 * W.K / 32);
  timing_line(std::string(label) + " " + C::name(), us, wb, 2.0 * m * W.N * W.K);
  if (check) {
    std::vector<std::array<int, 3>> rows;
    for (int i = 0; i < 6; ++i) {
      const int r = (int)(((long long)i * 4099 + 77) % m);
      rows.push_back({r, r, mi[r]});
    }
    sampled_check(std::string(label) + " " + C::name(), W, a, out, rows);
  }
}

template <class C>
static void time_offsets(const char* label, BigWeights& W, const std::vector<int>& counts, uint8_t* flush, size_t fb,
                         bool check) {
  std::vector<int> off;
  int total = 0;
  for (int c : counts) off.push_back(total += c);
  DBuf<uint16_t> a((size_t)total * W.K), out((size_t)total * W.N);
  fill_random_bf16<<<4096, 256>>>(a.p, a.n, 7, -1.f, 1.f);
  DBuf<int32_t> d_off(off);
  W4A16Args args{};
  args.a = a.p; args.w = W.w.p; args.scales = W.s.p; args.out = out.p; args.offsets = d_off.p;
  args.lda = W.K; args.ldc = W.N; args.n = W.N; args.k = W.K; args.num_experts = W.E; args.a_rows = total;
  args.mode = chord::kW4A16Offsets;
  const double us = time_kernel<C, 2>(args, flush, fb);
  int active = 0;
  for (int c : counts) active += c > 0;
  const double wb = (double)active * W.N * (W.K / 2 + 2.0 * W.K / 32);
  timing_line(std::string(label) + " " + C::name(), us, wb, 2.0 * total * W.N * W.K);
  if (check) {
    std::vector<std::array<int, 3>> rows;
    int e = 0;
    for (int r = 0; r < total && rows.size() < 6; r += std::max(1, total / 6)) {
      while (off[e] <= r) ++e;
      rows.push_back({r, r, e});
    }
    sampled_check(std::string(label) + " " + C::name(), W, a, out, rows);
  }
}

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
using P1 = C3;                                   // <128,128,64,4,2,4>

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
  print_info<DI, 2>("offsets");
  print_info<DJ, 2>("offsets");
  print_info<P1, 0>("contig");
  print_info<C1, 3>("indexed");

  const size_t fb = 256ull << 20;
  DBuf<uint8_t> flush(fb);
  std::printf("\n== timings (median of %d, L2 flushed with a 256 MB memset between reps)\n", g_reps);
  {
    BigWeights W(48, 4096, 7168, 1);
    const char* L = "EP8 masked 8 tok/expert gate_up E48 N4096 K7168 max_m=64";
    time_masked<S1>(L, W, 8, 64, flush.p, fb, false);
    time_masked<DA>(L, W, 8, 64, flush.p, fb, true);
    time_masked<DB>(L, W, 8, 64, flush.p, fb, true);
    time_masked<DC>(L, W, 8, 64, flush.p, fb, false);
    time_masked<DD>(L, W, 8, 64, flush.p, fb, false);
    time_masked<DE>(L, W, 8, 64, flush.p, fb, false);
    time_masked<DF>(L, W, 8, 64, flush.p, fb, false);
    time_masked<DK>(L, W, 8, 64, flush.p, fb, false);
    const char* L12 = "EP8 masked 12 tok/expert gate_up E48 N4096 K7168 max_m=64";
    time_masked<S2>(L12, W, 12, 64, flush.p, fb, false);
    time_masked<DG>(L12, W, 12, 64, flush.p, fb, true);
    time_masked<DH>(L12, W, 12, 64, flush.p, fb, false);
    time_contig<P1>("EP8 contiguous 512 rows/expert gate_up E48 N4096 K7168", W, 512, flush.p, fb, true);
  }
  {
    BigWeights W(48, 7168, 2048, 2);
    const char* L = "EP8 masked 8 tok/expert down E48 N7168 K2048 max_m=64";
    time_masked<S1>(L, W, 8, 64, flush.p, fb, false);
    time_masked<DA>(L, W, 8, 64, flush.p, fb, true);
    time_masked<DB>(L, W, 8, 64, flush.p, fb, false);
    time_masked<DC>(L, W, 8, 64, flush.p, fb, false);
    time_masked<DD>(L, W, 8, 64, flush.p, fb, false);
    time_masked<DE>(L, W, 8, 64, flush.p, fb, false);
    time_masked<DF>(L, W, 8, 64, flush.p, fb, false);
    time_masked<DK>(L, W, 8, 64, flush.p, fb, false);
    const char* L12 = "EP8 masked 12 tok/expert down E48 N7168 K2048 max_m=64";
    time_masked<S2>(L12, W, 12, 64, flush.p, fb, false);
    time_masked<DG>(L12, W, 12, 64, flush.p, fb, false);
    time_masked<DH>(L12, W, 12, 64, flush.p, fb, false);
  }
  // Qwen3 (E 128): 1 token x 8 routes = 8 experts with one row; 8 tokens = 64 rows.
  std::vector<int> one(128, 0), eight(128, 0);
  for (int e = 0; e < 8; ++e) one[e * 16 + 3] = 1;
  {
    Rng r(77);
    for (int t = 0; t < 8; ++t) {
      std::vector<int> ch;
      while (ch.size() < 8) {
        const int e = r.below(128);
        if (std::find(ch.begin(), ch.end(), e) == ch.end()) ch.push_back(e);
      }
      for (int e : ch) eight[e]++;
    }
  }
  for (int proj = 0; proj < 2; ++proj) {
    BigWeights W(128, proj ? 2048 : 1536, proj ? 768 : 2048, 3 + proj);
    for (int t = 0; t < 2; ++t) {
      const std::vector<int>& cnt = t ? eight : one;
      const std::string L = std::string("Qwen3 offsets ") + (t ? "8 tok" : "1 tok") + (proj ? " down N2048 K768" : " gate_up N1536 K2048");
      time_offsets<S1>(L.c_str(), W, cnt, flush.p, fb, false);
      time_offsets<DA>(L.c_str(), W, cnt, flush.p, fb, true);
      if (W.K % 256 == 0) {
        time_offsets<DD>(L.c_str(), W, cnt, flush.p, fb, false);
        time_offsets<DB>(L.c_str(), W, cnt, flush.p, fb, false);
        time_offsets<DC>(L.c_str(), W, cnt, flush.p, fb, false);
        time_offsets<DI>(L.c_str(), W, cnt, flush.p, fb, false);
        time_offsets<DJ>(L.c_str(), W, cnt, flush.p, fb, false);
        time_offsets<DL>(L.c_str(), W, cnt, flush.p, fb, true);
        time_offsets<SJ>(L.c_str(), W, cnt, flush.p, fb, false);
      }
    }
  }
  // Compare weight GB/s against the ~4470 GB/s streaming-read floor of SHAPES.md.
}

int main(int argc, char** argv) {
  bool do_timing = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--no-timing")) do_timing = false;
    if (!std::strcmp(argv[i], "--quick")) g_reps = 10;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  correctness();
  if (do_timing) timing();
  std::printf("\nSUMMARY: %d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
