#include "jit/families/w4a16.hpp"

#include <climits>

#include <fmt/format.h>

#include "core/error.hpp"

namespace chord {
namespace {
// A descriptor read back from elsewhere gets the checks descriptor() made when it was built.
KernelSource generate_gemm(const KernelDescriptor& d) {
  const W4A16GemmConfig c = W4A16GemmConfig::from(d);
  // params[11]'s bits past the group-sums form, the n-block run and the masked loop name nothing.
  if (d.params[11] & ~0x1ff) {
    fail(CHORD_ERROR_INVALID_ARGUMENT, "W4A16 kernel descriptor is invalid: params[11] = {}", d.params[11]);
  }
  if (const char* why = c.error()) fail(CHORD_ERROR_INVALID_ARGUMENT, "W4A16 kernel descriptor is invalid: {}", why);
  return c.source();
}
KernelSource generate_pack(const KernelDescriptor& d) { return W4A16PackConfig::from(d).source(); }
const bool kRegistered = register_source_generator(KernelFamily::kW4A16Gemm, generate_gemm) &&
                         register_source_generator(KernelFamily::kW4A16Pack, generate_pack) &&
                         register_source_generator(KernelFamily::kW4A16Unpack, generate_pack);
}  // namespace

const char* w4a16_weight_suffix(W4A16WeightKind weight) {
  switch (weight) {
    case kW4A16WeightInt4: return "";
    case kW4A16WeightNF4: return "_nf4";
    case kW4A16WeightNF4Fp16: return "_nf4f16";
    case kW4A16WeightInt4Fp16: return "_f16";
    case kW4A16WeightInt4Zp: return "_zp";
    case kW4A16WeightInt4ZpFp16: return "_zpf16";
    case kW4A16WeightInt4G128: return "_g128";
    case kW4A16WeightInt4G128Fp16: return "_g128f16";
    case kW4A16WeightInt4ZpG128: return "_zpg128";
    case kW4A16WeightInt4ZpG128Fp16: return "_zpg128f16";
  }
  return "_unknown";
}

const char* w4a16_mode_name(W4A16Mode mode) {
  switch (mode) {
    case kW4A16Contiguous: return "contiguous";
    case kW4A16Masked: return "masked";
    case kW4A16Offsets: return "offsets";
    case kW4A16Indexed: return "indexed";
  }
  return "unknown";
}

KernelDescriptor W4A16GemmConfig::descriptor(const Arch& arch) const {
  if (const char* why = error()) {
    fail(CHORD_ERROR_INVALID_ARGUMENT, "W4A16 {} config bm={} bn={} bk={} stages={} warps={}x{} is invalid: {}",
         w4a16_engine_name(engine), block_m, block_n, block_k, stages, warps_m, warps_n, why);
  }
  if (split_k > 1 && arch.sm() < 90) {
    fail(CHORD_ERROR_INVALID_ARGUMENT, "W4A16 split-K {} needs thread block clusters (sm_90+); {} has none", split_k,
         arch.name());
  }
  KernelDescriptor d;
  d.family = KernelFamily::kW4A16Gemm;
  d.arch = arch;
  // params[10] is the k schedule: 0 whole tiles, 2 / 4 / 8 cluster split-K. params[11] is the
  // group-sums form plus 16 x (n_run - 1) plus 256 x masked_loop: 0 with the default form, no
  // n-block run and no masked tile loop. So those descriptors (and cache keys) are unchanged.
  const int k_schedule = split_k > 1 ? split_k : 0;
  d.params = {mode,       block_m, block_n, block_k,    stages,
              warps_m,    warps_n, static_cast<int>(engine), warpgroups, weight,
              k_schedule, group_sums + 16 * (n_run - 1) + 256 * (masked_loop ? 1 : 0)};
  return d;
}

W4A16GemmConfig W4A16GemmConfig::from(const KernelDescriptor& d) {
  W4A16GemmConfig c;
  c.mode = static_cast<W4A16Mode>(d.params[0]);
  c.block_m = d.params[1];
  c.block_n = d.params[2];
  c.block_k = d.params[3];
  c.stages = d.params[4];
  c.warps_m = d.params[5];
  c.warps_n = d.params[6];
  c.engine = static_cast<W4A16Engine>(d.params[7]);
  c.warpgroups = d.params[8];
  c.weight = static_cast<W4A16WeightKind>(d.params[9]);
  // Any other k schedule stays as it is, for error() to refuse.
  c.split_k = d.params[10] == 0 ? 1 : d.params[10];
  c.group_sums = d.params[11] & 15;
  c.n_run = ((d.params[11] >> 4) & 15) + 1;
  c.masked_loop = ((d.params[11] >> 8) & 1) != 0;
  return c;
}

KernelSource W4A16GemmConfig::source() const {
  KernelSource s;
  if (warp_specialized()) {
    // One CTA per SM: 384 threads share 168 registers each (setmaxnreg moves them to the
    // consumers); docs/kernels.md, "WGMMA prefill, warp-specialized".
    // The 128-token tiles keep the names (and texts) they had before the kernel took other tile
    // heights.
    const bool tall = block_m == kW4A16WgmmaWsBlockM;
    s.name = tall ? fmt::format("w4a16_wgmma_ws_{}_n{}s{}", w4a16_mode_name(mode), block_n, stages)
                  : fmt::format("w4a16_wgmma_ws_{}_m{}n{}s{}", w4a16_mode_name(mode), block_m, block_n, stages);
    s.name += w4a16_weight_suffix(weight);
    const std::string block_m_arg = tall ? "" : fmt::format(", {}", block_m);
    s.text = entry_point_source("w4a16_wgmma_ws.cuh", fmt::format("{}, {}", threads(), launch_min_blocks()),
                                "W4A16Args",
                                fmt::format("chord::w4a16_wgmma_ws_body<{}, {}, {}, {}{}>", static_cast<int>(mode),
                                            block_n, stages, static_cast<int>(weight), block_m_arg));
    s.text += kernel_meta_definition(
        KernelMeta{static_cast<uint32_t>(threads()), static_cast<uint32_t>(smem_bytes()), 1});
    return s;
  }
  if (wgmma()) {
    s.name = fmt::format("w4a16_wgmma_{}_m{}n{}wg{}s{}", w4a16_mode_name(mode), block_m, block_n, warpgroups, stages);
    // As for mma.sync: INT4 (BF16) keeps its original text, the other kinds name the weight
    // kind after the defaulted INFLIGHT.
    // Two m64 weight tiles per warpgroup (BLOCK_N 256 on 2 warpgroups) retire each k block's
    // wgmma group before the next decode: with one group in flight (two fragment arrays)
    // NVRTC's ptxas serializes their wgmma at 128 registers (C7511); with none it does not.
    // Tiles of up to 32 tokens have few enough accumulators to keep one group in flight.
    const int inflight = warpgroups == 2 && block_n > 128 && block_m > 32 ? 0 : 1;
    std::string weight_args = inflight == 1 ? "" : ", 0";
    if (inflight == 0) s.name += "_infl0";
    if (weight != kW4A16WeightInt4) {
      s.name += w4a16_weight_suffix(weight);
      weight_args = fmt::format(", {}, {}", inflight, static_cast<int>(weight));
    }
    const int min_blocks = launch_min_blocks();
    s.text = entry_point_source("w4a16_wgmma.cuh", fmt::format("{}, {}", threads(), min_blocks), "W4A16Args",
                                fmt::format("chord::w4a16_wgmma_body<{}, {}, {}, {}, {}{}>", static_cast<int>(mode),
                                            block_m, block_n, warpgroups, stages, weight_args));
    s.text += kernel_meta_definition(
        KernelMeta{static_cast<uint32_t>(threads()), static_cast<uint32_t>(smem_bytes()), 1});
    return s;
  }
  s.name = fmt::format("w4a16_{}_m{}n{}k{}s{}w{}x{}", w4a16_mode_name(mode), block_m, block_n, block_k, stages, warps_m,
                       warps_n);
  // INT4 (BF16) instantiations keep their original text (and so their cache entries); the other
  // kinds name the weight kind after the defaulted main-loop path. Likewise split-K, a group-sums
  // variant other than the default, an n-block run and a masked tile loop: each spells out the
  // defaulted arguments before its own (a run the group-sums form too, whose name suffix shows
  // only when not 0; a masked loop the run too).
  std::string weight_args;
  const bool run = n_run > 1 || masked_loop;
  if (weight != kW4A16WeightInt4 || split_k > 1 || group_sums != 0 || run) {
    s.name += w4a16_weight_suffix(weight);
    weight_args = fmt::format(", chord::w4a16_default_path({}, {}, {}), {}", block_m, warps_m, stages,
                              static_cast<int>(weight));
  }
  if (split_k > 1) {  // launched as clusters of split_k CTAs (KernelMeta.cluster_size)
    s.name += fmt::format("_sk{}", split_k);
  }
  if (split_k > 1 || group_sums != 0 || run) weight_args += fmt::format(", {}", split_k);
  if (group_sums != 0 || run) {
    if (group_sums != 0) s.name += fmt::format("_gs{}", group_sums);
    weight_args += fmt::format(", {}", group_sums);
  }
  if (run) {  // n_run n blocks per CTA (w4a16_grid's n_run)
    if (n_run > 1) s.name += fmt::format("_nr{}", n_run);
    weight_args += fmt::format(", {}", n_run);
  }
  if (masked_loop) {  // the CTAs take the masked compact schedule's tiles in turn
    s.name += "_ml";
    weight_args += ", 1";
  }
  // 256-thread (prefill) tiles: cap registers at 128 for 2 CTAs per SM (H200, kernel_check:
  // contiguous EP8 512 rows/expert BM128 3718 us vs 4603 us at 1 CTA/SM); smaller CTAs
  // already fit several per SM.
  const std::string bounds = launch_min_blocks() > 0 ? fmt::format("{}, {}", threads(), launch_min_blocks())
                                                     : std::to_string(threads());
  s.text = entry_point_source("w4a16_gemm.cuh", bounds, "W4A16Args",
                              fmt::format("chord::w4a16_gemm_body<{}, {}, {}, {}, {}, {}, {}{}>", static_cast<int>(mode),
                                          block_m, block_n, block_k, stages, warps_m, warps_n, weight_args));
  s.text += kernel_meta_definition(KernelMeta{static_cast<uint32_t>(threads()), static_cast<uint32_t>(smem_bytes()),
                                              static_cast<uint32_t>(split_k)});
  return s;
}

KernelDescriptor W4A16PackConfig::descriptor(const Arch& arch) const {
  KernelDescriptor d;
  d.family = unpack ? KernelFamily::kW4A16Unpack : KernelFamily::kW4A16Pack;
  d.arch = arch;
  d.params[0] = unpack ? 0 : source_format;
  // 0 (BF16, no zero point) leaves the existing descriptors unchanged.
  d.params[1] = unpack || zero_point ? element : 0;
  d.params[2] = zero_point ? 1 : 0;
  d.params[3] = group == kW4A16Group128 ? 1 : 0;  // 0 for group 32
  return d;
}

W4A16PackConfig W4A16PackConfig::from(const KernelDescriptor& d) {
  W4A16PackConfig c;
  c.unpack = d.family == KernelFamily::kW4A16Unpack;
  c.source_format = static_cast<Int4SourceFormat>(d.params[0]);
  c.element = static_cast<NF4Element>(d.params[1]);
  c.zero_point = d.params[2] != 0;
  c.group = d.params[3] != 0 ? kW4A16Group128 : kW4A16GroupSize;
  return c;
}

KernelSource w4a16_pack_kernel_source(std::string name, const std::string& args_type, const std::string& body) {
  KernelSource s;
  s.name = std::move(name);
  s.text = entry_point_source("w4a16_pack.cuh", std::to_string(kW4A16PackThreads), args_type, body);
  s.text += kernel_meta_definition(KernelMeta{static_cast<uint32_t>(kW4A16PackThreads), 0, 1});
  return s;
}

KernelSource W4A16PackConfig::source() const {
  if (group == kW4A16Group128) {
    // Group 128: the group-32 bodies with GROUP = 128. The pack of symmetric scales copies
    // 16-bit patterns (one kernel for both types), the others name their element type.
    const char* type = element == kNF4FP16 ? "_fp16" : "";
    const char* form = source_format == kInt4Codes ? "codes" : "compressed";
    const int elem = static_cast<int>(element);
    if (unpack) {
      return w4a16_pack_kernel_source(
          fmt::format("w4a16_unpack{}_g128{}", zero_point ? "_zp" : "", type), "W4A16UnpackArgs",
          fmt::format("chord::w4a16_unpack{}_body<{}, 128>", zero_point ? "_zp" : "", elem));
    }
    if (zero_point) {
      return w4a16_pack_kernel_source(
          fmt::format("w4a16_pack_{}_zp_g128{}", form, type), "W4A16PackZpArgs",
          fmt::format("chord::w4a16_pack_zp_body<{}, {}, 128>", static_cast<int>(source_format), elem));
    }
    return w4a16_pack_kernel_source(fmt::format("w4a16_pack_{}_g128", form), "W4A16PackArgs",
                                    fmt::format("chord::w4a16_pack_body<{}, 128>", static_cast<int>(source_format)));
  }
  if (zero_point) {
    const char* type = element == kNF4FP16 ? "_fp16" : "";
    if (unpack) {
      return w4a16_pack_kernel_source(fmt::format("w4a16_unpack_zp{}", type), "W4A16UnpackArgs",
                                      fmt::format("chord::w4a16_unpack_zp_body<{}>", static_cast<int>(element)));
    }
    return w4a16_pack_kernel_source(
        fmt::format("w4a16_pack_{}_zp{}", source_format == kInt4Codes ? "codes" : "compressed", type),
        "W4A16PackZpArgs",
        fmt::format("chord::w4a16_pack_zp_body<{}, {}>", static_cast<int>(source_format), static_cast<int>(element)));
  }
  if (unpack) {
    // The BF16 kernel keeps its original text; FP16 names its element type.
    return element == kNF4FP16
               ? w4a16_pack_kernel_source("w4a16_unpack_fp16", "W4A16UnpackArgs", "chord::w4a16_unpack_body<1>")
               : w4a16_pack_kernel_source("w4a16_unpack", "W4A16UnpackArgs", "chord::w4a16_unpack_body");
  }
  return w4a16_pack_kernel_source(fmt::format("w4a16_pack_{}", source_format == kInt4Codes ? "codes" : "compressed"),
                                  "W4A16PackArgs",
                                  fmt::format("chord::w4a16_pack_body<{}>", static_cast<int>(source_format)));
}

std::string w4a16_offset_limit_error(const W4A16GemmConfig& c, const W4A16Args& args, long long tiles, int sm_count) {
  if (!c.wgmma()) return "";
  const char* way_out = "split the call, or run it on mma.sync (CHORD_W4A16_ENGINE=portable)";
  if (!c.warp_specialized() || !w4a16_tma_activations(args.mode)) {
    const long long a_rows = w4a16_a_total_rows(args.mode, args.a_rows, args.num_groups, args.max_m);
    if (a_rows * args.lda > (1LL << 35)) {
      return fmt::format("the activations span {} rows of {} elements: the WGMMA kernels address at most 64 GiB of "
                         "them; {}", a_rows, args.lda, way_out);
    }
  }
  if (!c.warp_specialized()) {
    // One row of N entries per scale group: 2 bytes, 4 for NF4's fp32 absmax or a zero-point pair.
    const long long entry = c.nf4() || c.zero_point() ? 4 : 2;
    const long long bytes = (long long)(args.k / w4a16_scale_group(c.weight)) * args.n * entry;
    if (bytes >= (1LL << 32)) {
      return fmt::format("one expert's scales take {} bytes: the WGMMA kernel addresses at most 4 GiB of them; {}",
                         bytes, way_out);
    }
  } else if (tiles > INT_MAX - (long long)sm_count) {
    return fmt::format("the call has {} tiles: the warp-specialized WGMMA kernel counts at most {}; {}", tiles,
                       INT_MAX - (long long)sm_count, way_out);
  }
  return "";
}

}  // namespace chord
