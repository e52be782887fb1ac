// Harness of the standalone W4A16 checkers (w4a16_check.cu: mma.sync family, w4a16_wgmma_check.cu:
// WGMMA family): device buffers, seeded inputs, weights, the problem builders of the four routing
// modes with their CPU reference, comparison and PASS/FAIL counting, and the timed shapes
// (L2-flushed event timing, sampled reference check). Each checker keeps its kernel wrappers,
// its configs and its case lists.
//
// A config under test is a class C with
//   static constexpr int BM, BN;                          // tile, for w4a16_grid
//   static std::string name();                            // printed after the case name
//   template <int MODE> static void launch(const W4A16Args&);
//   template <int MODE> static KernelInfo prepare();      // for print_info
// launch_entry / prepare_entry below do the work of both for one __global__ entry.
#pragma once

#include <cuda.h>
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

#include "kernels_src/w4a16_args.cuh"
#include "kernels_src/w4a16_wgmma_args.cuh"
#include "reference/bf16.hpp"
#include "reference/int4_reference.hpp"
#include "reference/nf4_reference.hpp"
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

namespace chord::check {

// Output rows no routing selects must keep this value (a NaN the kernels never write).
inline constexpr uint16_t kPoison = 0x7fc1;

// What differs between the checkers' output, so each keeps the lines of its H200 log.
struct Settings {
  int reps;              // timed repetitions per shape
  int check_name_width;  // name column of PASS/FAIL lines
  int time_name_width;   // name column of TIME lines
  bool time_weight_gbs;  // TIME lines show weight GB/s (decode is bandwidth bound; prefill is not)
  int info_tag_width, info_name_width;  // columns of the resource table
  // Index hash multiplier of fill_random_bf16: each checker keeps the random stream its
  // logged sampled checks were taken with.
  uint32_t bf16_hash;
};
inline Settings g_settings{};  // set by checker_main
inline int g_pass = 0, g_fail = 0;

// ------------------------------------------------------------------------------------------
// Device fills (the timed shapes are too big to generate on the host)
// ------------------------------------------------------------------------------------------
__device__ inline uint32_t hash_index(uint32_t i, uint32_t mul, uint32_t seed) {
  uint32_t x = i * mul ^ seed;
  x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
  return x;
}
static __global__ void fill_random_u32(uint32_t* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = hash_index((uint32_t)i, 0x9e3779b9u, seed);
}
// bf16 values lo + (hi - lo) * u, u uniform in [0, 1).
static __global__ void fill_random_bf16(uint16_t* p, size_t n, uint32_t mul, uint32_t seed, float lo, float hi) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint32_t x = hash_index((uint32_t)i, mul, seed);
    const float f = lo + (hi - lo) * (float)(x >> 8) * (1.0f / 16777216.0f);
    uint32_t u = __float_as_uint(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    p[i] = (uint16_t)(u >> 16);
  }
}
static __global__ void fill_u16(uint16_t* p, size_t n, uint16_t v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = v;
}

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
  explicit DBuf(const std::vector<T>& v) { upload(v); }
  void alloc(size_t count) {
    n = count;
    CK(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)));
  }
  void upload(const std::vector<T>& v) {
    alloc(v.size());
    if (!v.empty()) CK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
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

inline void report(const std::string& name, bool ok, const std::string& detail) {
  std::printf("%s %-*s %s\n", ok ? "PASS" : "FAIL", g_settings.check_name_width, name.c_str(), detail.c_str());
  std::fflush(stdout);
  (ok ? g_pass : g_fail)++;
}

// ------------------------------------------------------------------------------------------
// Launching one kernel entry
// ------------------------------------------------------------------------------------------
struct KernelInfo {
  int regs = 0, smem = 0, occupancy = 0, threads = 0;
};

template <class F>
KernelInfo prepare_entry(F fn, int threads, int smem) {
  CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaFuncAttributes at;
  CK(cudaFuncGetAttributes(&at, fn));
  KernelInfo ki;
  ki.regs = at.numRegs;
  ki.smem = smem;
  ki.threads = threads;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ki.occupancy, fn, threads, smem));
  return ki;
}

