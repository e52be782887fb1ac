// The MoE activation pass between the gate_up and down GEMMs (chord_moe_activation).
#pragma once
#include <cuda.h>

#include <cstdint>
#include <string>

namespace chord {

struct ActivationCall {
  int kind = 0;             // CHORD_ACTIVATION_*
  std::string expression;   // CUDA C++ expression in float a, b
  int dtype = 0;            // CHORD_DTYPE_BF16 / _FP16, input and output
  const void* in = nullptr;
  int64_t rows = 0;
  int64_t in_cols = 0;
  void* out = nullptr;
  int64_t out_rows = 0;
  const int32_t* scatter_idx = nullptr;
  int64_t scatter_cols = 0;
  const int32_t* group_rows = nullptr;
  int64_t groups = 0;
  const int32_t* num_valid = nullptr;
};

void moe_activation(const ActivationCall& call, CUstream stream);

}  // namespace chord
