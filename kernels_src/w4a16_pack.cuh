// GPU pack (checkpoint form -> packed layout) and unpack (packed -> dequantized [E, N, K])
// kernels of both weight kinds. Layout: docs/packed_layout.md; the C++ reference packers
// (reference/w4a16_pack.cpp, reference/nf4_reference.cpp pack_nf4) produce the same bytes.
//
// Packed weight word index (32-bit words):
//   word = (((e * N/16 + nt) * K/64 + kc) * 32 + lane) * 4 + j
// holds the 8 nibbles lane `lane` owns in the mma.m16n8k16 A fragment of the 16x16 tile
// (rows nt*16 .. +16, k (kc*4 + j)*16 .. +16). INT4 (layout v1): nibble slot s (bits
// 4s..4s+3) holds the element (frag_row(lane, s), frag_col(lane, s)) of that tile. NF4
// (layout v2): the same words, slot s at nibble nf4_slot_nibble(s), so that byte p holds
// fragment register p; the FP32 absmax is resolved here, once, with bitsandbytes' arithmetic.
// Packed scales: [E, K/GROUP, N], column n = nt*16 + scale_pos_in_16(r) holds row nt*16 + r
// (INT4: bf16 or fp16 per 32 k, or per 128 k for the group-128 kinds; NF4: FP32 absmax per 64 k).
// Launch (every kernel here): grid = w4a16_pack_grid(E, N, K), block = kW4A16PackThreads, no
// shared memory.
#pragma once

#include "nf4_args.cuh"
#include "ptx.cuh"
#include "w4a16_args.cuh"
#include "w4a16_decode.cuh"
#include "w4a16_layout.cuh"

namespace chord {
namespace w4a16_detail {

// The pack loops of both kinds. Word loop: code(row, k) is the 4-bit code of logical element
// (row, k) and nibble(s) the nibble that holds fragment slot s. Scale loop: one packed scale
// per GROUP k; scale(i, src) stores packed scale i from flattened source scale src
// ((e * N + row) * K/GROUP + group).
template <int GROUP, typename Code, typename Nibble, typename Scale>
__device__ __forceinline__ void pack_loops(int num_experts, int N, int K, unsigned int* dst, Code code, Nibble nibble,
                                           Scale scale) {
  const long long words = (long long)num_experts * N * (K / 8);
  const long long stride = (long long)gridDim.x * blockDim.x;
  const int kcs = K / 64, nts = N / 16;
  for (long long w = (long long)blockIdx.x * blockDim.x + threadIdx.x; w < words; w += stride) {
    const PackedWordAt at = packed_word_at(w, kcs, nts);
    const int j = at.j, lane = at.lane, kc = at.kc, nt = at.nt;
    const long long e = at.e;
    const long long row0 = e * N + nt * 16;
    const int k0 = (kc * 4 + j) * 16;
    unsigned int q = 0;
#pragma unroll
    for (int s = 0; s < 8; ++s) q |= code(row0 + frag_row(lane, s), k0 + frag_col(lane, s)) << (4 * nibble(s));
    dst[w] = q;
  }
  const int groups = K / GROUP;
  const long long count = (long long)num_experts * N * groups;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    const PackedScaleAt at = packed_scale_at(i, N, nts, groups);
    scale(i, (at.e * N + at.nt * 16 + at.row) * groups + at.grp);
  }
}

// The unpack loop of both kinds: decode(w, at, k0, g, a) turns packed word w (at: where it
// lies; k0: its first k; g: the lane's row group) into the four 16-bit pair registers a of its
// fragment, which go to out [E, N, K].
template <typename Decode>
__device__ __forceinline__ void unpack_loop(int num_experts, int N, int K, unsigned short* out, Decode decode) {
  const long long words = (long long)num_experts * N * (K / 8);
  const long long stride = (long long)gridDim.x * blockDim.x;
  const int kcs = K / 64, nts = N / 16;
  for (long long w = (long long)blockIdx.x * blockDim.x + threadIdx.x; w < words; w += stride) {
    const PackedWordAt at = packed_word_at(w, kcs, nts);
    const int j = at.j, lane = at.lane, kc = at.kc, nt = at.nt;
    const long long e = at.e;
    const int k0 = (kc * 4 + j) * 16;
    const int g = lane >> 2;
    unsigned int a[4];
    decode(w, at, k0, g, a);
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const long long row = e * N + nt * 16 + frag_row(lane, p);
      const int col = k0 + frag_col(lane, p);  // p < 4: low element; high element is col + 1
      *reinterpret_cast<unsigned int*>(out + row * K + col) = a[p];
    }
  }
}

}  // namespace w4a16_detail

