// Arguments of the INT4 group-32 dequantize kernel; shared by host C++ and NVRTC.
#pragma once

#include "w4a16_args.cuh"  // Int4SourceFormat

namespace chord {

struct Int4DequantArgs {
  const void* weight;   // codes or compressed words
  const void* scales;   // bf16 [rows, K/32]
  void* out;            // bf16 [rows, K]
  long long rows;       // E * N
  int k;
};

}  // namespace chord
