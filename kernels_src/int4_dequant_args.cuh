// Arguments of the INT4 group-32 dequantize kernel; shared by host C++ and NVRTC.
#pragma once

namespace chord {

enum Int4SourceFormat : int {
  kInt4Codes = 0,       // uint8 [rows, K], one code per byte
  kInt4Compressed = 1,  // int32 [rows, K/8], compressed-tensors pack-quantized
};

struct Int4DequantArgs {
  const void* weight;   // codes or compressed words
  const void* scales;   // bf16 [rows, K/32]
  void* out;            // bf16 [rows, K]
  long long rows;       // E * N
  int k;
};

}  // namespace chord
