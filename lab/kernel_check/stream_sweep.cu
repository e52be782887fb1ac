// How close can the decode tiles' copy schedule alone come to the HBM read floor on the decode
// shapes that stay far below it? Streams the packed weights and scales of a few active experts
// (docs/packed_layout.md: per 64-k chunk, each 16-row n tile is a 512-byte run, the tile's
// chunks contiguous along K) through a cp.async ring, with no math, for a grid of (BN, BK,
// STAGES, THREADS, SPLIT): one CTA per (expert, n block, K split), as the mma.sync decode kernel
// launches them. Prints each setting's time and its fraction of bytes / 4.47 TB/s; the real
// kernel's time on the same shape (bench --set generalization) against the best line here says
// whether the copy schedule or the math and latency hold a row.
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I. lab/kernel_check/stream_sweep.cu -o /tmp/ss
//   /tmp/ss                 the shapes below, every setting, after a write flush and a read flush
#include <algorithm>
#include <cstdio>
#include <vector>

#include "lab/kernel_check/check_harness.cuh"  // CK
#include "lab/kernel_check/stream_probe.cuh"

namespace {

using namespace stream_probe;



template <int BN, int BK, int STAGES, int THREADS>
struct Tile {
  static constexpr int kW = BN * BK / 2;          // packed weight bytes per stage
  static constexpr int kS = (BK / 32) * BN * 2;   // bf16 scale bytes per stage
  static constexpr int kStage = kW + kS;
  static constexpr int kSmem = STAGES * kStage;
};

// blockIdx.x = (expert * n_blocks + n_block) * split + piece; piece streams its K / split.
template <int BN, int BK, int STAGES, int THREADS>
__global__ void __launch_bounds__(THREADS) stream(const unsigned char* w, const unsigned char* s, int n, int k,
                                                   int split, unsigned int* sink) {
  using T = Tile<BN, BK, STAGES, THREADS>;
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned int base = (unsigned int)__cvta_generic_to_shared(smem);
  const int n_blocks = n / BN;
  const int piece = blockIdx.x % split, tile = blockIdx.x / split;
  const int e = tile / n_blocks, nb = tile % n_blocks;
  const int kbs = k / BK, kb0 = kbs * piece / split, num_k = kbs * (piece + 1) / split - kb0;
  const int tid = threadIdx.x;
  auto load = [&](int kb, int slot) {
    const unsigned int st = base + slot * T::kStage;
    for (int c = tid; c < T::kW / 16; c += THREADS) {
      // piece c: n tile c / (32 * BK / 64), 64-k chunk (c / 32) % (BK / 64), 16 bytes c % 32.
      const int nt = nb * (BN / 16) + c / (32 * (BK / 64)), kc = (kb0 + kb) * (BK / 64) + (c / 32) % (BK / 64);
      cp16(st + c * 16, w + (((long long)e * (n / 16) + nt) * (k / 64) + kc) * 512 + (c % 32) * 16);
    }
    for (int c = tid; c < T::kS / 16; c += THREADS) {
      const int g = (kb0 + kb) * (BK / 32) + c / (BN * 2 / 16);
      cp16(st + T::kW + c * 16, s + (((long long)e * (k / 32) + g) * n + nb * BN) * 2 + (c % (BN * 2 / 16)) * 16);
    }
  };
  unsigned int acc = 0;
#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (st < num_k) load(st, st);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  int slot = 0;
  for (int kb = 0; kb < num_k; ++kb) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2) : "memory");
    __syncthreads();
    const int next = kb + STAGES - 1;
    int ns = slot + STAGES - 1;
    ns = ns >= STAGES ? ns - STAGES : ns;
    if (next < num_k) load(next, ns);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    unsigned int v;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(base + slot * T::kStage + (tid % 64) * 16));
    acc ^= v;
    slot = slot + 1 == STAGES ? 0 : slot + 1;
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the reads alive
}

struct Buffers {
  unsigned char *w, *s;
  unsigned int* sink;
  void* flush;
  bool read_flush;  // flush L2 by reading the flush buffer (clean lines) instead of writing it
};


template <int BN, int BK, int STAGES, int THREADS>
void run(const Shape& sh, int split, const Buffers& b) {
  using T = Tile<BN, BK, STAGES, THREADS>;
  if (sh.n % BN != 0 || sh.k % BK != 0 || sh.k / BK < split) return;
  auto kernel = stream<BN, BK, STAGES, THREADS>;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmem));
  const int grid = sh.experts * (sh.n / BN) * split;
  const float us = median_us(
      [&](int r) {  // L2 flushed before every rep
        if (b.read_flush) {
          launch_read_flush(b.flush, b.sink);
        } else {
          CK(cudaMemsetAsync(b.flush, r, kFlushBytes));
        }
      },
      [&] { kernel<<<grid, THREADS, T::kSmem>>>(b.w, b.s, sh.n, sh.k, split, b.sink); });
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, THREADS, T::kSmem));
  const double floor_us = sh.floor_us();
  std::printf("  %s bn%-3d bk%-3d s%d t%-3d sk%d: %5d CTAs (%d/SM max) %8.2f us  %5.1f%% of the floor\n", b.read_flush ? "read " : "write", BN, BK, STAGES,
              THREADS, split, grid, per_sm, us, 100.0 * floor_us / us);
}

template <int BN, int BK>
void stages_threads(const Shape& sh, const Buffers& b) {
  for (int split : {1, 2, 4, 8}) {
    run<BN, BK, 3, 128>(sh, split, b);
    run<BN, BK, 4, 128>(sh, split, b);
    run<BN, BK, 6, 128>(sh, split, b);
    run<BN, BK, 4, 256>(sh, split, b);
  }
}

}  // namespace

int main() {
  long long max_w = 0, max_s = 0;
  for (const Shape& sh : kShapes) {
    max_w = std::max(max_w, sh.weight_bytes());
    max_s = std::max(max_s, sh.scale_bytes());
  }
  Buffers b;
  CK(cudaMalloc(&b.w, max_w));
  CK(cudaMalloc(&b.s, max_s));
  CK(cudaMalloc(&b.sink, 4));
  CK(cudaMalloc(&b.flush, kFlushBytes));
  CK(cudaMemset(b.flush, 0, kFlushBytes));
  CK(cudaMemset(b.w, 1, max_w));
  CK(cudaMemset(b.s, 1, max_s));
  for (const Shape& sh : kShapes) {
    std::printf("%s: %.1f MB, floor %.2f us\n", sh.name, sh.bytes() / 1e6, sh.floor_us());
    for (bool read : {false, true}) {
      b.read_flush = read;
      stages_threads<64, 128>(sh, b);
      stages_threads<128, 128>(sh, b);
      stages_threads<128, 256>(sh, b);
      stages_threads<256, 128>(sh, b);
    }
  }
  return 0;
}
