#include "reference/w4a16_gemm.hpp"

#include <algorithm>
#include <vector>

#include "reference/bf16.hpp"
#include "reference/nf4_reference.hpp"

namespace chord::ref {

void w4a16_gemm_row(const uint16_t* a_row, const uint16_t* w, int expert, int n, int k, uint16_t* out_row,
                    bool fp16) {
  auto to_float = fp16 ? fp16_to_float : bf16_to_float;
  std::vector<float> af(k);
  for (int i = 0; i < k; ++i) af[i] = to_float(a_row[i]);
  const uint16_t* we = w + static_cast<size_t>(expert) * n * k;
  for (int col = 0; col < n; ++col) {
    const uint16_t* wr = we + static_cast<size_t>(col) * k;
    float acc = 0.f;
    for (int i = 0; i < k; ++i) acc += af[i] * to_float(wr[i]);
    out_row[col] = fp16 ? float_to_fp16(acc) : float_to_bf16(acc);
  }
}

void w4a16_gemm_contiguous(const uint16_t* a, int m, const int32_t* m_indices, const uint16_t* w, int num_experts,
                           int n, int k, uint16_t* out, bool fp16) {
  for (int r = 0; r < m; ++r) {
    const int e = m_indices[r];
    if (e < 0 || e >= num_experts) continue;
    w4a16_gemm_row(a + static_cast<size_t>(r) * k, w, e, n, k, out + static_cast<size_t>(r) * n, fp16);
  }
}

void w4a16_gemm_masked(const uint16_t* a, int num_groups, int max_m, const int32_t* masked_m, const uint16_t* w,
                       int n, int k, uint16_t* out, bool fp16) {
  for (int g = 0; g < num_groups; ++g) {
    const int cnt = std::min(masked_m[g], max_m);
    for (int r = 0; r < cnt; ++r) {
      const size_t row = static_cast<size_t>(g) * max_m + r;
      w4a16_gemm_row(a + row * k, w, g, n, k, out + row * n, fp16);
    }
  }
}

void w4a16_gemm_offsets(const uint16_t* a, int s_rows, const int32_t* offsets, const uint16_t* w, int num_experts,
                        int n, int k, uint16_t* out, bool fp16) {
  for (int e = 0; e < num_experts; ++e) {
    const int beg = std::max(e > 0 ? offsets[e - 1] : 0, 0);
    const int end = std::min(offsets[e], s_rows);
    for (int r = beg; r < end; ++r)
      w4a16_gemm_row(a + static_cast<size_t>(r) * k, w, e, n, k, out + static_cast<size_t>(r) * n, fp16);
  }
}

void w4a16_gemm_indexed(const uint16_t* a, int num_tokens, int top_k, const int32_t* sorted_ids, int capacity,
                        const int32_t* expert_ids, int block_size, int num_tokens_padded, const uint16_t* w,
                        int num_experts, int n, int k, uint16_t* out, bool fp16) {
  const int valid = std::min(num_tokens_padded, capacity);
  const int routes = num_tokens * top_k;
  for (int p = 0; p < valid; ++p) {
    const int e = expert_ids[p / block_size];
    if (e < 0 || e >= num_experts) continue;
    const int id = sorted_ids[p];
    if (id < 0 || id >= routes) continue;
    w4a16_gemm_row(a + static_cast<size_t>(id / top_k) * k, w, e, n, k, out + static_cast<size_t>(id) * n, fp16);
  }
}

}  // namespace chord::ref