// SMs of the current device.
inline int sm_count() {
  static const int n = [] {
    int d = 0, v = 0;
    CK(cudaGetDevice(&d));
    CK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, d));
    return v;
  }();
  return n;
}

// A 2-D TMA map of row-major `base` (rows x cols elements, row stride in bytes), through the
// driver entry point the runtime hands out (no -lcuda needed).
inline void encode_map(chord::W4A16TmaMap* dst, const void* base, CUtensorMapDataType type, long long rows,
                       long long cols, long long stride_bytes, int box_rows, int box_cols, CUtensorMapSwizzle swizzle) {
  using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                              const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static Encode encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
    return reinterpret_cast<Encode>(fn);
  }();
  CUtensorMap map;
  cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
  cuuint64_t strides[1] = {(cuuint64_t)stride_bytes};
  cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
  cuuint32_t elem[2] = {1, 1};
  const CUresult r = encode(&map, type, 2, const_cast<void*>(base), dims, strides, box, elem,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed: %d\n", (int)r);
    std::exit(1);
  }
  static_assert(sizeof(CUtensorMap) == sizeof(chord::W4A16TmaMap), "the kernel's TMA map holds a CUtensorMap");
  std::memcpy(dst, &map, sizeof map);
}

inline void encode_packed_map(chord::W4A16TmaMap* dst, const void* base, const chord::W4A16MapShape& s) {
  encode_map(dst, base, s.element_bytes == 4 ? CU_TENSOR_MAP_DATA_TYPE_UINT32 : CU_TENSOR_MAP_DATA_TYPE_UINT16, s.rows,
             s.cols, s.cols * s.element_bytes, s.box_rows, s.box_cols, CU_TENSOR_MAP_SWIZZLE_NONE);
}

// The warp-specialized kernel's TMA maps for `mode` (as ops/w4a16.cpp builds them): the packed
// weight and scales, and A where w4a16_tma_activations(mode).
inline void set_ws_maps(W4A16Args& a, int mode, int block_n, bool nf4) {
  encode_packed_map(&a.w_map, a.w, chord::w4a16_weight_map_shape(a.num_experts, a.n, a.k, block_n));
  encode_packed_map(&a.s_map, a.scales, chord::w4a16_scale_map_shape(a.num_experts, a.n, a.k, block_n, nf4));
  if (!chord::w4a16_tma_activations(mode)) return;
  const long long rows = chord::w4a16_a_total_rows(mode, a.a_rows, a.num_groups, a.max_m);
  if (rows <= 0) return;
  encode_map(&a.a_map, a.a, CU_TENSOR_MAP_DATA_TYPE_UINT16, rows, a.k, a.lda * 2, chord::kW4A16WgmmaWsBlockM,
             chord::kW4A16WgmmaBlockK, CU_TENSOR_MAP_SWIZZLE_128B);
}

