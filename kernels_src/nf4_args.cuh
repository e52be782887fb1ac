// Arguments of the NF4 pack and dequantize kernels (kernels_src/w4a16_pack.cuh); shared by host
// C++ and NVRTC. The packed NF4 layout is described in docs/packed_layout.md ("NF4").
#pragma once

#include "w4a16_args.cuh"
#include "weight_kind_args.cuh"

namespace chord {

constexpr int kNF4BlockSize = 64;         // elements per absmax (along K)
constexpr int kNF4NestedBlockSize = 256;  // 8-bit absmax values per nested FP32 scale
// Version 2: INT4 layout v1's words and word order; inside a word, byte p holds the two codes of
// MMA fragment register p (low nibble = its low element), so one byte indexes a pair table.
constexpr unsigned int kNF4LayoutVersion = 2;

// How the checkpoint stores the per-64 absmax.
enum NF4AbsmaxForm : int {
  kNF4AbsmaxFP32 = 0,    // FP32 [E*N*K/64]
  kNF4AbsmaxNested = 1,  // uint8 [E*N*K/64] + FP32 absmax2 [ceil(./256)] + FP32 code [256] + offset
};

struct NF4PackArgs {
  const void* src;      // uint8 [E*N*K/2], bitsandbytes order: element 2i in the high nibble of byte i
  const void* absmax;   // FP32 or uint8 [E*N*K/64] (NF4AbsmaxForm)
  const void* absmax2;  // nested: FP32 [ceil(E*N*K/64 / 256)]
  const void* code2;    // nested: FP32 [256]
  void* dst;            // packed weight, E * N * K / 2 bytes (w4a16 word order, NF4 nibble order)
  void* dst_absmax;     // FP32 [E, K/64, N], rows permuted within 16
  float offset;         // nested: added after code2[q] * absmax2
  int num_experts;
  int n;                // N % 16 == 0
  int k;                // K % 64 == 0
};

struct NF4DequantArgs {
  const void* w;       // packed weight
  const void* absmax;  // packed FP32 absmax
  void* out;           // [E, N, K] BF16 or FP16
  int num_experts;
  int n;
  int k;
  int pad_;
};

}  // namespace chord
