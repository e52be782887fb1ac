// W4A16 grouped MoE GEMM, Hopper WGMMA prefill with warp specialization (sm_90a only): the
// same arithmetic, weight decode, modes, tile schedulers and packed layouts as
// w4a16_wgmma_body (w4a16_wgmma.cuh), arranged as
//   - warpgroup 0, the producer (56 registers after setmaxnreg): resolves tiles with the mode's
//     scheduler (named barrier 1 among its 128 threads); for every stage one thread loads the
//     packed weights and scales as two TMA boxes (args.w_map, args.s_map), their bytes expected
//     on the stage's `full` mbarrier, and the activation rows: in contiguous, masked and offsets
//     mode one more TMA box (w4a16_tma_activations); indexed rows are gathered by all 128
//     threads with cp.async, each of which publishes the stage on `full` once its copies have
//     landed and it has fenced the proxies (the copies are generic-proxy writes, wgmma reads
//     through the async proxy), one stage late; 4-stage builds arrive as the copies land
//     (cp.async.mbarrier.arrive.noinc) and the consumers fence (kProducerFence);
//   - warpgroups 1 and 2, the consumers (224 registers): each owns BLOCK_N / 2 weight rows of
//     the tile (KTILES = BLOCK_N / 128 m64 tiles), waits for a stage, decodes its weight
//     fragments, issues the wgmma (one group in flight while the next fragments decode,
//     except INT4 BN256 and NF4 half-width tiles: see k_block) and frees the stage of the
//     retired group on its `empty` mbarrier; no CTA-wide barrier in the main loop.
// Persistent: CTA b takes tiles b, b + gridDim.x, ... (n block fastest); any grid is correct,
// the launcher runs one CTA per SM. The producer runs ahead across tiles, so the next tile's
// copies are in flight during a tile's epilogue. Tiles reach the consumers through
// kW4A16WgmmaWsSlots slots (output rows, n block, a "done" mark, the wgmma width) with their
// own full / empty mbarriers; NF4 tiles whose rows fit in the first 64 tokens run the m64n64
// wgmma. The resolver runs it for NF4 prefill and large long-K INT4 prefill, and on tiles of
// 48 or 96 tokens (BLOCK_M) for masked INT4 calls of a few dozen rows per group in buffers far
// larger, where its loop takes only the groups' non-empty tiles (docs/kernels.md).
#pragma once

#include "w4a16_wgmma.cuh"

