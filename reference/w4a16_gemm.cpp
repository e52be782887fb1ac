#include "reference/w4a16_gemm.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <unordered_set>
#include <vector>

#include "reference/bf16.hpp"
#include "reference/nf4_reference.hpp"

namespace chord::ref {

namespace {

// One output row of a call: out_row[n] = T(sum_k a_row[k] * w[expert][n][k]); where mag_row is
// set, mag_row[n] = sqrt(sum_k (a_row[k] * w[expert][n][k])^2).
struct RowJob {
  const uint16_t* a_row;
  int expert;
  uint16_t* out_row;
  float* mag_row;
};

// fn(i) for i in [0, count) on every hardware thread. Callers write disjoint outputs per i.
template <typename Fn>
void parallel_for(size_t count, Fn fn) {
  const size_t threads = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), count);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) fn(i);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

// The rows of one call. Each row sums its products in k order in one thread, so the output
// does not depend on the thread count; the experts the rows use are widened to fp32 once
// (the GPU tests' prefill shapes take billions of products). Where routing names one output
// row twice, the later job wins, as in a serial loop.
void gemm_rows(const std::vector<RowJob>& all_jobs, const uint16_t* w, int num_experts, int n, int k, bool fp16) {
  std::unordered_set<const uint16_t*> written;
  std::vector<RowJob> jobs;
  for (size_t j = all_jobs.size(); j-- > 0;) {
    if (written.insert(all_jobs[j].out_row).second) jobs.push_back(all_jobs[j]);
  }
  if (jobs.empty()) return;
  auto to_float = fp16 ? fp16_to_float : bf16_to_float;
  auto to_elem = fp16 ? float_to_fp16 : float_to_bf16;
  const size_t expert_size = static_cast<size_t>(n) * k;
  std::vector<int> used;
  std::vector<char> seen(num_experts, 0);
  for (const RowJob& j : jobs) {
    if (!seen[j.expert]) used.push_back(j.expert);
    seen[j.expert] = 1;
  }
  std::vector<std::vector<float>> wf(num_experts);
  parallel_for(used.size(), [&](size_t u) {
    const int e = used[u];
    wf[e].resize(expert_size);
    const uint16_t* src = w + static_cast<size_t>(e) * expert_size;
    for (size_t i = 0; i < expert_size; ++i) wf[e][i] = to_float(src[i]);
  });
  parallel_for(jobs.size(), [&](size_t j) {
    const RowJob& job = jobs[j];
    std::vector<float> af(k);
    for (int i = 0; i < k; ++i) af[i] = to_float(job.a_row[i]);
    const float* we = wf[job.expert].data();
    for (int col = 0; col < n; ++col) {
      const float* wr = we + static_cast<size_t>(col) * k;
      float acc = 0.f;
      for (int i = 0; i < k; ++i) acc += af[i] * wr[i];
      job.out_row[col] = to_elem(acc);
      if (job.mag_row != nullptr) {
        float sq = 0.f;  // the scale of a tolerance: fp32 is plenty
        for (int i = 0; i < k; ++i) sq += (af[i] * wr[i]) * (af[i] * wr[i]);
        job.mag_row[col] = std::sqrt(sq);
      }
    }
  });
}

// Row `row` of the optional magnitude output (null where there is none).
float* mag_row(float* magnitude, size_t row, int n) { return magnitude != nullptr ? magnitude + row * n : nullptr; }

}  // namespace

void w4a16_gemm_contiguous(const uint16_t* a, int m, const int32_t* m_indices, const uint16_t* w, int num_experts,
                           int n, int k, uint16_t* out, bool fp16, float* magnitude) {
  std::vector<RowJob> jobs;
  for (int r = 0; r < m; ++r) {
    const int e = m_indices[r];
    if (e < 0 || e >= num_experts) continue;
    jobs.push_back({a + static_cast<size_t>(r) * k, e, out + static_cast<size_t>(r) * n, mag_row(magnitude, r, n)});
  }
  gemm_rows(jobs, w, num_experts, n, k, fp16);
}

void w4a16_gemm_masked(const uint16_t* a, int num_groups, int max_m, const int32_t* masked_m, const uint16_t* w,
                       int n, int k, uint16_t* out, bool fp16, float* magnitude) {
  std::vector<RowJob> jobs;
  for (int g = 0; g < num_groups; ++g) {
    const int cnt = std::min(masked_m[g], max_m);
    for (int r = 0; r < cnt; ++r) {
      const size_t row = static_cast<size_t>(g) * max_m + r;
      jobs.push_back({a + row * k, g, out + row * n, mag_row(magnitude, row, n)});
    }
  }
  gemm_rows(jobs, w, num_groups, n, k, fp16);
}

void w4a16_gemm_offsets(const uint16_t* a, int s_rows, const int32_t* offsets, const uint16_t* w, int num_experts,
                        int n, int k, uint16_t* out, bool fp16, float* magnitude) {
  std::vector<RowJob> jobs;
  for (int e = 0; e < num_experts; ++e) {
    const int beg = std::max(e > 0 ? offsets[e - 1] : 0, 0);
    const int end = std::min(offsets[e], s_rows);
    for (int r = beg; r < end; ++r)
      jobs.push_back({a + static_cast<size_t>(r) * k, e, out + static_cast<size_t>(r) * n, mag_row(magnitude, r, n)});
  }
  gemm_rows(jobs, w, num_experts, n, k, fp16);
}

void w4a16_gemm_indexed(const uint16_t* a, int num_tokens, int top_k, const int32_t* sorted_ids, int capacity,
                        const int32_t* expert_ids, int block_size, int num_tokens_padded, const uint16_t* w,
                        int num_experts, int n, int k, uint16_t* out, bool fp16, float* magnitude) {
  const int valid = std::min(num_tokens_padded, capacity);
  const int routes = num_tokens * top_k;
  std::vector<RowJob> jobs;
  for (int p = 0; p < valid; ++p) {
    const int e = expert_ids[p / block_size];
    if (e < 0 || e >= num_experts) continue;
    const int id = sorted_ids[p];
    if (id < 0 || id >= routes) continue;
    jobs.push_back(
        {a + static_cast<size_t>(id / top_k) * k, e, out + static_cast<size_t>(id) * n, mag_row(magnitude, id, n)});
  }
  gemm_rows(jobs, w, num_experts, n, k, fp16);
}

}  // namespace chord::ref