// Launches kernel with thread block clusters of `cluster` CTAs along x (grid.x a multiple of it).
template <class... Params, class... Args>
void launch_clusters(void (*kernel)(Params...), dim3 grid, int threads, int smem, int cluster, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(threads, 1, 1);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

// Launches kEntry over w4a16_grid(a, bm, bn); an empty grid launches nothing. The first call
// prepares the entry, so the warm-up launches of time_kernel take that host work out of the
// timed reps.
// split > 1: split-K, each tile a cluster of `split` CTAs along x (as the JIT launches it).
// max_ctas > 0: at most that many CTAs (kernels that loop over tiles); exact: exactly that many,
// more than there are tiles if so (the checks of CTAs that find no tile).
template <auto kEntry>
void launch_entry(const W4A16Args& a, int bm, int bn, int threads, int smem, int split = 1, int max_ctas = 0,
                  bool exact = false) {
  static const bool prepared = (prepare_entry(kEntry, threads, smem), true);
  (void)prepared;
  W4A16Dim3 g = w4a16_grid(a, bm, bn);
  if (g.x == 0) return;
  if (max_ctas > 0 && (exact || g.x > (unsigned int)max_ctas)) g.x = (unsigned int)max_ctas;
  if (split == 1) {
    kEntry<<<dim3(g.x, g.y, g.z), threads, smem>>>(a);
  } else {
    launch_clusters(kEntry, dim3(g.x * split, g.y, g.z), threads, smem, split, a);
  }
  CK(cudaGetLastError());
}

template <class C>
void launch_mode(int mode, const W4A16Args& a) {
  switch (mode) {
    case kW4A16Contiguous: C::template launch<kW4A16Contiguous>(a); break;
    case kW4A16Masked: C::template launch<kW4A16Masked>(a); break;
    case kW4A16Offsets: C::template launch<kW4A16Offsets>(a); break;
    default: C::template launch<kW4A16Indexed>(a); break;
  }
}

template <class C, int MODE>
void print_info(const char* tag) {
  const KernelInfo ki = C::template prepare<MODE>();
  std::printf("  %-*s %-*s threads=%d regs=%d smem=%d B occupancy=%d CTA/SM\n", g_settings.info_tag_width, tag,
              g_settings.info_name_width, C::name().c_str(), ki.threads, ki.regs, ki.smem, ki.occupancy);
}

// ------------------------------------------------------------------------------------------
// Weights and problems
// ------------------------------------------------------------------------------------------
// Weights of one (E, N, K) problem: codes, group scales, their logical bf16 values and the
// reference packing on the host; the packed weight and scales on the device.
struct Weights {
  int E = 0, N = 0, K = 0;
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales, logical;
  ref::W4A16Packed packed;
  DBuf<uint32_t> d_w;
  DBuf<uint16_t> d_s;
};

// Host side only: the device copies are left to the caller (the mma.sync checker writes them
// with the GPU packer it checks).
inline void random_weights(Weights& W, int E, int N, int K, uint64_t seed) {
  W.E = E; W.N = N; W.K = K;
  Rng r(seed);
  const size_t total = (size_t)E * N * K;
  W.codes.resize(total);
  for (auto& c : W.codes) c = (uint8_t)(r.next() & 15);
  W.scales.resize(total / 32);
  for (auto& s : W.scales) s = ref::float_to_bf16(0.002f + 0.03f * r.uni());
  W.logical = ref::dequantize_codes(W.codes, W.scales, static_cast<int64_t>(E) * N, K);
  W.packed = ref::pack_w4a16(W.codes.data(), W.scales.data(), E, N, K);
}

// random_weights with the reference packing uploaded.
inline void make_weights(Weights& W, int E, int N, int K, uint64_t seed) {
  random_weights(W, E, N, K, seed);
  W.d_w.upload(W.packed.weight);
  W.d_s.upload(W.packed.scales);
}

// A GEMM problem: inputs, routing, reference output; the valid-row mask is derived from ref.
struct Problem {
  std::string name;
  int mode = 0;
  int out_rows = 0;
  std::vector<uint16_t> a;
  std::vector<int32_t> r0, r1, r2;  // routing tensors (mode specific)
  W4A16Args args{};                 // host fields filled; pointers set at run
  std::vector<uint16_t> ref_out;
};

inline std::vector<uint16_t> random_a(size_t n, Rng& r) {
  std::vector<uint16_t> a(n);
  for (auto& v : a) v = ref::float_to_bf16(2.f * r.uni() - 1.f);
  return a;
}

inline void compute_ref(Problem& P, const Weights& W) {
  P.ref_out.assign((size_t)P.out_rows * W.N, kPoison);
  const W4A16Args& a = P.args;
  switch (P.mode) {
    case kW4A16Contiguous:
      ref::w4a16_gemm_contiguous(P.a.data(), a.a_rows, P.r0.data(), W.logical.data(), W.E, W.N, W.K, P.ref_out.data());
      break;
    case kW4A16Masked:
      ref::w4a16_gemm_masked(P.a.data(), a.num_groups, a.max_m, P.r0.data(), W.logical.data(), W.N, W.K,
                             P.ref_out.data());
      break;
    case kW4A16Offsets:
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
// max error relative to max |ref|), no NaN. Elements are BF16, or FP16 when fp16 is set.
inline Cmp compare(const std::vector<uint16_t>& out, const std::vector<uint16_t>& refo, int rows, int n,
                   bool fp16 = false) {
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
      const double x = fp16 ? ref::fp16_to_float(o[j]) : ref::bf16_to_float(o[j]);
      const double y = fp16 ? ref::fp16_to_float(f[j]) : ref::bf16_to_float(f[j]);
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

// Runs problem P's routing with config C on a poisoned output: activations a_host, device
// weights w and scales (INT4 scales or NF4 absmax) of E experts [N, K]; compares with ref_out
// (FP16 output when fp16); one PASS/FAIL line named `label`.
template <class C>
void run_routed(const Problem& P, const std::vector<uint16_t>& a_host, const void* w, const void* scales, int E,
                int N, int K, const std::vector<uint16_t>& ref_out, bool fp16, const std::string& label) {
  DBuf<uint16_t> d_a(a_host);
  DBuf<int32_t> d0(P.r0), d1(P.r1), d2(P.r2);
  DBuf<uint16_t> d_out((size_t)P.out_rows * N);
  if (d_out.n) fill_u16<<<256, 256>>>(d_out.p, d_out.n, kPoison);
  CK(cudaGetLastError());
  W4A16Args a = P.args;
  a.a = d_a.p; a.w = w; a.scales = scales; a.out = d_out.p;
  a.m_indices = a.masked_m = a.offsets = a.sorted_ids = a.expert_ids = a.num_tokens_padded = nullptr;
  switch (P.mode) {
    case kW4A16Contiguous: a.m_indices = d0.p; break;
    case kW4A16Masked: a.masked_m = d0.p; break;
    case kW4A16Offsets: a.offsets = d0.p; break;
    default: a.sorted_ids = d0.p; a.expert_ids = d1.p; a.num_tokens_padded = d2.p;
  }
  a.n = N; a.k = K; a.num_experts = E; a.lda = K; a.ldc = N; a.mode = P.mode;
  const W4A16Dim3 g = w4a16_grid(a, C::BM, C::BN);
  launch_mode<C>(P.mode, a);
  CK(cudaDeviceSynchronize());
  const Cmp c = compare(d_out.get(), ref_out, P.out_rows, N, fp16);
  char det[256];
  std::snprintf(det, sizeof det, "rows=%ld grid=%u rel_l2=%.2e max_rel=%.2e untouched_bad=%ld nan=%ld", c.valid_rows,
                g.x, c.rel_l2, c.max_rel, c.bad_untouched, c.nan_valid);
  report(label, c.ok, det);
}

// Runs problem P with config C and INT4 weights W.
template <class C>
void run_problem(const Problem& P, const Weights& W) {
  run_routed<C>(P, P.a, W.d_w.p, W.d_s.p, W.E, W.N, W.K, P.ref_out, false, P.name + " " + C::name());
}

// ------------------------------------------------------------------------------------------
// Problem builders (ragged: empty experts, 1-row experts, partial tiles)
// ------------------------------------------------------------------------------------------
inline Problem contiguous(const std::string& name, const Weights& W, const std::vector<int>& counts, int pad_blocks,
                          Rng& r) {
  Problem P;
  P.name = name;
  P.mode = kW4A16Contiguous;
  const int al = kW4A16ContiguousAlign;
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

inline Problem masked(const std::string& name, const Weights& W, int max_m, const std::vector<int>& mm, Rng& r) {
  Problem P;
  P.name = name;
  P.mode = kW4A16Masked;
  P.r0 = mm;
  P.args.num_groups = (int)mm.size();
  P.args.max_m = max_m;
  P.out_rows = (int)mm.size() * max_m;
  P.a = random_a((size_t)P.out_rows * W.K, r);
  compute_ref(P, W);
  return P;
}

inline Problem offsets(const std::string& name, const Weights& W, const std::vector<int>& counts, Rng& r) {
  Problem P;
  P.name = name;
  P.mode = kW4A16Offsets;
  int s = 0;
  for (int c : counts) P.r0.push_back(s += c);
  P.out_rows = s;
  P.a = random_a((size_t)s * W.K, r);
  P.args.a_rows = s;
  compute_ref(P, W);
  return P;
}

// vLLM moe_align_block_size emulation: skewed top_k routing (low expert ids more likely, the
// last expert never chosen), experts in `nonlocal_` get expert id -1, `sorted_ids` and
// `expert_ids` over-allocated by `over_alloc` with garbage past num_tokens_padded (0 if `empty`).
inline Problem indexed(const std::string& name, const Weights& W, int tokens, int top_k, int block_size,
                       const std::vector<int>& nonlocal_, int over_alloc, bool empty, Rng& r, uint64_t route_seed) {
  Problem P;
  P.name = name;
  P.mode = kW4A16Indexed;
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
  const int ntp = empty ? 0 : (int)sorted.size();
  const int capacity = (int)sorted.size() + over_alloc;
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

// Rows per expert of `tokens` tokens routed to `top_k` distinct experts of E, uniformly (seeded).
inline std::vector<int> topk_counts(int E, int tokens, int top_k, uint64_t seed) {
  Rng r(seed);
  std::vector<int> counts(E, 0);
  for (int t = 0; t < tokens; ++t) {
    std::vector<int> chosen;
    while ((int)chosen.size() < top_k) {
      const int e = r.below(E);
      if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) chosen.push_back(e);
    }
    for (int e : chosen) ++counts[e];
  }
  return counts;
}

// ------------------------------------------------------------------------------------------
// Timed shapes
// ------------------------------------------------------------------------------------------
// Random packed weights of a timed shape, generated on the device (no host copy).
struct BigWeights {
  int E, N, K;
  DBuf<uint32_t> w;
  DBuf<uint16_t> s;
  BigWeights(int e, int n, int k, uint32_t seed) : E(e), N(n), K(k), w((size_t)e * n * k / 8), s((size_t)e * n * k / 32) {
    fill_random_u32<<<4096, 256>>>(w.p, w.n, seed);
    fill_random_bf16<<<4096, 256>>>(s.p, s.n, g_settings.bf16_hash, seed + 1, 0.002f, 0.032f);
    CK(cudaGetLastError());
  }
};

// Activations in [-1, 1) for a timed shape.
inline void fill_activations(DBuf<uint16_t>& a, uint32_t seed) {
  fill_random_bf16<<<4096, 256>>>(a.p, a.n, g_settings.bf16_hash, seed, -1.f, 1.f);
}

// The arguments of a timed shape without the routing pointers and row counts.
inline W4A16Args timed_args(const BigWeights& W, const DBuf<uint16_t>& a, const DBuf<uint16_t>& out, int mode) {
  W4A16Args args{};
  args.a = a.p; args.w = W.w.p; args.scales = W.s.p; args.out = out.p;
  args.lda = W.K; args.ldc = W.N; args.n = W.N; args.k = W.K; args.num_experts = W.E;
  args.mode = mode;
  return args;
}

// Packed bytes of `experts` experts' weights and scales.
inline double weight_bytes(const BigWeights& W, int experts) {
  return (double)experts * W.N * (W.K / 2 + 2.0 * W.K / 32);
}

// Overwritten before each timed launch so that the weights come from HBM, not from L2.
inline constexpr size_t kFlushBytes = 256ull << 20;
inline uint8_t* flush_buffer() {
  static DBuf<uint8_t> buf(kFlushBytes);
  return buf.p;
}

// Median kernel time in us over g_settings.reps launches after 3 warm-up launches, each after
// an L2 flush; the events bracket the kernel only.
template <class C, int MODE>
double time_kernel(const W4A16Args& a) {
  uint8_t* flush = flush_buffer();
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) C::template launch<MODE>(a);
  CK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int i = 0; i < g_settings.reps; ++i) {
    CK(cudaMemsetAsync(flush, i & 0xff, kFlushBytes));
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

inline void timing_line(const std::string& name, double us, double weight_bytes, double flops) {
  const int w = g_settings.time_name_width;
  if (g_settings.time_weight_gbs)
    std::printf("TIME %-*s %9.1f us  %7.1f GB/s(weights)  %7.1f TFLOP/s\n", w, name.c_str(), us,
                weight_bytes / us * 1e-3, flops / us * 1e-6);
  else
    std::printf("TIME %-*s %9.1f us  %7.1f TFLOP/s\n", w, name.c_str(), us, flops / us * 1e-6);
  std::fflush(stdout);
}

// Sampled reference check of a timed problem: (output row, input row, expert) triples x 256 columns.
inline void sampled_check(const std::string& name, const BigWeights& W, const DBuf<uint16_t>& d_a,
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

// CONTIGUOUS, `rows_per_expert` rows for every expert of W.
template <class C>
void time_contig(const char* label, BigWeights& W, int rows_per_expert, bool check) {
  const int m = W.E * rows_per_expert;
  DBuf<uint16_t> a((size_t)m * W.K), out((size_t)m * W.N);
  fill_activations(a, 6);
  std::vector<int> mi(m);
  for (int i = 0; i < m; ++i) mi[i] = i / rows_per_expert;
  DBuf<int32_t> d_mi(mi);
  W4A16Args args = timed_args(W, a, out, kW4A16Contiguous);
  args.m_indices = d_mi.p;
  args.a_rows = m;
  const double us = time_kernel<C, kW4A16Contiguous>(args);
  const std::string name = std::string(label) + " " + C::name();
  timing_line(name, us, weight_bytes(W, W.E), 2.0 * m * W.N * W.K);
  if (check) {
    std::vector<std::array<int, 3>> rows;
    for (int i = 0; i < 6; ++i) {
      const int r = (int)(((long long)i * 4099 + 77) % m);
      rows.push_back({r, r, mi[r]});
    }
    sampled_check(name, W, a, out, rows);
  }
}

// OFFSETS with `counts` rows per expert; activations from seed `a_seed`. `sample(i, rows)`
// gives the i-th (i < 6) output row of the sampled check, stopping at one >= rows; nullptr:
// no check.
template <class C>
void time_offsets(const std::string& label, BigWeights& W, const std::vector<int>& counts, uint32_t a_seed,
                  int (*sample)(int i, int rows)) {
  std::vector<int> off;
  int total = 0;
  for (int c : counts) off.push_back(total += c);
  DBuf<uint16_t> a((size_t)total * W.K), out((size_t)total * W.N);
  fill_activations(a, a_seed);
  DBuf<int32_t> d_off(off);
  W4A16Args args = timed_args(W, a, out, kW4A16Offsets);
  args.offsets = d_off.p;
  args.a_rows = total;
  const double us = time_kernel<C, kW4A16Offsets>(args);
  int active = 0;
  for (int c : counts) active += c > 0;
  const std::string name = label + " " + C::name();
  timing_line(name, us, weight_bytes(W, active), 2.0 * total * W.N * W.K);
  if (sample) {
    std::vector<std::array<int, 3>> rows;
    for (int i = 0; i < 6; ++i) {
      const int r = sample(i, total);
      if (r >= total) break;
      const int e = (int)(std::upper_bound(off.begin(), off.end(), r) - off.begin());
      rows.push_back({r, r, e});
    }
    sampled_check(name, W, a, out, rows);
  }
}

// ------------------------------------------------------------------------------------------
// main
// ------------------------------------------------------------------------------------------
// Options: --no-timing, --timing-only (skip `correctness`, e.g. under a profiler), --quick
// (10 timed reps), --reps N. Prints the device, runs
// `correctness`, then `timing` unless --no-timing, then the SUMMARY line. Exit status 0 when
// every check passes, 1 otherwise; 77 (skipped) when `required_major` is set and the device's
// compute capability major differs: `unsupported` is printed instead.
inline int checker_main(int argc, char** argv, const Settings& settings, void (*correctness)(), void (*timing)(),
                        int required_major = 0, const char* unsupported = nullptr) {
  g_settings = settings;
  bool do_timing = true, do_correctness = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--no-timing")) do_timing = false;
    if (!std::strcmp(argv[i], "--timing-only")) do_correctness = false;
    if (!std::strcmp(argv[i], "--quick")) g_settings.reps = 10;
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) g_settings.reps = std::max(1, std::atoi(argv[++i]));
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  if (required_major && prop.major != required_major) {
    std::printf("%s\n", unsupported);
    return 77;
  }
  if (do_correctness) correctness();
  if (do_timing) timing();
  std::printf("\nSUMMARY: %d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}

}  // namespace chord::check