namespace chord {

namespace w4a16_ws_detail {

// Named barrier 2 + consumer among that consumer warpgroup's 128 threads.
__device__ __forceinline__ void consumer_sync(int consumer) {
  if (consumer == 0) {
    ptx::bar_sync<2, 128>();
  } else {
    ptx::bar_sync<3, 128>();
  }
}

}  // namespace w4a16_ws_detail

template <int MODE, int BLOCK_N, int STAGES, int WEIGHT, int BLOCK_M>
struct W4A16WgmmaWsConfig {
  static constexpr int kBlockM = BLOCK_M;
  static constexpr int kThreads = kW4A16WgmmaWsThreads;
  static constexpr bool kZp = w4a16_has_zero_point(WEIGHT);
  static constexpr bool kG128 = w4a16_is_g128(WEIGHT);
  static constexpr int kStageBytes = w4a16_wgmma_stage_bytes(kBlockM, BLOCK_N, kZp, kG128);
  static constexpr int kABytes = kBlockM * 128;
  static constexpr int kWBytes = BLOCK_N * 32;
  // INT4: two 16-bit group rows; NF4: one FP32 absmax row; zero points: two rows of 32-bit
  // {scale, bias} pairs; group 128: one row (of 16-bit scales or of pairs).
  static constexpr int kSBytes = BLOCK_N * (kZp ? 8 : 4) / (kG128 ? 2 : 1);
  static constexpr int kTiles = BLOCK_N / 128;  // m64 tiles per consumer warpgroup
  static constexpr int kAcc = kBlockM / 2;
  static_assert(w4a16_wgmma_ws_config_error(MODE, BLOCK_M, BLOCK_N, STAGES, w4a16_is_nf4(WEIGHT), kZp, kG128) == nullptr,
                "invalid W4A16 warp-specialized WGMMA config (see w4a16_wgmma_ws_config_error)");
};

// Launch: grid = any (the launcher: min(tiles, SMs)), block = 384, dynamic smem =
// w4a16_wgmma_ws_smem_bytes(BLOCK_M, BLOCK_N, STAGES, nf4), __launch_bounds__(384, 1). BLOCK_M is
// last so that the 128-token kernels' entry points keep their text.
template <int MODE, int BLOCK_N, int STAGES, int WEIGHT = kW4A16WeightInt4, int BLOCK_M = kW4A16WgmmaWsBlockM>
__device__ __forceinline__ void w4a16_wgmma_ws_body(const W4A16Args& args) {
  using Cfg = W4A16WgmmaWsConfig<MODE, BLOCK_N, STAGES, WEIGHT, BLOCK_M>;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using namespace w4a16_detail;
  using namespace w4a16_ws_detail;
  constexpr int BM = Cfg::kBlockM;
  constexpr int kTiles = Cfg::kTiles;
  constexpr int kAcc = Cfg::kAcc;
  constexpr bool kNF4 = w4a16_is_nf4(WEIGHT);
  constexpr int kElem = w4a16_element(WEIGHT);
  constexpr bool kF16 = kElem == kNF4FP16;
  constexpr int kProducers = 128;
  constexpr bool kTmaA = w4a16_tma_activations(MODE);
  // How a stage's activation rows become visible to the consumers' wgmma (async proxy): TMA
  // writes through the async proxy (no fence); cp.async writes through the generic proxy, so a
  // proxy fence must order them first. Builds of more than 4 stages fence in the producer
  // (kProducerFence: each thread publishes a stage once its copies landed and it fenced); in the
  // consumers, right after the stage barrier, that fence cost 3-5% on the long-K prefill rows.
  // The 4-stage builds run short K (TP8 down: 4 k blocks a tile), where a tile's last stage,
  // published late, cost 2% and the consumers' fence nothing measurable: they keep it. Only
  // INDEXED copies its rows with cp.async (w4a16_tma_activations).
  constexpr bool kProducerFence = !kTmaA && STAGES > 4;
  // Tiles whose valid rows all sit in the first BM / 2 (an expert's last rows) run the
  // half-width wgmma: NF4 weights only. With INT4 weights ptxas serializes the wgmma of some
  // BLOCK_N 256 instantiations once the kernel holds both widths (C7511, "insufficient
  // register resources"), so INT4 tail tiles run at full width.
  constexpr bool kNarrowTiles = kNF4;
  // The narrow-tile test reads all 128 of a slot's rows (NF4 runs 128-token tiles only).
  static_assert(!kNarrowTiles || BM == kW4A16WgmmaWsBlockM, "half-width tail tiles need 128-token tiles");

  extern __shared__ __align__(1024) unsigned char w4a16_wgmma_smem[];
  const unsigned int raw_base = ptx::smem_addr(w4a16_wgmma_smem);
  unsigned char* pipe = w4a16_wgmma_smem + ((1024u - (raw_base & 1023u)) & 1023u);
  const unsigned int pipe_base = ptx::smem_addr(pipe);
  constexpr int kSlots = kW4A16WgmmaWsSlots;
  // After the stages: mbarriers full[S], empty[S], slot_full[kSlots], slot_empty[kSlots]; the tile slots
  // of BM output rows + {n block, valid}; the producer's source rows; scheduler scratch;
  // per-warp epilogue staging; the NF4 pair table (w4a16_wgmma_ws_smem_bytes).
  unsigned char* extra = pipe + STAGES * Cfg::kStageBytes;
  const unsigned int bar_full = ptx::smem_addr(extra), bar_empty = bar_full + 8 * STAGES;
  const unsigned int bar_slot_full = bar_empty + 8 * STAGES, bar_slot_empty = bar_slot_full + 8 * kSlots;
  int* const slots = reinterpret_cast<int*>(extra + w4a16_wgmma_ws_barrier_bytes(STAGES));
  int* const s_src = slots + kSlots * (BM + 4);
  int* const s_misc = s_src + BM;
  const unsigned int epi_base = ptx::smem_addr(s_misc + 64);
  // NF4 pair table: BN256 on 256-byte entries (one prmt per lookup address, the table base
  // folded into the load); BN128 on 128-byte entries (its contiguous S6 build serializes the
  // wgmma with the wider table, C7511).
  constexpr int kReplicas = kTiles == 2 ? 64 : 32;
  const unsigned int nf4_tab = (epi_base + w4a16_wgmma_ws_epi_bytes(BM, BLOCK_N, STAGES, kNF4) + 255u) & ~255u;

  const int tid = threadIdx.x;
  const int wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
  // A stage is full after the TMA thread's expect_tx arrival and its bytes, and with cp.async
  // activation rows, each producer thread's arrival.
  constexpr int kFullArrivals = (kTmaA ? 0 : kProducers) + 1;
  constexpr unsigned int kTmaBytes = (kTmaA ? Cfg::kABytes : 0) + Cfg::kWBytes + Cfg::kSBytes;
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      ptx::mbar_init(bar_full + 8 * s, kFullArrivals);
      ptx::mbar_init(bar_empty + 8 * s, 8);  // one arrival per consumer warp
    }
    for (int s = 0; s < kSlots; ++s) {
      ptx::mbar_init(bar_slot_full + 8 * s, 1);
      ptx::mbar_init(bar_slot_empty + 8 * s, 8);
    }
  }
  if constexpr (kNF4) nf4_detail::nf4_fill_pair_table<kElem, Cfg::kThreads, kReplicas>(nf4_tab, tid);
  __syncthreads();

  const int K = args.k, N = args.n;
  const int num_k = K / kW4A16WgmmaBlockK;

  if (wg == 0) {
    // ---------------------------------------------------------------- producer warpgroup
    ptx::setmaxnreg_dec<56>();
    using Sync = W4A16NamedSync<1, kProducers>;
    const int n_blocks = N / BLOCK_N;
    // Masked, compact (W4A16Tiles<kW4A16Masked>): the tiles are the groups' non-empty ones in
    // group order, however many the host's hint expected, up to the buffer's; the first without
    // rows ends the loop.
    bool compact = false;
    if constexpr (MODE == kW4A16Masked) {
      compact = w4a16_masked_compact(BM, args.num_groups, args.max_m, args.expected_m);
    }
    const int total = compact ? (int)(w4a16_masked_tiles(BM, args.num_groups, args.max_m, 0) * n_blocks)
                              : (int)w4a16_grid(args, BM, BLOCK_N).x;
    constexpr int kAPieces = BM * 8 / kProducers;  // 8: rows tid / 8 + 16 i, chunk tid % 8
    const int a_row = tid >> 3, a_ch = tid & 7;
    const unsigned int a_dst = a_row * 128 + ((a_ch ^ (a_row & 7)) << 4);
    int stage = 0;
    unsigned int empty_parity = 1;  // a fresh barrier's previous phase counts as complete
    int slot = 0;
    unsigned int slot_parity = 1;  // a fresh barrier's previous phase counts as complete
    bool have_slot = false;        // the consumers have released `slot` to this producer
    // kProducerFence: a stage is published one stage late (the last one once the producer has
    // no more tiles). Waiting for a stage's copies never blocks the consumers: they free a stage
    // one block after reading it, and STAGES > 4. `pending`: the stage issued but not yet
    // published (-1: none). A lag of two stages measured no faster.
    int pending = -1;
    auto publish_stage = [&](int stage_done) {
      ptx::fence_proxy_async_shared();
      ptx::mbar_arrive(bar_full + 8 * stage_done);
    };
    for (int t = (int)blockIdx.x; t < total; t += (int)gridDim.x) {
      if (!have_slot) {
        ptx::mbar_wait(bar_slot_empty + 8 * slot, slot_parity);
        have_slot = true;
      }
      // Resolve straight into the slot: source rows here, output rows where the consumers read.
      int* dst = slots + slot * (BM + 4);
      int expert = -1;
      bool resolved;
      if constexpr (MODE == kW4A16Masked) {  // one of two schedules, as the grid was sized
        resolved = compact ? W4A16Tiles<MODE>::template resolve<BM, kProducers, Sync, true>(args, t / n_blocks, s_src,
                                                                                          dst, s_misc, expert)
                           : W4A16Tiles<MODE>::template resolve<BM, kProducers, Sync, false>(args, t / n_blocks, s_src,
                                                                                           dst, s_misc, expert);
      } else {
        resolved = W4A16Tiles<MODE>::template resolve<BM, kProducers, Sync>(args, t / n_blocks, s_src, dst, s_misc,
                                                                           expert);
      }
      if (!resolved) {
        if (compact) break;
        continue;
      }
      const int n_block = t % n_blocks;
      if (tid == 0) {
        dst[BM] = n_block;
        dst[BM + 1] = 1;
      }
      // The barrier after the rows (not every scheduler ends on one after its last write). Every
      // scheduler fills a tile's valid rows first: with none in its second half (an expert's
      // last rows) the tile runs the half-width wgmma.
      // The tile's first row of A (its rows are consecutive there): for the TMA box.
      if (kTmaA && tid < BM && s_src[tid] >= 0) s_misc[63] = s_src[tid] - tid;
      int wide = 1;
      if constexpr (kNarrowTiles) {
        wide = Sync::sync_or(tid >= BM / 2 && dst[tid] >= 0);
      } else {
        Sync::sync();
      }
      if (tid == 0) {
        dst[BM + 2] = wide;
        ptx::mbar_arrive(bar_slot_full + 8 * slot);
      }
      have_slot = false;
      if (++slot == kSlots) {
        slot = 0;
        slot_parity ^= 1;
      }

      const int a_row0 = kTmaA ? s_misc[63] : 0;  // written before the barrier above
      // This thread's copy sources for the tile.
      unsigned int a_chunk[kAPieces];
      unsigned int a_valid = 0;
#pragma unroll
      for (int i = 0; i < kAPieces; ++i) {
        const int src = s_src[a_row + i * (kProducers / 8)];
        a_chunk[i] = src >= 0 ? (unsigned int)((unsigned long long)src * (unsigned long long)args.lda / 8ull) + a_ch : 0u;
        a_valid |= (src >= 0 ? 1u : 0u) << i;
      }
      // The TMA boxes' rows (w4a16_weight_map_shape, w4a16_scale_map_shape): the expert's n tiles
      // of this block; its scale rows of k block 0 (INT4 two per k block, NF4 one; group 128 one
      // per two k blocks: k block kb reads row kb / 2 of the expert's K / 128).
      constexpr int kScaleRows = kNF4 ? 1 : 2;
      const int w_row0 = expert * (N / 16) + n_block * (BLOCK_N / 16);
      const int s_row0 = Cfg::kG128 ? expert * (num_k / 2) : expert * num_k * kScaleRows;
      Sync::sync();  // every producer thread has read s_src before the next resolve rewrites it
      if (kTmaA && tid != 0) continue;  // thread 0 copies the whole stage

      for (int kb = 0; kb < num_k; ++kb) {
        ptx::mbar_wait(bar_empty + 8 * stage, empty_parity);
        const unsigned int st = pipe_base + stage * Cfg::kStageBytes;
        const unsigned int full = bar_full + 8 * stage;
        if (tid == 0) {
          ptx::mbar_arrive_expect_tx(full, kTmaBytes);
          // Rows past the tile's valid ones are loaded too (the next expert's, or zeros past the
          // end of A): their output columns are not stored.
          if constexpr (kTmaA) ptx::tma_load_2d(st, &args.a_map, kb * kW4A16WgmmaBlockK, a_row0, full);
          ptx::tma_load_2d(st + Cfg::kABytes, &args.w_map, kb * 128, w_row0, full);
          ptx::tma_load_2d(st + Cfg::kABytes + Cfg::kWBytes, &args.s_map, n_block * BLOCK_N,
                           Cfg::kG128 ? s_row0 + (kb >> 1) : s_row0 + kb * kScaleRows, full);
        }
        if constexpr (!kTmaA) {  // the activation rows, gathered by every producer thread
          const uint4_w* a_k = static_cast<const uint4_w*>(args.a) + kb * (kW4A16WgmmaBlockK / 8);
#pragma unroll
          for (int i = 0; i < kAPieces; ++i)
            ptx::cp_async_16(st + a_dst + i * kProducers * 16, a_k + a_chunk[i], (a_valid >> i) & 1u ? 16 : 0);
          if constexpr (!kProducerFence) {
            ptx::cp_async_mbar_arrive(full);  // arrives once this thread's copies landed
          } else {
            ptx::cp_async_commit();
            if (pending >= 0) {
              ptx::cp_async_wait<1>();  // the pending stage has landed (this one may still be in flight)
              publish_stage(pending);
            }
            pending = stage;
          }
        }
        if (++stage == STAGES) {
          stage = 0;
          empty_parity ^= 1;
        }
      }
    }
    // No more tiles. The copies still in flight land before this thread exits (without the
    // producer fence their mbarrier arrivals are still to come; with it the last stage is
    // published once they have). Then a slot without the valid mark ends the consumers' loop.
    ptx::cp_async_wait<0>();
    if (kProducerFence && pending >= 0) publish_stage(pending);
    if (!have_slot) ptx::mbar_wait(bar_slot_empty + 8 * slot, slot_parity);
    if (tid == 0) {
      slots[slot * (BM + 4) + BM + 1] = 0;
      ptx::mbar_arrive(bar_slot_full + 8 * slot);
    }
  } else {
    // ---------------------------------------------------------------- consumer warpgroups
    ptx::setmaxnreg_inc<224>();
    const int cw = wg - 1;  // consumer warpgroup 0 / 1
    const int g = lane >> 2;
    const int nt0 = cw * kTiles * 4 + warp;  // packed chunk of this warp's m64 tile 0; tile i: + 4 i
    const unsigned int w_rd = Cfg::kABytes + nt0 * 512 + lane * 16;
    const unsigned int s_rd = Cfg::kABytes + Cfg::kWBytes + (nt0 * 16 + 2 * g) * (kNF4 || Cfg::kZp ? 4 : 2);
    const unsigned int nf4_lane = kNF4 ? nf4_detail::nf4_pair_lane_base<kReplicas>(nf4_tab, lane) : 0u;
    const unsigned int epi_lane = epi_base + (unsigned int)((tid >> 5) - 4) * 512u + lane * 16;
    unsigned short* const out = static_cast<unsigned short*>(args.out);

    float acc[kTiles][kAcc];
#pragma unroll
    for (int i = 0; i < kTiles; ++i)
#pragma unroll
      for (int r = 0; r < kAcc; ++r) acc[i][r] = 0.f;
    unsigned int af_even[kTiles][4][4], af_odd[kTiles][4][4];
    int stage = 0, prev_stage = 0;
    unsigned int full_parity = 0;
    int slot = 0;
    unsigned int slot_parity = 0;

    // One k block from the next stage; first: the tile's first block (scale-d 0 on its first
    // wgmma). Two forms:
    //   - one wgmma group per m64 tile, one left in flight while the next decodes, each stage
    //     freed once its last group has retired (in the next block, or after the tile's
    //     ptx::wgmma_wait<0>): BN128 (the next block decodes into the other fragment array), and
    //     NF4 BN256 full-width tiles (tile i decodes while tile 1 - i's group runs);
    //   - one group per block, retired before the next decode, its stage freed at once (the
    //     other consumer's group keeps the tensor pipe busy meanwhile): INT4 BN256 (the
    //     per-tile form measured 4% slower on EP8 contiguous 512 down, equal elsewhere; its
    //     tile 1 still decodes while tile 0's wgmma run: ~1% faster) and NF4 BN256 half-width
    //     tiles (a group in flight there too makes ptxas serialize, C7511).
    auto per_tile_groups = [&](bool wide) { return kTiles == 1 || (kNF4 && wide); };
    // `wide`: ptx::Wgmma<BM>, else ptx::Wgmma<BM / 2> on the tile's first BM / 2 tokens (the other
    // accumulators keep stale values; their rows are not stored). A constant at each call.
    auto mma_step = [&](int i, int j, const unsigned int(&a)[4], unsigned long long desc0, bool first, bool wide) {
      if constexpr (kNarrowTiles) {
        if (!wide) {
          ptx::Wgmma<BM / 2>::template mma<kF16>(acc[i], a, desc0 + 2 * j, j > 0 || !first);
          return;
        }
      }
      ptx::Wgmma<BM>::template mma<kF16>(acc[i], a, desc0 + 2 * j, j > 0 || !first);
    };
    auto k_block = [&](unsigned int(&af)[kTiles][4][4], bool first, bool wide) {
      ptx::mbar_wait(bar_full + 8 * stage, full_parity);
      if constexpr (kProducerFence || kTmaA) {
        // The reader's half of the producer's fence (TMA-only stages need none; it emits no
        // instruction, and without it ptxas serializes some NF4 builds, C7511).
        ptx::fence_proxy_async_acquire();
      } else {
        ptx::fence_proxy_async_shared();  // cp.async rows, published as they landed
      }
      const unsigned int st = pipe_base + stage * Cfg::kStageBytes;
      const unsigned long long desc0 = ptx::smem_desc_sw128(st);
      const bool groups = per_tile_groups(wide);
      if (groups || !kNF4) {
        // Tile i decodes right before its wgmma, so tile 1 decodes while tile 0's run.
#pragma unroll
        for (int i = 0; i < kTiles; ++i) {
          w4a16_wgmma_decode_tile<BLOCK_N, WEIGHT, kReplicas>(st, w_rd, s_rd, nf4_lane, i, af[i], nf4_tab);
          ptx::wgmma_fence();
#pragma unroll
          for (int j = 0; j < 4; ++j) mma_step(i, j, af[i][j], desc0, first, wide);
          if (groups) {
            ptx::wgmma_commit();
            ptx::wgmma_wait<1>();
            // After tile 0's commit the previous block's last group has retired, its stage too.
            if (i == 0 && !first && lane == 0) ptx::mbar_arrive(bar_empty + 8 * prev_stage);
          }
        }
      } else {
        // NF4 half-width tiles: both tiles decode first (interleaving them with the wgmma makes
        // ptxas serialize the NF4 BN256 builds, C7511).
#pragma unroll
        for (int i = 0; i < kTiles; ++i) {
          w4a16_wgmma_decode_tile<BLOCK_N, WEIGHT, kReplicas>(st, w_rd, s_rd, nf4_lane, i, af[i], nf4_tab);
          ptx::wgmma_fence();
#pragma unroll
          for (int j = 0; j < 4; ++j) mma_step(i, j, af[i][j], desc0, first, wide);
          if (i + 1 < kTiles) {
            ptx::wgmma_commit();
            ptx::wgmma_wait<0>();
          }
        }
      }
      if (!groups) {
        ptx::wgmma_commit();
        ptx::wgmma_wait<0>();
        if (lane == 0) ptx::mbar_arrive(bar_empty + 8 * stage);
      }
      prev_stage = stage;
      if (++stage == STAGES) {
        stage = 0;
        full_parity ^= 1;
      }
    };

    // The previous tile's output as T pairs (chunk c: rows g, g + 8), stored while this tile's
    // first wgmma group runs: the epilogue of a tile overlaps the tensor work of the next.
    // With two m64 tiles per consumer (BN256) the packed tile does not fit beside the
    // accumulators and fragments: stored right after the tile instead.
    constexpr bool kDeferStores = kTiles == 1;
    // Short-K INT4 BN256: the tile's output leaves through TMA bulk stores (async_store).
    constexpr bool kAsyncStores = w4a16_wgmma_ws_async_stores(BLOCK_N, STAGES, kNF4);
    unsigned int packed[kTiles][BM / 8][2];
    int pending_slot = -1;  // slot whose output rows `packed` belongs to
    // T pair h (rows g, g + 8) of token chunk c of m64 tile i. The front end cannot see that
    // `packed` is written (at the end of a tile) before store_pending reads it (pending_slot
    // >= 0 only after that tile), so its "used before set" warning is silenced here alone.
#pragma nv_diag_suppress 549
    auto pair = [&](int i, int c, int h) {
      if constexpr (!kDeferStores) {
        const float* a = &acc[i][4 * c + 2 * h];
        return ptx::pack_half2<kElem>(a[0], a[1]);
      } else {
        return packed[i][c][h];
      }
    };
#pragma nv_diag_default 549
    auto store_pending = [&]() {
      const int* rows = slots + pending_slot * (BM + 4);
      const int n_block = rows[BM];
#pragma unroll
      for (int i = 0; i < kTiles; ++i) {
        const int n_out = n_block * BLOCK_N + (cw * kTiles + i) * 64 + warp * 16 + ((lane >> 3) & 1) * 8;
#pragma unroll
        for (int c = 0; c < BM / 8; c += 2) {
          // stmatrix.trans: chunks c, c + 1 as 32 16-byte rows [token][8 weight rows] (matrix
          // j = lane / 8: chunk c + j / 2, rows + 8 (j % 2)); each lane writes its row where
          // the token's output row is valid.
          ptx::stmatrix_x4_trans(epi_lane, pair(i, c, 0), pair(i, c, 1), pair(i, c + 1, 0), pair(i, c + 1, 1));
          __syncwarp();
          uint4_w row;
          ptx::lds128(epi_lane, row.x, row.y, row.z, row.w);
          const int dst = rows[(c + (lane >> 4)) * 8 + (lane & 7)];
          if (dst >= 0) *reinterpret_cast<uint4_w*>(out + (long long)dst * args.ldc + n_out) = row;
          __syncwarp();
        }
      }
      if (lane == 0) ptx::mbar_arrive(bar_slot_empty + 8 * pending_slot);
      pending_slot = -1;
    };

    // kAsyncStores: this warpgroup's BM tokens x 128 outputs of the finished tile (slot `slot`),
    // token rows of kW4A16WsStoreRowBytes, one bulk copy per valid token row (thread t: token
    // t), then the slot is free: the copies complete while the next tile runs.
    const unsigned int wg_staging = epi_base + (unsigned int)(cw * BM * kW4A16WsStoreRowBytes);
    auto async_store = [&]() {
      const int* rows = slots + slot * (BM + 4);
      ptx::bulk_wait_read();   // this thread's previous copies have read the staging,
      consumer_sync(cw);  // and every thread's of this warpgroup
#pragma unroll
      for (int i = 0; i < kTiles; ++i)
#pragma unroll
        for (int c = 0; c < BM / 8; c += 2) {
          const int token = (c + (lane >> 4)) * 8 + (lane & 7);
          const int col = i * 64 + warp * 16 + ((lane >> 3) & 1) * 8;
          ptx::stmatrix_x4_trans(wg_staging + (unsigned int)(token * kW4A16WsStoreRowBytes + col * 2), pair(i, c, 0),
                            pair(i, c, 1), pair(i, c + 1, 0), pair(i, c + 1, 1));
        }
      ptx::fence_proxy_async_shared();  // the generic-proxy writes, read by the bulk copies
      consumer_sync(cw);
      const int t = warp * 32 + lane;
      const int dst = t < BM ? rows[t] : -1;
      if (dst >= 0) {
        ptx::bulk_store(out + (long long)dst * args.ldc + rows[BM] * BLOCK_N + cw * 128,
                   wg_staging + (unsigned int)(t * kW4A16WsStoreRowBytes), 128 * 2);
      }
      ptx::bulk_commit();
      __syncwarp();
      if (lane == 0) ptx::mbar_arrive(bar_slot_empty + 8 * slot);
    };

    for (;;) {
      ptx::mbar_wait(bar_slot_full + 8 * slot, slot_parity);
      if (slots[slot * (BM + 4) + BM + 1] == 0) break;
      // First k block (its wgmma group stays in flight), then the previous tile's stores. The
      // wgmma width is chosen outside the k loop: a branch around the wgmma inside it makes
      // ptxas serialize them (C7520).
      auto tile_loop = [&](bool wide) {
        int kb = 1;
        for (; kb + 1 < num_k; kb += 2) {
          k_block(kTiles == 1 ? af_odd : af_even, false, wide);
          k_block(af_even, false, wide);
        }
        if (kb < num_k) k_block(kTiles == 1 ? af_odd : af_even, false, wide);
        ptx::wgmma_wait<0>();
      };
      const bool wide = !kNarrowTiles || slots[slot * (BM + 4) + BM + 2] != 0;
      if (wide) {
        k_block(af_even, true, true);
      } else {
        k_block(af_even, true, false);
      }
      if (kDeferStores && pending_slot >= 0) store_pending();  // else stored after its tile
      if (wide) {
        tile_loop(true);
      } else {
        tile_loop(false);
      }
      if (per_tile_groups(wide) && lane == 0) ptx::mbar_arrive(bar_empty + 8 * prev_stage);
      pending_slot = slot;
      if constexpr (kDeferStores) {
#pragma unroll
        for (int i = 0; i < kTiles; ++i)
#pragma unroll
          for (int c = 0; c < BM / 8; ++c)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const float* a = &acc[i][4 * c + 2 * h];
              packed[i][c][h] = ptx::pack_half2<kElem>(a[0], a[1]);
            }
      } else if constexpr (kAsyncStores) {
        async_store();
        pending_slot = -1;
      } else {
        store_pending();
      }
      if (++slot == kSlots) {
        slot = 0;
        slot_parity ^= 1;
      }
    }
    if (pending_slot >= 0) store_pending();
    if constexpr (kAsyncStores) ptx::bulk_wait();  // the last tiles' stores land before exit
  }
#else
  (void)args;
  ptx::trap();
#endif
}

}  // namespace chord
