// Kernel families of the W4A16 grouped GEMM (kernels_src/w4a16_gemm.cuh) and of its
// weight pack / unpack kernels (kernels_src/w4a16_pack.cuh).
#pragma once
#include "jit/kernel_descriptor.hpp"
#include "jit/kernel_source.hpp"
#include "kernels_src/w4a16_args.cuh"
#include "kernels_src/nf4_args.cuh"
#include "kernels_src/w4a16_wgmma_args.cuh"
#include "core/w4a16_engine.hpp"

namespace chord {

// The mode's name in kernel names and the CLI: contiguous, masked, offsets, indexed.
const char* w4a16_mode_name(W4A16Mode mode);
// The weight kind's kernel-name suffix: "" (INT4 BF16), "_nf4", "_nf4f16", "_f16" (INT4 FP16),
// "_zp", "_zpf16" (zero points), "_g128", "_g128f16", "_zpg128", "_zpg128f16" (group 128).
const char* w4a16_weight_suffix(W4A16WeightKind weight);

struct W4A16GemmConfig {
  W4A16Engine engine = W4A16Engine::kMmaSync;
  W4A16Mode mode = kW4A16Contiguous;
  int block_m = 64;
  int block_n = 128;
  int block_k = 128;
  int stages = 4;
  int warps_m = 1;
  int warps_n = 4;
  int warpgroups = 2;  // kWgmma only (kWgmmaWs: one producer and two consumer warpgroups)
  W4A16WeightKind weight = kW4A16WeightInt4;  // INT4 or NF4, BF16 or FP16 activations
  int split_k = 1;     // kMmaSync on sm_90+: clusters of split_k CTAs share a tile (1, 2, 4, 8)
  // kMmaSync tiles that run the INT4 group sums (w4a16_runs_group_sums): their form, a
  // W4A16GroupSums (0, the default, on every other tile).
  int group_sums = kW4A16GroupSumsOffset;
  // kMmaSync staged tiles: n blocks one CTA reduces through one copy ring (1, 2, 4, 8;
  // w4a16_gemm_tile), for short-K calls whose one-block CTAs spend their time on fixed costs.
  int n_run = 1;
  // kMmaSync masked tiles: the CTAs take the compact schedule's tiles in turn (kernel name suffix
  // _ml; W4A16Tiles<kW4A16Masked>), for calls whose grid follows the hint rather than the buffer
  // (w4a16_masked_grid_follows_hint). Off, the kernel is the one-tile-per-CTA form.
  bool masked_loop = false;

  bool wgmma() const { return engine != W4A16Engine::kMmaSync; }  // either WGMMA kernel
  bool warp_specialized() const { return engine == W4A16Engine::kWgmmaWs; }
  bool nf4() const { return w4a16_is_nf4(weight); }  // adds the pair table
  bool zero_point() const { return w4a16_has_zero_point(weight); }  // 32-bit scale entries
  bool g128() const { return w4a16_is_g128(weight); }  // one scale row per 128 k
  int threads() const {
    return warp_specialized() ? kW4A16WgmmaWsThreads
           : wgmma()          ? w4a16_wgmma_threads(warpgroups)
                              : w4a16_threads(warps_m, warps_n);
  }
  int smem_bytes() const {
    return warp_specialized() ? w4a16_wgmma_ws_smem_bytes(block_m, block_n, stages, nf4(), zero_point(), g128())
           : wgmma()          ? w4a16_wgmma_smem_bytes(block_m, block_n, stages, nf4(), zero_point(), g128())
                              : w4a16_smem_bytes(block_m, block_n, block_k, stages, nf4(), zero_point(), g128());
  }
  // The kernel's __launch_bounds__ minimum CTAs per SM (0: none). 256-thread tiles run two per
  // SM (128 registers), which their speed was measured with: the one-role WGMMA BM64 x BN256
  // tile at one CTA per SM (167 registers) ran EP8 T=1024 indexed down in 117.2 us against
  // 97.3 at two (bench, H200).
  int launch_min_blocks() const {
    if (warp_specialized()) return 1;
    if (wgmma()) return 2;
    return threads() == 256 ? 2 : 0;
  }
  // Whether the kernel can loop over the masked compact schedule's tiles, so that its masked grid
  // may follow the hint rather than the buffer (w4a16_masked_tiles): the mma.sync tiles below the
  // register cap (w4a16_gemm_tile_loop; their masked_loop form) and the warp-specialized kernel
  // (its tile loop). The one-role WGMMA kernel takes one tile per CTA (a loop spills or
  // serializes its wgmma).
  bool takes_masked_loop() const {
    return warp_specialized() || (!wgmma() && w4a16_gemm_tile_loop(warps_m, warps_n));
  }
  // Why the config is invalid (nullptr when valid).
  const char* error() const {
    if (wgmma() && n_run != 1) return "n-block runs are a mma.sync schedule";
    if (masked_loop && (wgmma() || mode != kW4A16Masked || !takes_masked_loop())) {
      return "a masked tile loop needs a masked mma.sync tile of fewer than 256 threads";
    }
    if (warp_specialized()) {
      return split_k != 1     ? "split-K is a mma.sync schedule"
             : group_sums != 0 ? "the group-sums forms are a mma.sync schedule"
                               : w4a16_wgmma_ws_config_error(mode, block_m, block_n, stages, nf4(), zero_point(), g128());
    }
    if (wgmma() && block_k != kW4A16WgmmaBlockK) return "the WGMMA kernels have BLOCK_K 64";
    if (wgmma()) {
      return split_k != 1 ? "split-K is a mma.sync schedule"
             : group_sums != 0 ? "the group-sums forms are a mma.sync schedule"
                               : w4a16_wgmma_config_error(mode, block_m, block_n, warpgroups, stages, nf4(), zero_point(),
                                                     g128());
    }
    if (const char* why = w4a16_config_error(block_m, block_n, block_k, stages, warps_m, warps_n, nf4(), split_k,
                                             zero_point(), g128())) {
      return why;
    }
    if (const char* why = w4a16_n_run_error(n_run, w4a16_default_path(block_m, warps_m, stages), split_k, nf4())) {
      return why;
    }
    return w4a16_group_sums_error(group_sums, weight, block_m, warps_m, stages);
  }
  // Whether the tile runs the INT4 group sums, whose form group_sums chooses.
  bool runs_group_sums() const { return !wgmma() && w4a16_runs_group_sums(weight, block_m, warps_m, stages); }
  // Whether the tile can take this group-sums form (the correction form: BF16 only).
  bool takes_group_sums(int form) const {
    return runs_group_sums() && w4a16_group_sums_error(form, weight, block_m, warps_m, stages) == nullptr;
  }
  // Why the config cannot run (N, K), or nullptr.
  const char* shape_error(int n, int k) const {
    return wgmma() ? w4a16_wgmma_shape_error(n, k, block_n) : w4a16_shape_error(n, k, block_n, block_k);
  }

