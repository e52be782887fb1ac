// CPU reference of the W4A16 grouped MoE GEMM, one function per mode. Weights are the logical
// T [E, N, K] (dequantize_codes / dequantize_packed), so the rounding of (code - 8) * scale
// to T happens once, as on the GPU; products accumulate in fp32; outputs round to T.
// Every function writes only the rows its routing marks valid (others are left as they are),
// in parallel over the machine's threads, with the same bits as a serial loop.
// Activations and outputs are T row-major with row strides K and N. T = bf16, or fp16 with
// `fp16` (the INT4 FP16 format). `magnitude`, where not null, is a float array of out's shape
// that gets, for each element written, sqrt(sum_k (a_k * w_k)^2): the size of the element's
// products, the scale of the GPU tests' tolerance (a kernel that scales a group's fp32 sum
// instead of rounding each weight to T differs from this reference in proportion to it, not to
// the sum).
#pragma once
#include <cstdint>

namespace chord::ref {

// A [m, K], m_indices [m] (expert per row, -1 = padding) -> out [m, N].
void w4a16_gemm_contiguous(const uint16_t* a, int m, const int32_t* m_indices, const uint16_t* w, int num_experts,
                           int n, int k, uint16_t* out, bool fp16 = false, float* magnitude = nullptr);

// A [G, max_m, K], masked_m [G] -> out [G, max_m, N]; group g uses expert g.
void w4a16_gemm_masked(const uint16_t* a, int num_groups, int max_m, const int32_t* masked_m, const uint16_t* w,
                       int n, int k, uint16_t* out, bool fp16 = false, float* magnitude = nullptr);

// A [S, K] sorted by expert, offsets [E] cumulative end rows -> out [S, N].
void w4a16_gemm_offsets(const uint16_t* a, int s_rows, const int32_t* offsets, const uint16_t* w, int num_experts,
                        int n, int k, uint16_t* out, bool fp16 = false, float* magnitude = nullptr);

// vLLM moe_align_block_size routing: A [M, K]; sorted_ids [capacity]; expert_ids per
// block_size ids (-1 = not local); num_tokens_padded valid prefix. out [M * top_k, N];
// route id -> input row id / top_k, output row id; ids >= M * top_k are skipped.
void w4a16_gemm_indexed(const uint16_t* a, int num_tokens, int top_k, const int32_t* sorted_ids, int capacity,
                        const int32_t* expert_ids, int block_size, int num_tokens_padded, const uint16_t* w,
                        int num_experts, int n, int k, uint16_t* out, bool fp16 = false,
                        float* magnitude = nullptr);

}  // namespace chord::ref
