// Arguments of the MoE activation kernel (gate_up output -> down input); shared by host
// C++ and NVRTC.
#pragma once

namespace chord {

// How the input row holds the operands of the caller's expression f(a, b).
enum ActivationKind : int {
  kActivationUnary = 0,              // a = in[r, j]; in has n columns
  kActivationBinarySplit = 1,        // a = in[r, j], b = in[r, n + j]; in has 2n columns
  kActivationBinaryInterleaved = 2,  // a = in[r, 2j], b = in[r, 2j + 1]; in has 2n columns
};

struct ActivationArgs {
  const void* in;                // bf16 / fp16 [rows, in_cols]
  void* out;                     // same dtype [out_rows, n]
  const int* scatter_idx;        // [rows, scatter_cols] destination rows, < 0 = skip; null: dst = src
  const int* group_rows;         // [rows / rows_per_group] valid rows per group; null: every row
  const int* num_valid;          // one int: rows (or destinations) from here on are skipped; null: none
  long long rows;
  long long out_rows;
  int in_cols;
  int n;                         // output columns, a multiple of 8
  int scatter_cols;
  int rows_per_group;
};

}  // namespace chord