// ---------------------------------------------------------------------------------------
// INT4: checkpoint codes or compressed words + 16-bit scales per 32 (BF16 or FP16, copied as
// bits) -> layout v1.
// ---------------------------------------------------------------------------------------
template <int SRC_FORMAT>
__device__ __forceinline__ unsigned int w4a16_src_code(const W4A16PackArgs& args, long long row, int k) {
  if constexpr (SRC_FORMAT == kInt4Codes) {
    return static_cast<const unsigned char*>(args.src)[row * args.k + k] & 15u;
  } else {
    const unsigned int word = static_cast<const unsigned int*>(args.src)[row * (args.k / 8) + k / 8];
    return (word >> (4 * (k & 7))) & 15u;
  }
}

// GROUP: k per scale, 32, or 128 for the group-128 kinds (src_scales [E, N, K/128], packed
// [E, K/128, N]; the same words).
template <int SRC_FORMAT, int GROUP = 32>
__device__ __forceinline__ void w4a16_pack_body(const W4A16PackArgs& args) {
  const unsigned short* ss = static_cast<const unsigned short*>(args.src_scales);
  unsigned short* ds = static_cast<unsigned short*>(args.dst_scales);
  w4a16_detail::pack_loops<GROUP>(
      args.num_experts, args.n, args.k, static_cast<unsigned int*>(args.dst),
      [&](long long row, int k) { return w4a16_src_code<SRC_FORMAT>(args, row, k); }, [](int s) { return s; },
      [&](long long i, long long src) { ds[i] = ss[src]; });
}

// Zero points: the same words; each packed scale entry becomes the 32-bit pair
// {lo: scale, hi: int4_zp_bias(ELEM, zp)} (the zero point of the same row and group, uint8
// [E, N, K/GROUP]), so one 8-byte load gives a lane both rows' scale and bias. ELEM: the scales'
// type, which the bias is written in; GROUP: 32 or 128.
template <int SRC_FORMAT, int ELEM, int GROUP = 32>
__device__ __forceinline__ void w4a16_pack_zp_body(const W4A16PackZpArgs& zargs) {
  const W4A16PackArgs& args = zargs.base;
  const unsigned short* ss = static_cast<const unsigned short*>(args.src_scales);
  const unsigned char* zs = static_cast<const unsigned char*>(zargs.zero_points);
  unsigned int* ds = static_cast<unsigned int*>(args.dst_scales);
  w4a16_detail::pack_loops<GROUP>(
      args.num_experts, args.n, args.k, static_cast<unsigned int*>(args.dst),
      [&](long long row, int k) { return w4a16_src_code<SRC_FORMAT>(args, row, k); }, [](int s) { return s; },
      [&](long long i, long long src) { ds[i] = ss[src] | (int4_zp_bias(ELEM, zs[src]) << 16); });
}

// Packed -> T [E, N, K] with exactly the GEMM's dequantization arithmetic (T: the scales' type,
// BF16 or FP16). GROUP: k per scale (32 or 128).
template <int ELEM = kNF4BF16, int GROUP = 32>
__device__ __forceinline__ void w4a16_unpack_body(const W4A16UnpackArgs& args) {
  using namespace w4a16_detail;
  const int N = args.n, K = args.k;
  const unsigned int* src = static_cast<const unsigned int*>(args.w);
  const unsigned short* sc = static_cast<const unsigned short*>(args.scales);
  unpack_loop(args.num_experts, N, K, static_cast<unsigned short*>(args.out),
              [&](long long w, const PackedWordAt& at, int k0, int g, unsigned int* a) {
                const int grp = k0 / GROUP;
                const unsigned int s2 = *reinterpret_cast<const unsigned int*>(
                    sc + (at.e * (K / GROUP) + grp) * N + at.nt * 16 + scale_pos_in_16(g));  // {s[g], s[g+8]}
                dequant_word<ELEM>(src[w], s2, a);
              });
}

