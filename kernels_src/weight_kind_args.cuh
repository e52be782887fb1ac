// The 4-bit weight kinds of the W4A16 kernels and the 16-bit element type each runs with;
// shared by host C++ and NVRTC.
#pragma once

#include "w4a16_args.cuh"

namespace chord {

// Element type of dequantized values (and of activations / outputs of the NF4 GEMM).
enum NF4Element : int {
  kNF4BF16 = 0,
  kNF4FP16 = 1,
};

// Weight format of the W4A16 GEMM body (its WEIGHT template argument): what a packed nibble
// means and which activation / output type the MMA takes.
enum W4A16WeightKind : int {
  kW4A16WeightInt4 = 0,     // INT4 group-32, BF16 scales; BF16 activations
  kW4A16WeightNF4 = 1,      // NF4, FP32 absmax per 64; BF16 activations
  kW4A16WeightNF4Fp16 = 2,  // NF4, FP32 absmax per 64; FP16 activations
  kW4A16WeightInt4Fp16 = 3, // INT4 group-32, FP16 scales; FP16 activations
};

// NF4 kinds decode through the shared-memory pair table and read FP32 absmax per 64 k; INT4
// kinds decode with lop3 and read 16-bit scales per 32 k.
CHORD_W4A16_HD constexpr bool w4a16_is_nf4(int weight) {
  return weight == kW4A16WeightNF4 || weight == kW4A16WeightNF4Fp16;
}

// The activation / output element type a weight kind runs with (INT4 FP16: also its scales').
CHORD_W4A16_HD constexpr int w4a16_element(int weight) {
  return weight == kW4A16WeightNF4Fp16 || weight == kW4A16WeightInt4Fp16 ? kNF4FP16 : kNF4BF16;
}

CHORD_W4A16_HD constexpr bool w4a16_known_weight(int weight) {
  return weight >= kW4A16WeightInt4 && weight <= kW4A16WeightInt4Fp16;
}

}  // namespace chord