  KernelDescriptor descriptor(const Arch& arch) const;
  static W4A16GemmConfig from(const KernelDescriptor& descriptor);
  KernelSource source() const;
};

// `c` as the warp-specialized kernel's tile: 128 tokens x 256 weight rows, 5 stages for NF4,
// `int4_stages` for INT4 (6, or a tuning table's per-shape count). The resolver and the tuning
// table's shape entries both build it here.
inline W4A16GemmConfig warp_specialized_tile(W4A16GemmConfig c, bool nf4, int int4_stages = 6) {
  c.engine = W4A16Engine::kWgmmaWs;
  c.block_m = kW4A16WgmmaWsBlockM;
  c.block_n = 256;
  c.stages = nf4 ? 5 : int4_stages;
  return c;
}

struct W4A16PackConfig {
  bool unpack = false;                         // packed -> T instead of checkpoint -> packed
  Int4SourceFormat source_format = kInt4Compressed;
  NF4Element element = kNF4BF16;               // unpack / zero points: T (the packed scales' type)
  bool zero_point = false;                     // the zero-point kinds' {scale, bias} entries
  int group = kW4A16GroupSize;                 // k per scale: 32, or 128 (the group-128 kinds)

  KernelDescriptor descriptor(const Arch& arch) const;
  static W4A16PackConfig from(const KernelDescriptor& descriptor);
  KernelSource source() const;
};

// A kernel of kernels_src/w4a16_pack.cuh (the pack and unpack kernels of both weight kinds):
// `body` called with `args_type`, kW4A16PackThreads threads, no shared memory.
KernelSource w4a16_pack_kernel_source(std::string name, const std::string& args_type, const std::string& body);

// Why a call is beyond what config `c`'s kernel can address, or "" when it is not. The WGMMA
// kernels keep some offsets in 32 bits (registers, at their 128-register cap): an activation
// row's offset in 16-byte units where the CTA gathers rows itself (64 GiB of A), one expert's
// scale offset in bytes in the one-role kernel (4 GiB of scales per expert), and the
// warp-specialized kernel's tile counter in int (it steps by the grid, sm_count CTAs, past the
// last tile). Such a call would read the wrong rows without an error. `tiles`: the call's tiles
// (CTAs before the warp-specialized kernel's clamp to one per SM).
std::string w4a16_offset_limit_error(const W4A16GemmConfig& c, const W4A16Args& args, long long tiles, int sm_count);

// Whether a masked call's grid follows the hint (w4a16_masked_tiles at args.expected_m) rather
// than the buffer: where the hint asks for fewer tiles than the buffer holds and the config's
// kernel can loop over them. Otherwise the launch zeroes expected_m and the grid covers the
// buffer. An mma.sync config then runs its masked_loop form.
inline bool w4a16_masked_grid_follows_hint(const W4A16GemmConfig& c, const W4A16Args& args) {
  return args.mode == kW4A16Masked && c.takes_masked_loop() &&
         w4a16_masked_compact(c.block_m, args.num_groups, args.max_m, args.expected_m);
}

// The config as a masked call with these arguments runs it (masked_loop where the mma.sync grid
// follows the hint).
inline W4A16GemmConfig w4a16_config_for_masked_grid(W4A16GemmConfig c, const W4A16Args& args) {
  c.masked_loop = !c.wgmma() && w4a16_masked_grid_follows_hint(c, args);
  return c;
}

}  // namespace chord
