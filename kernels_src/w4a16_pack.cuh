// GPU pack (checkpoint form -> w4a16 packed layout v1) and unpack (packed -> dequantized bf16)
// kernels. Layout: docs/packed_layout.md. The C++ reference packer in reference/w4a16_pack.cpp
// produces the same bytes.
//
// Packed weight word index (32-bit words):
//   word = (((e * N/16 + nt) * K/64 + kc) * 32 + lane) * 4 + j
// holds the 8 nibbles lane `lane` owns in the mma.m16n8k16 A fragment of the 16x16 tile
// (rows nt*16 .. +16, k (kc*4 + j)*16 .. +16); nibble slot s (bits 4s..4s+3) holds the
// element (frag_row(lane, s), frag_col(lane, s)) of that tile.
// Packed scales: bf16 [E, K/32, N], column n = nt*16 + scale_pos_in_16(r) holds row nt*16 + r.
#pragma once

#include "w4a16_args.cuh"
#include "w4a16_common.cuh"

namespace chord {

template <int SRC_FORMAT>
__device__ __forceinline__ unsigned int w4a16_src_code(const W4A16PackArgs& args, long long row, int k) {
  if constexpr (SRC_FORMAT == kW4A16SrcCodes) {
    return static_cast<const unsigned char*>(args.src)[row * args.k + k] & 15u;
  } else {
    const unsigned int word = static_cast<const unsigned int*>(args.src)[row * (args.k / 8) + k / 8];
    return (word >> (4 * (k & 7))) & 15u;
  }
}

// Launch: grid = w4a16_pack_grid(E, N, K), block = kW4A16PackThreads, no shared memory.
template <int SRC_FORMAT>
__device__ __forceinline__ void w4a16_pack_body(const W4A16PackArgs& args) {
  using namespace w4a16_detail;
  const int N = args.n, K = args.k;
  const long long words = (long long)args.num_experts * N * (K / 8);
  const long long stride = (long long)gridDim.x * blockDim.x;
  const int kcs = K / 64, nts = N / 16;
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
      q |= w4a16_src_code<SRC_FORMAT>(args, row0 + frag_row(lane, s), k0 + frag_col(lane, s)) << (4 * s);
    dst[w] = q;
  }
  const long long scales = (long long)args.num_experts * N * (K / 32);
  const unsigned short* ss = static_cast<const unsigned short*>(args.src_scales);
  unsigned short* ds = static_cast<unsigned short*>(args.dst_scales);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < scales; i += stride) {
    const PackedScaleAt at = packed_scale_at(i, N, nts, K / 32);
    ds[i] = ss[(at.e * N + at.nt * 16 + at.row) * (K / 32) + at.grp];
  }
}

// Packed -> bf16 [E, N, K] with exactly the GEMM's dequantization arithmetic.
// Launch: grid = w4a16_pack_grid(E, N, K), block = kW4A16PackThreads.
__device__ __forceinline__ void w4a16_unpack_body(const W4A16UnpackArgs& args) {
  using namespace w4a16_detail;
  const int N = args.n, K = args.k;
  const long long words = (long long)args.num_experts * N * (K / 8);
  const long long stride = (long long)gridDim.x * blockDim.x;
  const int kcs = K / 64, nts = N / 16;
  const unsigned int* src = static_cast<const unsigned int*>(args.w);
  const unsigned short* sc = static_cast<const unsigned short*>(args.scales);
  unsigned short* out = static_cast<unsigned short*>(args.out);
  for (long long w = (long long)blockIdx.x * blockDim.x + threadIdx.x; w < words; w += stride) {
    const PackedWordAt at = packed_word_at(w, kcs, nts);
    const int j = at.j, lane = at.lane, kc = at.kc, nt = at.nt;
    const long long e = at.e;
    const int k0 = (kc * 4 + j) * 16;
    const int grp = k0 / 32;
    const int g = lane >> 2;
    const unsigned int s2 = *reinterpret_cast<const unsigned int*>(
        sc + (e * (K / 32) + grp) * N + nt * 16 + scale_pos_in_16(g));  // {s[g], s[g+8]}
    unsigned int a[4];
    dequant_word(src[w], s2, a);
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const long long row = e * N + nt * 16 + frag_row(lane, p);
      const int col = k0 + frag_col(lane, p);  // p < 4: low element; high element is col + 1
      *reinterpret_cast<unsigned int*>(out + row * K + col) = a[p];
    }
  }
}

}  // namespace chord