// Zero points: the pairs {p[g], p[g+8]} of the word's group, decoded as the GEMM does.
template <int ELEM = kNF4BF16, int GROUP = 32>
__device__ __forceinline__ void w4a16_unpack_zp_body(const W4A16UnpackArgs& args) {
  using namespace w4a16_detail;
  const int N = args.n, K = args.k;
  const unsigned int* src = static_cast<const unsigned int*>(args.w);
  const unsigned int* sc = static_cast<const unsigned int*>(args.scales);
  unpack_loop(args.num_experts, N, K, static_cast<unsigned short*>(args.out),
              [&](long long w, const PackedWordAt& at, int k0, int g, unsigned int* a) {
                const unsigned int* p = sc + (at.e * (K / GROUP) + k0 / GROUP) * N + at.nt * 16 + scale_pos_in_16(g);
                dequant_word_zp<ELEM>(src[w], p[0], p[1], a);
              });
}

// ---------------------------------------------------------------------------------------
// NF4: bitsandbytes QuantState (codes, FP32 or nested absmax per 64) -> layout v2.
// ---------------------------------------------------------------------------------------
// Code of logical element (row, k) in the bitsandbytes byte stream (K is even, so an
// element's nibble is high exactly when k is even).
__device__ __forceinline__ unsigned int nf4_src_code(const unsigned char* src, long long row, int K, int k) {
  const unsigned int byte = src[(row * K + k) >> 1];
  return (k & 1) ? byte & 15u : byte >> 4;
}

// Resolved FP32 absmax of 64-block b (flattened block index, bitsandbytes order).
template <int FORM>
__device__ __forceinline__ float nf4_src_absmax(const NF4PackArgs& args, long long b) {
  if constexpr (FORM == kNF4AbsmaxFP32) {
    return static_cast<const float*>(args.absmax)[b];
  } else {
    // dequantize_blockwise of the 8-bit absmax (FP32 product), then + offset (FP32 add).
    const unsigned int q = static_cast<const unsigned char*>(args.absmax)[b];
    const float v = ptx::mul_rn(static_cast<const float*>(args.code2)[q],
                           static_cast<const float*>(args.absmax2)[b / kNF4NestedBlockSize]);
    return ptx::add_rn(v, args.offset);
  }
}

template <int FORM>
__device__ __forceinline__ void nf4_pack_body(const NF4PackArgs& args) {
  const int K = args.k;
  const unsigned char* src = static_cast<const unsigned char*>(args.src);
  float* da = static_cast<float*>(args.dst_absmax);
  w4a16_detail::pack_loops<kNF4BlockSize>(
      args.num_experts, args.n, K, static_cast<unsigned int*>(args.dst),
      [&](long long row, int k) { return nf4_src_code(src, row, K, k); },
      [](int s) { return w4a16_detail::nf4_slot_nibble(s); },
      [&](long long i, long long b) { da[i] = nf4_src_absmax<FORM>(args, b); });
}

// Packed -> T [E, N, K] with exactly the GEMM's dequantization arithmetic.
template <int ELEM>
__device__ __forceinline__ void nf4_dequant_body(const NF4DequantArgs& args) {
  using namespace w4a16_detail;
  const int N = args.n, K = args.k;
  const int kcs = K / 64;
  const unsigned int* src = static_cast<const unsigned int*>(args.w);
  const float* absmax = static_cast<const float*>(args.absmax);
  unpack_loop(args.num_experts, N, K, static_cast<unsigned short*>(args.out),
              [&](long long w, const PackedWordAt& at, int k0, int g, unsigned int* a) {
                const float* ap = absmax + (at.e * kcs + at.kc) * N + at.nt * 16 + scale_pos_in_16(g);  // {a[g], a[g+8]}
                nf4_detail::dequant_word<ELEM>(src[w], ap[0], ap[1],
                                               [](unsigned int c) { return nf4_detail::nf4_table(c); }, a);
              });
}

}  // namespace chord
