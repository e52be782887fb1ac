// MoE activation pass: out[dst, j] = f(a, b) with f the caller's expression (compiled into
// the kernel as chord_activation), computed in FP32 from the 16-bit inputs and rounded
// once. One thread turns 8 output columns into one 16-byte store.
#pragma once
#include "activation_args.cuh"
#include "ptx.cuh"

namespace chord {

// Eight consecutive 16-bit values (16-byte aligned) as floats.
template <int DTYPE>
__device__ __forceinline__ void load_eight(const unsigned short* from, float (&values)[8]) {
  const uint4 v = *reinterpret_cast<const uint4*>(from);
  const unsigned int words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    values[2 * i] = ptx::half_bits_to_float<DTYPE>(static_cast<unsigned short>(words[i] & 0xffffu));
    values[2 * i + 1] = ptx::half_bits_to_float<DTYPE>(static_cast<unsigned short>(words[i] >> 16));
  }
}

// Where a (source row, scatter column) pair goes: its destination row, or -1 when skipped.
__device__ __forceinline__ long long activation_destination(const ActivationArgs& args, long long src, int column,
                                                            int limit) {
  if (args.scatter_idx) {
    const long long dst = args.scatter_idx[src * args.scatter_cols + column];
    return (dst < 0 || dst >= limit || dst >= args.out_rows) ? -1 : dst;
  }
  if (src >= limit) return -1;
  if (args.group_rows && src % args.rows_per_group >= args.group_rows[src / args.rows_per_group]) return -1;
  return src;
}

// One CTA per (row, scatter column) pair at a time; its threads stride over the row's
// 8-column chunks, so the only divisions are per pair, not per element.
template <int KIND, int DTYPE>
__device__ __forceinline__ void activation_body(const ActivationArgs& args) {
  const int chunks = args.n / 8;
  const long long pairs = args.rows * args.scatter_cols;
  const int limit = args.num_valid ? *args.num_valid : 0x7fffffff;
  const unsigned short* in = static_cast<const unsigned short*>(args.in);
  unsigned short* out = static_cast<unsigned short*>(args.out);
  for (long long pair = blockIdx.x; pair < pairs; pair += gridDim.x) {
    const long long src = pair / args.scatter_cols;
    const long long dst = activation_destination(args, src, static_cast<int>(pair % args.scatter_cols), limit);
    if (dst < 0) continue;
    const unsigned short* row = in + src * args.in_cols;
    unsigned short* out_row = out + dst * args.n;
    for (int chunk = threadIdx.x; chunk < chunks; chunk += blockDim.x) {
      float a[8], b[8];
      if (KIND == kActivationBinaryInterleaved) {
        float first[8], second[8];  // 16 inputs: 8 (a, b) pairs
        load_eight<DTYPE>(row + chunk * 16, first);
        load_eight<DTYPE>(row + chunk * 16 + 8, second);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          a[i] = first[2 * i];
          b[i] = first[2 * i + 1];
          a[i + 4] = second[2 * i];
          b[i + 4] = second[2 * i + 1];
        }
      } else {
        load_eight<DTYPE>(row + chunk * 8, a);
        if (KIND == kActivationBinarySplit) {
          load_eight<DTYPE>(row + args.n + chunk * 8, b);
        } else {
#pragma unroll
          for (int i = 0; i < 8; ++i) b[i] = 0.f;
        }
      }
      unsigned int packed[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        packed[i] = ptx::pack_half2<DTYPE>(chord_activation(a[2 * i], b[2 * i]),
                                      chord_activation(a[2 * i + 1], b[2 * i + 1]));
      }
      *reinterpret_cast<uint4*>(out_row + chunk * 8) = make_uint4(packed[0], packed[1], packed[2], packed[3]);
    }
  }
}

}  // namespace chord
