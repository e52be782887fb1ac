// GPU pack (bitsandbytes NF4 QuantState -> packed NF4 layout v2) and dequantize (packed ->
// BF16 / FP16 [E, N, K]) kernels. Layout: docs/packed_layout.md ("NF4"); the words use the
// w4a16 fragment order (w4a16_detail::frag_row / frag_col; byte p of a word = fragment
// register p, nf4_slot_nibble), each nibble an NF4 code, and the
// FP32 absmax is resolved here, once, with bitsandbytes' arithmetic. The C++ reference packer
// (reference/nf4_reference.cpp, pack_nf4) produces the same bytes.
#pragma once

#include "nf4_args.cuh"
#include "nf4_common.cuh"
#include "w4a16_common.cuh"

namespace chord {

// Code of logical element (row, k) in the bitsandbytes byte stream (K is even, so an
// element's nibble is high exactly when k is even).
__device__ __forceinline__ unsigned int nf4_src_code(const unsigned char* src, long long row, int K, int k) {
  const unsigned int byte = src[(row * K + k) >> 1];
  return (k & 1) ? byte & 15u : byte >> 4;
}

// Resolved FP32 absmax of 64-block b (flattened block index, bitsandbytes order).
template <int FORM>
__device__ __forceinline__ float nf4_src_absmax(const NF4PackArgs& args, long long b) {
  using namespace nf4_detail;
  if constexpr (FORM == kNF4AbsmaxFP32) {
    return static_cast<const float*>(args.absmax)[b];
  } else {
    // dequantize_blockwise of the 8-bit absmax (FP32 product), then + offset (FP32 add).
    const unsigned int q = static_cast<const unsigned char*>(args.absmax)[b];
    const float v = mul_rn(static_cast<const float*>(args.code2)[q],
                           static_cast<const float*>(args.absmax2)[b / kNF4NestedBlockSize]);
    return add_rn(v, args.offset);
  }
}

// Launch: grid = w4a16_pack_grid(E, N, K), block = kW4A16PackThreads, no shared memory.
template <int FORM>
__device__ __forceinline__ void nf4_pack_body(const NF4PackArgs& args) {
  using namespace w4a16_detail;
  const int N = args.n, K = args.k;
  const long long words = (long long)args.num_experts * N * (K / 8);
  const long long stride = (long long)gridDim.x * blockDim.x;
  const int kcs = K / 64, nts = N / 16;
  const unsigned char* src = static_cast<const unsigned char*>(args.src);
  unsigned int* dst = static_cast<unsigned int*>(args.dst);
  for (long long w = (long long)blockIdx.x * blockDim.x + threadIdx.x; w < words; w += stride) {
    const PackedWordAt at = packed_word_at(w, kcs, nts);
    const int j = at.j, lane = at.lane, kc = at.kc, nt = at.nt;
    const long long e = at.e;
    const long long row0 = e * N + nt * 16;
    const int k0 = (kc * 4 + j) * 16;
    unsigned int q = 0;
#pragma unroll
    for (int s = 0; s < 8; ++s)
      q |= nf4_src_code(src, row0 + frag_row(lane, s), K, k0 + frag_col(lane, s)) << (4 * nf4_slot_nibble(s));
    dst[w] = q;
  }
  const long long count = (long long)args.num_experts * N * (K / kNF4BlockSize);
  float* da = static_cast<float*>(args.dst_absmax);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    const PackedScaleAt at = packed_scale_at(i, N, nts, kcs);
    da[i] = nf4_src_absmax<FORM>(args, (at.e * N + at.nt * 16 + at.row) * kcs + at.grp);
  }
}

// Packed -> T [E, N, K] with exactly the GEMM's dequantization arithmetic.
// Launch: grid = w4a16_pack_grid(E, N, K), block = kW4A16PackThreads.
template <int ELEM>
__device__ __forceinline__ void nf4_dequant_body(const NF4DequantArgs& args) {
  using namespace w4a16_detail;
  const int N = args.n, K = args.k;
  const long long words = (long long)args.num_experts * N * (K / 8);
  const long long stride = (long long)gridDim.x * blockDim.x;
  const int kcs = K / 64, nts = N / 16;
  const unsigned int* src = static_cast<const unsigned int*>(args.w);
  const float* absmax = static_cast<const float*>(args.absmax);
  unsigned short* out = static_cast<unsigned short*>(args.out);
  for (long long w = (long long)blockIdx.x * blockDim.x + threadIdx.x; w < words; w += stride) {
    const PackedWordAt at = packed_word_at(w, kcs, nts);
    const int j = at.j, lane = at.lane, kc = at.kc, nt = at.nt;
    const long long e = at.e;
    const int k0 = (kc * 4 + j) * 16;
    const int g = lane >> 2;
    const float* ap = absmax + (e * kcs + kc) * N + nt * 16 + scale_pos_in_16(g);  // {a[g], a[g+8]}
    unsigned int a[4];
    nf4_detail::dequant_word<ELEM>(src[w], ap[0], ap[1], [](unsigned int c) { return nf4_detail::nf4_table(c); }, a);
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const long long row = e * N + nt * 16 + frag_row(lane, p);
      const int col = k0 + frag_col(lane, p);  // p < 4: low element; high element is col + 1
      *reinterpret_cast<unsigned int*>(out + row * K + col) = a[p];
    }
  }
}

}  // namespace chord
