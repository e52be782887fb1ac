// NVRTC compiles every kernel family for every arch on a machine without a GPU, and the
// cubin says which arch it is for and carries its launch metadata.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "core/arch.hpp"
#include "core/cubin_info.hpp"
#include "core/error.hpp"
#include "jit/compiler.hpp"
#include "jit/families/int4_dequant.hpp"
#include "jit/families/w4a16.hpp"
#include "jit/kernel_source.hpp"
#include "precompile/kernel_sets.hpp"
#include "runtime/runtime.hpp"
#include "tuning_tables/w4a16_resolver.hpp"

namespace {

chord::CompiledKernel compile_dequant(const std::string& arch_name, chord::Int4SourceFormat format) {
  chord::Int4DequantConfig config;
  config.format = format;
  return *chord::JitRuntime::global().compile(config.descriptor(chord::parse_arch(arch_name)));
}

// Compiles for sm_90a without the cache, so that the NVRTC log exists, and fails the test if
// ptxas serialized the wgmma (C7510-C7520: correct, only much slower; nothing but the log
// shows it). Returns the cubin.
std::vector<char> compile_sm90a_unserialized(const std::string& name, const std::string& text,
                                             const std::vector<std::string>& options) {
  chord::CompileRequest request{name, text, chord::parse_arch("sm_90a"), options};
  std::string log;
  std::vector<char> cubin = chord::compile_to_cubin(request, "/tmp", &log);
  INFO(name << ": " << log);
  CHECK(log.find("are serialized") == std::string::npos);
  return cubin;
}

void check_arch(const std::string& arch_name) {
  for (auto format : {chord::kInt4Codes, chord::kInt4Compressed}) {
    auto kernel = compile_dequant(arch_name, format);
    chord::Arch arch = chord::parse_arch(arch_name);
    CHECK(kernel.info.sm == arch.sm());
    CHECK(kernel.info.arch == arch_name);
    REQUIRE(kernel.info.has_meta);
    CHECK(kernel.info.meta.threads == 256);
    CHECK(kernel.info.meta.cluster_size == 1);
  }
}

}  // namespace

TEST_CASE("compile: dequant kernels for sm_90a, ELF reports sm_90a", "[compile]") { check_arch("sm_90a"); }
TEST_CASE("compile: dequant kernels for sm_100a, ELF reports sm_100a", "[compile]") { check_arch("sm_100a"); }
TEST_CASE("compile: dequant kernels for sm_80, ELF reports sm_80", "[compile]") { check_arch("sm_80"); }
TEST_CASE("compile: dequant kernels for sm_103a and sm_120a", "[compile]") {
  check_arch("sm_103a");
  check_arch("sm_120a");
}

namespace {

// One test per arch, so that CTest runs them side by side (the whole set is most of the CPU
// tests' time on CI's two cores).
void check_kernel_set(const std::string& arch) {
  const auto descriptors = chord::kernel_set_descriptors("all", chord::parse_arch(arch));
  CHECK(descriptors.size() >= 10);  // dequant, pack / unpack, routing check, NF4 and the GEMM tiles
  for (const auto& d : descriptors) {
    auto kernel = chord::JitRuntime::global().compile(d);
    CHECK(kernel->info.arch == arch);
    CHECK(kernel->info.has_meta);
    // The register count ptxas recorded; 256-thread tiles launch-bounded to 2 CTAs per SM
    // (W4A16GemmConfig::launch_min_blocks) keep within 128 registers.
    CHECK(kernel->info.registers > 0);
    CHECK(kernel->info.registers <= 255);
    int min_blocks = kernel->info.meta.threads == 256 ? 2 : 0;
    if (d.family == chord::KernelFamily::kW4A16Gemm) min_blocks = chord::W4A16GemmConfig::from(d).launch_min_blocks();
    if (kernel->info.meta.threads == 256 && min_blocks == 2) CHECK(kernel->info.registers <= 128);
    // Split-K kernels launch as clusters of split_k CTAs: the size comes from the cubin.
    if (d.family == chord::KernelFamily::kW4A16Gemm) {
      CHECK(kernel->info.meta.cluster_size == static_cast<uint32_t>(chord::W4A16GemmConfig::from(d).split_k));
    }
  }
}

const char* const kKernelSetArchs[] = {"sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a", "sm_103a", "sm_120a"};

}  // namespace

TEST_CASE("compile: the kernel-set compile tests below cover every supported arch", "[compile]") {
  std::vector<std::string> supported;
  for (const char* const* arch = chord::supported_arch_names(); *arch != nullptr; ++arch) supported.push_back(*arch);
  CHECK(supported == std::vector<std::string>(std::begin(kKernelSetArchs), std::end(kKernelSetArchs)));
}
TEST_CASE("compile: every kernel-set kernel compiles for sm_80", "[compile]") { check_kernel_set("sm_80"); }
TEST_CASE("compile: every kernel-set kernel compiles for sm_86", "[compile]") { check_kernel_set("sm_86"); }
TEST_CASE("compile: every kernel-set kernel compiles for sm_89", "[compile]") { check_kernel_set("sm_89"); }
TEST_CASE("compile: every kernel-set kernel compiles for sm_90a", "[compile]") { check_kernel_set("sm_90a"); }
TEST_CASE("compile: every kernel-set kernel compiles for sm_100a", "[compile]") { check_kernel_set("sm_100a"); }
TEST_CASE("compile: every kernel-set kernel compiles for sm_103a", "[compile]") { check_kernel_set("sm_103a"); }
TEST_CASE("compile: every kernel-set kernel compiles for sm_120a", "[compile]") { check_kernel_set("sm_120a"); }

TEST_CASE("compile: ptxas serializes no wgmma of the sm_90a kernels the tuning tables run", "[compile]") {
  int checked = 0;
  for (const auto& d : chord::kernel_set_descriptors("all", chord::parse_arch("sm_90a"))) {
    if (d.family != chord::KernelFamily::kW4A16Gemm || !chord::W4A16GemmConfig::from(d).wgmma()) continue;
    const chord::KernelSource source = chord::generate_kernel_source(d);
    compile_sm90a_unserialized(source.name, source.text, source.options);
    ++checked;
  }
  CHECK(checked >= 4);  // one-role INT4 / NF4 tiles, the warp-specialized NF4 tiles

  // Control: NVRTC's log carries the note (an accumulator touched while its wgmma group is in
  // flight is serialized, C7515), so the check above can fail.
  const std::string control = R"(#include "w4a16_wgmma.cuh"
extern "C" __global__ void __launch_bounds__(128, 1) chord_entry(float* out, const unsigned int* in, int n) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using namespace chord::ptx;
  __shared__ __align__(1024) unsigned char tile[128 * 128];
  float acc[64];
  for (int r = 0; r < 64; ++r) acc[r] = 0.f;
  const unsigned int a[4] = {in[threadIdx.x], in[threadIdx.x + 128], in[threadIdx.x + 256], in[threadIdx.x + 384]};
  const unsigned long long desc = smem_desc_sw128(smem_addr(tile));
  for (int i = 0; i < n; ++i) {
    wgmma_fence();
    Wgmma<128>::mma<false>(acc, a, desc);
    wgmma_commit();
    asm volatile("" : "+f"(acc[0]));
    wgmma_wait<1>();
  }
  wgmma_wait<0>();
  for (int r = 0; r < 64; ++r) out[threadIdx.x * 64 + r] = acc[r];
#endif
}
)";
  chord::CompileRequest request{"wgmma_serialized_control", control, chord::parse_arch("sm_90a"), {}};
  std::string log;
  chord::compile_to_cubin(request, "/tmp", &log);
  INFO(log);
  CHECK(log.find("are serialized") != std::string::npos);
}

TEST_CASE("compile: ptxas serializes no wgmma of any warp-specialized build (weight x mode x BLOCK_N x stages)",
          "[compile]") {
  // The warp-specialized consumers sit at the edge of ptxas's wgmma register allocation: small
  // code moves have serialized some (weight, mode, BLOCK_N, stages) builds and not others
  // (C7511). The tables run only a few of them; kernel_check and forced configs reach the rest.
  int checked = 0;
  for (auto weight : {chord::kW4A16WeightInt4, chord::kW4A16WeightNF4, chord::kW4A16WeightNF4Fp16,
                      chord::kW4A16WeightInt4Fp16, chord::kW4A16WeightInt4Zp, chord::kW4A16WeightInt4ZpFp16,
                      chord::kW4A16WeightInt4G128, chord::kW4A16WeightInt4G128Fp16, chord::kW4A16WeightInt4ZpG128,
                      chord::kW4A16WeightInt4ZpG128Fp16}) {
    for (auto mode : {chord::kW4A16Contiguous, chord::kW4A16Masked, chord::kW4A16Offsets, chord::kW4A16Indexed}) {
      for (int block_n : {128, 256}) {
        for (int stages : {5, 6}) {
          chord::W4A16GemmConfig c;
          c.engine = chord::W4A16Engine::kWgmmaWs;
          c.mode = mode;
          c.block_m = chord::kW4A16WgmmaWsBlockM;
          c.block_n = block_n;
          c.block_k = 64;
          c.stages = stages;
          c.weight = weight;
          REQUIRE(c.error() == nullptr);
          const chord::KernelSource source = c.source();
          compile_sm90a_unserialized(source.name, source.text, source.options);
          ++checked;
        }
      }
    }
  }
  CHECK(checked == 160);
}

// A mma.sync config of the compile matrices below.
static chord::W4A16GemmConfig mma_sync_config(chord::W4A16WeightKind weight, chord::W4A16Mode mode, int bm, int bn, int bk,
                                              int stages, int wm, int wn, int split_k) {
  chord::W4A16GemmConfig c;
  c.mode = mode;
  c.block_m = bm;
  c.block_n = bn;
  c.block_k = bk;
  c.stages = stages;
  c.warps_m = wm;
  c.warps_n = wn;
  c.split_k = split_k;
  c.weight = weight;
  return c;
}

// The mma.sync tiles of the zero-point and group-128 compile matrices: every mode on the
// 8-token decode tile, and in offsets mode the direct path (group sums and dequantizing), the
// 16-token tile (the narrow path) and split-K (sm_90+).
static std::vector<chord::W4A16GemmConfig> mma_decode_matrix(chord::W4A16WeightKind weight, const chord::Arch& arch) {
  std::vector<chord::W4A16GemmConfig> configs;
  auto mma = [&](chord::W4A16Mode mode, int bm, int bn, int bk, int stages, int split_k = 1) {
    return mma_sync_config(weight, mode, bm, bn, bk, stages, 1, 4, split_k);
  };
  for (auto mode : {chord::kW4A16Contiguous, chord::kW4A16Masked, chord::kW4A16Offsets, chord::kW4A16Indexed}) {
    configs.push_back(mma(mode, 8, 64, 256, 4));
  }
  configs.push_back(mma(chord::kW4A16Offsets, 8, 64, 256, 2));    // direct path, group sums
  configs.push_back(mma(chord::kW4A16Offsets, 16, 64, 256, 2));   // direct path, dequantized
  configs.push_back(mma(chord::kW4A16Offsets, 16, 128, 128, 4));  // 16 tokens, narrow path
  if (arch.sm() >= 90) configs.push_back(mma(chord::kW4A16Offsets, 8, 64, 256, 4, 4));
  return configs;
}

// The pack kernels of one INT4 packed form: packing from one code per byte and from the
// compressed-tensors words, and the unpack kernel (element: the caller's).
static std::vector<chord::W4A16PackConfig> pack_kernels(bool zero_point, int group) {
  std::vector<chord::W4A16PackConfig> kernels;
  for (bool unpack : {false, true}) {
    for (auto src : {chord::kInt4Codes, chord::kInt4Compressed}) {
      if (unpack && src == chord::kInt4Compressed) continue;
      chord::W4A16PackConfig pack;
      pack.unpack = unpack;
      pack.source_format = src;
      pack.zero_point = zero_point;
      pack.group = group;
      kernels.push_back(pack);
    }
  }
  return kernels;
}

// The one-role WGMMA tiles of the zero-point and group-128 compile matrices: two warpgroups,
// BN128 and BN256, contiguous and indexed.
static std::vector<chord::W4A16GemmConfig> one_role_tiles(chord::W4A16WeightKind weight) {
  std::vector<chord::W4A16GemmConfig> tiles;
  for (int block_n : {128, 256}) {
    for (auto mode : {chord::kW4A16Contiguous, chord::kW4A16Indexed}) {
      chord::W4A16GemmConfig w =
          mma_sync_config(weight, mode, block_n == 256 ? 64 : 128, block_n, chord::kW4A16WgmmaBlockK, 4, 1, 4, 1);
      w.engine = chord::W4A16Engine::kWgmma;
      w.warpgroups = 2;
      tiles.push_back(w);
    }
  }
  return tiles;
}

// Compiles a one-role WGMMA tile: it traps off sm_90a but compiles; on sm_90a no wgmma may be
// serialized.
static void compile_one_role(const chord::W4A16GemmConfig& w, const chord::Arch& arch) {
  REQUIRE(w.error() == nullptr);
  const chord::KernelSource source = w.source();
  INFO(source.name);
  if (arch.sm() == 90) {
    compile_sm90a_unserialized(source.name, source.text, source.options);
  } else {
    CHECK(chord::JitRuntime::global().compile(w.descriptor(arch))->info.arch == arch.name());
  }
}

TEST_CASE("compile: INT4 FP16 (fp16 scales, activations, outputs) builds every engine and mode on every arch",
          "[compile]") {
  // The kernel sets hold no INT4 FP16 kernels: this is their compile matrix. Per arch, every mode
  // on the 8-token decode tile (where BF16 takes the fp32 group sums and FP16 dequantizes), and in
  // offsets mode the direct path, the 16-token tile, a prefill tile, split-K (sm_90+), the
  // one-role WGMMA tile (it traps off sm_90a but compiles) and the unpack kernel. The
  // warp-specialized builds are in the test above.
  for (const char* arch_name : {"sm_80", "sm_90a", "sm_100a"}) {
    const chord::Arch arch = chord::parse_arch(arch_name);
    std::vector<chord::W4A16GemmConfig> configs;
    auto mma = [](chord::W4A16Mode mode, int bm, int bn, int bk, int stages, int wm, int wn, int split_k = 1) {
      return mma_sync_config(chord::kW4A16WeightInt4Fp16, mode, bm, bn, bk, stages, wm, wn, split_k);
    };
    for (auto mode : {chord::kW4A16Contiguous, chord::kW4A16Masked, chord::kW4A16Offsets, chord::kW4A16Indexed}) {
      configs.push_back(mma(mode, 8, 64, 256, 4, 1, 4));
    }
    configs.push_back(mma(chord::kW4A16Offsets, 8, 64, 256, 2, 1, 4));    // direct path
    configs.push_back(mma(chord::kW4A16Offsets, 16, 128, 128, 4, 1, 4));  // 16 tokens, one warp along M
    configs.push_back(mma(chord::kW4A16Offsets, 64, 128, 64, 4, 2, 4));   // prefill
    if (arch.sm() >= 90) configs.push_back(mma(chord::kW4A16Offsets, 8, 64, 256, 4, 1, 4, 4));
    chord::W4A16GemmConfig w = mma(chord::kW4A16Indexed, 128, 128, chord::kW4A16WgmmaBlockK, 5, 1, 4);
    w.engine = chord::W4A16Engine::kWgmma;
    w.warpgroups = 2;
    configs.push_back(w);
    for (const chord::W4A16GemmConfig& c : configs) {
      REQUIRE(c.error() == nullptr);
      CHECK(c.smem_bytes() == [&] {  // no pair table: INT4's shared memory
        chord::W4A16GemmConfig bf16 = c;
        bf16.weight = chord::kW4A16WeightInt4;
        return bf16.smem_bytes();
      }());
      const chord::KernelDescriptor d = c.descriptor(arch);
      CHECK(chord::W4A16GemmConfig::from(d).weight == chord::kW4A16WeightInt4Fp16);
      const chord::KernelSource source = c.source();
      INFO(source.name);
      CHECK(source.name.find("_f16") != std::string::npos);
      auto kernel = chord::JitRuntime::global().compile(d);
      CHECK(kernel->info.arch == arch_name);
      if (kernel->info.meta.threads == 256 && c.launch_min_blocks() == 2) CHECK(kernel->info.registers <= 128);
    }
    chord::W4A16PackConfig unpack;
    unpack.unpack = true;
    unpack.element = chord::kNF4FP16;
    const chord::KernelDescriptor d = unpack.descriptor(arch);
    CHECK(chord::W4A16PackConfig::from(d).element == chord::kNF4FP16);
    CHECK(unpack.source().name == "w4a16_unpack_fp16");
    CHECK(chord::JitRuntime::global().compile(d)->info.arch == arch_name);
  }
}

TEST_CASE("compile: INT4 with zero points (BF16 and FP16) builds every engine, tile and mode on every arch",
          "[compile]") {
  // The kernel sets hold no zero-point kernels: this is their compile matrix. Per arch and
  // element type, every mode on the 8-token decode tile (BF16: the fp32 group sums with the
  // per-row bias seed, int4_group_mma_zp; FP16: dequantized), and in offsets mode the direct
  // path (both the group-sum and the dequantizing decode), the 16-token tile (the narrow
  // path), a prefill tile, split-K (sm_90+), the one-role WGMMA tiles, and the pack / unpack
  // kernels. The warp-specialized builds are in the ptxas test above.
  for (const char* arch_name : {"sm_80", "sm_90a", "sm_100a"}) {
    const chord::Arch arch = chord::parse_arch(arch_name);
    for (auto weight : {chord::kW4A16WeightInt4Zp, chord::kW4A16WeightInt4ZpFp16}) {
      auto mma = [&](chord::W4A16Mode mode, int bm, int bn, int bk, int stages, int wm, int wn, int split_k = 1) {
        return mma_sync_config(weight, mode, bm, bn, bk, stages, wm, wn, split_k);
      };
      std::vector<chord::W4A16GemmConfig> configs = mma_decode_matrix(weight, arch);
      configs.push_back(mma(chord::kW4A16Masked, 128, 128, 64, 4, 2, 4));  // prefill
      for (const chord::W4A16GemmConfig& c : configs) {
        REQUIRE(c.error() == nullptr);
        chord::W4A16GemmConfig plain = c;
        plain.weight = chord::kW4A16WeightInt4;
        // Twice the scale tile per stage: BLOCK_K / 32 x BLOCK_N x 2 more bytes.
        if (plain.smem_bytes() > chord::w4a16_smem_header_bytes(c.block_m) +
                                     chord::w4a16_smem_epilogue_bytes(c.block_m, c.block_n)) {
          CHECK(c.smem_bytes() == plain.smem_bytes() + c.stages * (c.block_k / 32) * c.block_n * 2);
        }
        const chord::KernelDescriptor d = c.descriptor(arch);
        CHECK(chord::W4A16GemmConfig::from(d).weight == weight);
        const chord::KernelSource source = c.source();
        INFO(source.name);
        CHECK(source.name.find(weight == chord::kW4A16WeightInt4Zp ? "_zp" : "_zpf16") != std::string::npos);
        auto kernel = chord::JitRuntime::global().compile(d);
        CHECK(kernel->info.arch == arch_name);
        if (kernel->info.meta.threads == 256 && c.launch_min_blocks() == 2) CHECK(kernel->info.registers <= 128);
      }
      // The one-role WGMMA tiles (the warp-specialized builds are in the ptxas test above).
      for (const chord::W4A16GemmConfig& w : one_role_tiles(weight)) compile_one_role(w, arch);

      const bool fp16 = weight == chord::kW4A16WeightInt4ZpFp16;
      for (chord::W4A16PackConfig pack : pack_kernels(true, 32)) {
        pack.element = fp16 ? chord::kNF4FP16 : chord::kNF4BF16;
        const chord::KernelDescriptor d = pack.descriptor(arch);
        const chord::W4A16PackConfig back = chord::W4A16PackConfig::from(d);
        CHECK(back.zero_point);
        CHECK(back.element == pack.element);
        INFO(pack.source().name);
        CHECK(pack.source().name.find("_zp") != std::string::npos);
        CHECK(chord::JitRuntime::global().compile(d)->info.arch == arch_name);
      }
    }
  }
}

// Compiles `c` for `arch` without the cache with ptxas's report; returns the spill store bytes
// (and checks the cubin's arch).
// Spill bytes a masked_loop tile may add to its one-tile form's: it keeps the loop's count and
// position across the call that runs its later tiles (w4a16_gemm_next_tile), saved and restored
// outside the main loop (nvdisasm: 3 STL, 2 LDL, around the call and before the first k block).
static long loop_saves(const chord::W4A16GemmConfig& c) { return c.masked_loop ? 8 : 0; }

static long spill_stores(const chord::W4A16GemmConfig& c, const chord::Arch& arch) {
  const chord::KernelSource source = c.source();
  std::vector<std::string> options = source.options;
  options.push_back("--ptxas-options=-v");
  chord::CompileRequest request{source.name, source.text, arch, options};
  std::string log;
  const std::vector<char> cubin = chord::compile_to_cubin(request, "/tmp", &log);
  INFO(source.name << ": " << log);
  CHECK(chord::read_cubin_info(cubin).arch == arch.name());
  CHECK(log.find("are serialized") == std::string::npos);
  const size_t at = log.find(" bytes spill stores");
  REQUIRE(at != std::string::npos);
  const size_t start = log.find_last_of(", ", at - 1) + 1;
  return std::stol(log.substr(start, at - start));
}

TEST_CASE("compile: the warp-specialized kernel's masked INT4 tiles of 32-96 tokens build for sm_90a with no "
          "serialized wgmma and no spills",
          "[compile]") {
  // The resolver runs them for masked calls of a few dozen rows per group in buffers far larger
  // (narrow_ws). Each INT4 kind, both BLOCK_N, at the resolver's 6 stages; 4 stages (the short-K
  // bulk stores at BN256) for BF16 INT4 at 32 and 48 tokens.
  const chord::Arch arch = chord::parse_arch("sm_90a");
  int checked = 0;
  for (auto weight : {chord::kW4A16WeightInt4, chord::kW4A16WeightInt4Fp16, chord::kW4A16WeightInt4Zp,
                      chord::kW4A16WeightInt4G128, chord::kW4A16WeightInt4ZpG128Fp16}) {
    for (int block_m : {32, 48, 64, 96}) {
      for (int block_n : {128, 256}) {
        chord::W4A16GemmConfig c;
        c.engine = chord::W4A16Engine::kWgmmaWs;
        c.mode = chord::kW4A16Masked;
        c.block_m = block_m;
        c.block_n = block_n;
        c.block_k = 64;
        c.stages = block_n == 256 && block_m <= 48 && weight == chord::kW4A16WeightInt4 ? 4 : 6;
        c.weight = weight;
        REQUIRE(c.error() == nullptr);
        const std::string name = c.source().name;
        CHECK(name.find("_m" + std::to_string(block_m) + "n") != std::string::npos);
        CHECK(chord::W4A16GemmConfig::from(c.descriptor(arch)).block_m == block_m);
        CHECK(spill_stores(c, arch) == 0);
        ++checked;
      }
    }
  }
  CHECK(checked == 40);
}

TEST_CASE("compile: INT4 group 128 (symmetric and zero points, BF16 and FP16) builds every engine, tile and mode on "
          "every arch",
          "[compile]") {
  // Per arch and group-128 kind: every mode on the 8-token decode tile (BF16: the fp32 group
  // sums; FP16: dequantized), and in offsets mode the direct path with 256- and 64-k blocks
  // (a 64-k block reads its 128-group's row: two blocks share one), the staged 64-k block, the
  // 16-token tile (the narrow path), a prefill tile, split-K (sm_90+, also with 64-k blocks that
  // start mid-group), and the pack / unpack kernels. Tiles with 128- and 256-k blocks (those the
  // tables and the heuristic pick for decode) have no spills; the 64-k blocks (whose scale row
  // index is one more live value) and the 256-thread prefill tile at its 128-register cap spill
  // at most 24 bytes, the group-32 zero-point prefill tile's own count. The one-role WGMMA tiles
  // (one scale row per stage) compile on every arch and serialize no wgmma on sm_90a; the
  // warp-specialized builds are in the ptxas test above.
  for (const char* arch_name : {"sm_80", "sm_90a", "sm_100a"}) {
    const chord::Arch arch = chord::parse_arch(arch_name);
    for (auto weight : {chord::kW4A16WeightInt4G128, chord::kW4A16WeightInt4G128Fp16, chord::kW4A16WeightInt4ZpG128,
                        chord::kW4A16WeightInt4ZpG128Fp16}) {
      INFO(arch_name << " weight " << weight);
      REQUIRE(chord::w4a16_is_g128(weight));
      REQUIRE(chord::w4a16_scale_group(weight) == 128);
      const auto g32 = static_cast<chord::W4A16WeightKind>(chord::w4a16_g32_kind(weight));
      REQUIRE(chord::w4a16_has_zero_point(weight) == chord::w4a16_has_zero_point(g32));
      REQUIRE(chord::w4a16_element(weight) == chord::w4a16_element(g32));
      auto mma = [&](chord::W4A16Mode mode, int bm, int bn, int bk, int stages, int wm, int wn, int split_k = 1) {
        return mma_sync_config(weight, mode, bm, bn, bk, stages, wm, wn, split_k);
      };
      std::vector<chord::W4A16GemmConfig> configs = mma_decode_matrix(weight, arch);
      configs.push_back(mma(chord::kW4A16Offsets, 8, 128, 64, 2, 1, 4));  // direct path, 64-k blocks
      configs.push_back(mma(chord::kW4A16Indexed, 8, 128, 64, 4, 1, 4));  // staged, 64-k blocks
      if (arch.sm() >= 90) configs.push_back(mma(chord::kW4A16Indexed, 16, 128, 64, 4, 1, 4, 8));  // odd split starts
      for (const chord::W4A16GemmConfig& c : configs) {
        REQUIRE(c.error() == nullptr);
        REQUIRE(c.g128());
        chord::W4A16GemmConfig same32 = c;
        same32.weight = g32;
        // A stage's scale tile: max(1, BLOCK_K / 128) rows instead of BLOCK_K / 32.
        const int entry = chord::w4a16_has_zero_point(weight) ? 4 : 2;
        const int rows = c.block_k >= 128 ? c.block_k / 128 : 1;
        CHECK(chord::w4a16_smem_stage_bytes(c.block_m, c.block_n, c.block_k, entry == 4, true) ==
              chord::w4a16_smem_stage_bytes(c.block_m, c.block_n, c.block_k, entry == 4) -
                  (c.block_k / 32 - rows) * c.block_n * entry);
        CHECK(c.smem_bytes() <= same32.smem_bytes());
        const chord::KernelDescriptor d = c.descriptor(arch);
        CHECK(chord::W4A16GemmConfig::from(d).weight == weight);
        CHECK_FALSE(d == same32.descriptor(arch));
        INFO(c.source().name);
        CHECK(c.source().name.find(chord::w4a16_weight_suffix(weight)) != std::string::npos);
        CHECK(c.source().name.find("g128") != std::string::npos);
        if (c.block_k >= 128) {
          // At most one 64-bit value: on sm_80 / sm_100a ptxas parks one loop-invariant address
          // of some decode tiles in local memory (one L1-hit load per stage, outside the MMAs).
          CHECK(spill_stores(c, arch) <= 8);
        } else {
          CHECK(spill_stores(c, arch) <= 24);
        }
        if (c.mode == chord::kW4A16Masked && c.takes_masked_loop()) {  // and its masked_loop form
          chord::W4A16GemmConfig loop = c;
          loop.masked_loop = true;
          REQUIRE(loop.error() == nullptr);
          CHECK(spill_stores(loop, arch) <= (c.block_k >= 128 ? 8 : 24) + loop_saves(loop));
        }
      }
      const chord::W4A16GemmConfig prefill = mma(chord::kW4A16Masked, 128, 128, 64, 4, 2, 4);
      CHECK(spill_stores(prefill, arch) <= 24);
      for (const chord::W4A16GemmConfig& w : one_role_tiles(weight)) {
        // One scale row per stage (group 32: two), before the stage's 1 KiB rounding.
        const bool zp = chord::w4a16_has_zero_point(weight);
        CHECK(chord::w4a16_wgmma_stage_bytes(w.block_m, w.block_n, zp, true) ==
              (w.block_m * 128 + w.block_n * 32 + w.block_n * (zp ? 4 : 2) + 1023) / 1024 * 1024);
        CHECK(w.source().name.find("g128") != std::string::npos);
        compile_one_role(w, arch);
      }
      const auto kernel = chord::JitRuntime::global().compile(prefill.descriptor(arch));
      CHECK(kernel->info.registers <= 128);

      const bool zp = chord::w4a16_has_zero_point(weight);
      const auto element = static_cast<chord::NF4Element>(chord::w4a16_element(weight));
      for (chord::W4A16PackConfig pack : pack_kernels(zp, 128)) {
        pack.element = pack.unpack || zp ? element : chord::kNF4BF16;
        const chord::KernelDescriptor d = pack.descriptor(arch);
        const chord::W4A16PackConfig back = chord::W4A16PackConfig::from(d);
        CHECK(back.group == 128);
        CHECK(back.zero_point == zp);
        CHECK(back.element == pack.element);
        chord::W4A16PackConfig pack32 = pack;
        pack32.group = 32;
        CHECK_FALSE(d == pack32.descriptor(arch));
        INFO(pack.source().name);
        CHECK(pack.source().name.find("_g128") != std::string::npos);
        CHECK(pack.source().text.find(", 128>") != std::string::npos);
        CHECK(chord::JitRuntime::global().compile(d)->info.arch == arch_name);
      }
    }
  }
}

TEST_CASE("compile: the warp-specialized WGMMA body builds its BN128 tiles for sm_90a", "[compile]") {
  // The resolver runs the BN256 NF4 kernels (compiled with the profiles above); the BN128 tiles
  // are kernel_check's. 384 threads, one CTA per SM: the entry's register count is 168.
  for (int weight : {static_cast<int>(chord::kW4A16WeightInt4), static_cast<int>(chord::kW4A16WeightNF4)}) {
    const std::string text = std::string("#include \"w4a16_wgmma_ws.cuh\"\n") +
                             "extern \"C\" __global__ void __launch_bounds__(384, 1) chord_entry(const __grid_constant__ "
                             "chord::W4A16Args args) {\n  chord::w4a16_wgmma_ws_body<2, 128, 6, " +
                             std::to_string(weight) + ">(args);\n}\n" +
                             chord::kernel_meta_definition(chord::KernelMeta{
                                 static_cast<uint32_t>(chord::kW4A16WgmmaWsThreads),
                                 static_cast<uint32_t>(chord::w4a16_wgmma_ws_smem_bytes(128, 128, 6, weight != 0)), 1});
    const chord::CubinInfo info = chord::read_cubin_info(compile_sm90a_unserialized("w4a16_wgmma_ws_test", text, {}));
    CHECK(info.arch == "sm_90a");
    CHECK(info.meta.threads == 384);
    CHECK(info.registers > 100);  // the Hopper body, not the trap other arches compile
    CHECK(info.registers <= 168);
  }
}

TEST_CASE("compile: an NVRTC error reports the log and where the source was dumped", "[compile]") {
  chord::CompileRequest request{"broken_kernel", "extern \"C\" __global__ void chord_entry() { undeclared_thing(); }",
                                chord::parse_arch("sm_90a"), {}};
  try {
    chord::compile_to_cubin(request, "/tmp");
    FAIL("a broken source compiled");
  } catch (const chord::Error& e) {
    std::string message = e.what();
    CHECK(e.status() == CHORD_ERROR_COMPILE);
    CHECK(message.find("undeclared_thing") != std::string::npos);
    auto at = message.find("generated source: ");
    INFO(message);
    REQUIRE(at != std::string::npos);
    std::string path = message.substr(at + 18);
    std::ifstream dumped(path);
    REQUIRE(dumped.good());
    std::string text((std::istreambuf_iterator<char>(dumped)), std::istreambuf_iterator<char>());
    CHECK(text == request.source);
    std::remove(path.c_str());
  }
}

TEST_CASE("compile: the cubin reader rejects bytes that are not a CUDA ELF", "[compile]") {
  std::vector<char> junk(256, 'x');
  CHECK_THROWS_AS(chord::read_cubin_info(junk), chord::Error);
  std::vector<char> empty;
  CHECK_THROWS_AS(chord::read_cubin_info(empty), chord::Error);
}

TEST_CASE("arch: names parse, unknown names and old GPUs are rejected", "[arch]") {
  CHECK(chord::parse_arch("sm_90a").sm() == 90);
  CHECK(chord::parse_arch("sm_90a").family_specific);
  CHECK(chord::parse_arch("sm_100a").major == 10);
  CHECK_FALSE(chord::parse_arch("sm_80").family_specific);
  CHECK_THROWS_AS(chord::parse_arch("sm_90"), chord::Error);
  CHECK_THROWS_AS(chord::parse_arch("sm_75"), chord::Error);
  CHECK(chord::arch_for_device(9, 0).name() == "sm_90a");
  CHECK(chord::arch_for_device(10, 0).name() == "sm_100a");
  CHECK(chord::arch_for_device(8, 6).name() == "sm_86");
  CHECK_THROWS_AS(chord::arch_for_device(7, 5), chord::Error);
}

// The SASS opcodes of a cubin's kernel code (the .text.* sections): per 128-bit instruction of
// sm_80 and later, the low 12 bits of its first 64-bit word (the opcode and its operand form,
// as nvdisasm -hex shows them), counted. The ELF is the 64-bit little-endian CUDA cubin.
static std::map<unsigned, int> sass_opcodes(const std::vector<char>& cubin) {
  auto read = [&](size_t at, size_t bytes) {
    REQUIRE(at + bytes <= cubin.size());
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; ++i) v |= uint64_t(static_cast<unsigned char>(cubin[at + i])) << (8 * i);
    return v;
  };
  const uint64_t shoff = read(0x28, 8);
  const size_t shentsize = read(0x3a, 2), shnum = read(0x3c, 2), shstrndx = read(0x3e, 2);
  const uint64_t strtab = read(shoff + shstrndx * shentsize + 0x18, 8);
  std::map<unsigned, int> counts;
  for (size_t i = 0; i < shnum; ++i) {
    const uint64_t sh = shoff + i * shentsize;
    const std::string name(&cubin.at(strtab + read(sh, 4)));
    if (name.rfind(".text.", 0) != 0) continue;
    const uint64_t offset = read(sh + 0x18, 8), size = read(sh + 0x20, 8);
    REQUIRE(size % 16 == 0);
    for (uint64_t at = offset; at < offset + size; at += 16) ++counts[static_cast<unsigned>(read(at, 8) & 0xfffu)];
  }
  return counts;
}

// The opcodes counted (nvdisasm -hex of the cubins of this toolkit, sm_80 / sm_90a / sm_100a).
constexpr unsigned kSassHmma = 0x23c;    // HMMA.16816.F32.BF16 (and .F32, the FP16 one)
constexpr unsigned kSassFfma = 0x223;    // FFMA R, R, R, R
constexpr unsigned kSassHfma2 = 0x431;   // HFMA2.BF16 R, R, imm, imm
constexpr unsigned kSassShf = 0x819;     // SHF R, RZ, imm, R

TEST_CASE("compile: the decode tile's two group-sum forms (GROUP_SUMS 0 and 1) build on every arch and trade MMAs "
          "for half fmas as designed, and form 0 keeps the kernel name without a suffix",
          "[compile]") {
  chord::W4A16GemmConfig decode = mma_sync_config(chord::kW4A16WeightInt4, chord::kW4A16Masked, 8, 128, 128, 3, 1, 4, 1);
  REQUIRE(decode.group_sums == chord::kW4A16GroupSumsOffset);
  REQUIRE(decode.runs_group_sums());
  CHECK(decode.source().name == "w4a16_masked_m8n128k128s3w1x4");
  CHECK(decode.source().text.find("chord::w4a16_gemm_body<1, 8, 128, 128, 3, 1, 4>(args);") != std::string::npos);
  chord::W4A16GemmConfig split = decode;
  split.split_k = 2;
  CHECK(split.source().name == "w4a16_masked_m8n128k128s3w1x4_sk2");
  CHECK(split.source().text.find("chord::w4a16_gemm_body<1, 8, 128, 128, 3, 1, 4, chord::w4a16_default_path(8, 1, 3), "
                                 "0, 2>(args);") != std::string::npos);
  chord::W4A16GemmConfig g128 = decode;
  g128.weight = chord::kW4A16WeightInt4G128;
  CHECK(g128.source().name == "w4a16_masked_m8n128k128s3w1x4_g128");
  CHECK(g128.descriptor(chord::parse_arch("sm_90a")).params[11] == 0);

  // Per 128-k stage of this tile (4 groups of 32 k, 2 n tiles per warp): form 0 makes code - 8
  // by one bf16x2 fma per A register (64 HFMA2) and runs 2 MMAs per n tile (16 HMMA); form 1
  // adds 2 correction MMAs per group (24 HMMA) and no half fmas. Both: 4 scale FFMA per n tile
  // (32). The main loop is the kernel's only code with these.
  struct Want {
    int hmma, ffma, hfma2;
  };
  const Want want[chord::kW4A16GroupSumsCount] = {{16, 32, 64}, {24, 32, 0}};
  for (const char* arch_name : {"sm_80", "sm_90a", "sm_100a"}) {
    const chord::Arch arch = chord::parse_arch(arch_name);
    for (int gs = 0; gs < chord::kW4A16GroupSumsCount; ++gs) {
      chord::W4A16GemmConfig c = decode;
      c.group_sums = gs;
      REQUIRE(c.error() == nullptr);
      const chord::KernelDescriptor d = c.descriptor(arch);
      CHECK(chord::W4A16GemmConfig::from(d).group_sums == gs);
      const chord::KernelSource source = c.source();
      INFO(arch_name << " " << source.name);
      if (gs != 0) {
        CHECK_FALSE(d == decode.descriptor(arch));
        CHECK(source.name == "w4a16_masked_m8n128k128s3w1x4_gs" + std::to_string(gs));
        CHECK(source.text.find("chord::w4a16_gemm_body<1, 8, 128, 128, 3, 1, 4, chord::w4a16_default_path(8, 1, 3), "
                               "0, 1, " + std::to_string(gs) + ">(args);") != std::string::npos);
      }
      const std::vector<char> cubin = chord::compile_to_cubin(
          chord::CompileRequest{source.name, source.text, arch, source.options}, "/tmp");
      CHECK(chord::read_cubin_info(cubin).arch == arch_name);
      std::map<unsigned, int> ops = sass_opcodes(cubin);
      CHECK(ops[kSassHmma] == want[gs].hmma);
      CHECK(ops[kSassFfma] == want[gs].ffma);
      CHECK(ops[kSassHfma2] == want[gs].hfma2);

      // The other tiles that run the group sums (sm_90a): every mode, group 128, split-K, the
      // direct path, two warps along M, zero points, the 16-token tile of one warp (whose
      // group sums serve tiles of <= 8 rows).
      if (arch.sm() != 90) continue;
      std::vector<chord::W4A16GemmConfig> others;
      for (auto mode : {chord::kW4A16Contiguous, chord::kW4A16Offsets, chord::kW4A16Indexed}) {
        others.push_back(mma_sync_config(chord::kW4A16WeightInt4, mode, 8, 128, 128, 3, 1, 4, 1));
      }
      others.push_back(mma_sync_config(chord::kW4A16WeightInt4G128, chord::kW4A16Indexed, 8, 128, 128, 3, 1, 4, 1));
      others.push_back(mma_sync_config(chord::kW4A16WeightInt4G128, chord::kW4A16Offsets, 8, 64, 256, 2, 1, 4, 1));
      others.push_back(mma_sync_config(chord::kW4A16WeightInt4, chord::kW4A16Offsets, 16, 64, 256, 4, 2, 2, 1));
      others.push_back(mma_sync_config(chord::kW4A16WeightInt4G128, chord::kW4A16Masked, 8, 64, 256, 4, 1, 4, 4));
      others.push_back(mma_sync_config(chord::kW4A16WeightInt4Zp, chord::kW4A16Indexed, 8, 128, 128, 3, 1, 4, 2));
      others.push_back(mma_sync_config(chord::kW4A16WeightInt4ZpG128, chord::kW4A16Masked, 8, 128, 128, 3, 1, 4, 1));
      others.push_back(mma_sync_config(chord::kW4A16WeightInt4ZpG128, chord::kW4A16Indexed, 16, 128, 128, 3, 1, 4, 1));
      for (chord::W4A16GemmConfig o : others) {
        o.group_sums = gs;
        REQUIRE(o.error() == nullptr);
        INFO(o.source().name);
        if (gs != 0) CHECK(o.source().name.find("_gs" + std::to_string(gs)) != std::string::npos);
        CHECK(chord::JitRuntime::global().compile(o.descriptor(arch))->info.arch == arch_name);
      }
    }
  }

  // Zero points and the 16-token tile: the offset form drops the correction MMAs (the token-sum
  // MMAs of zero points) for bf16x2 adds / fmas.
  for (auto weight : {chord::kW4A16WeightInt4, chord::kW4A16WeightInt4Zp}) {
    for (int bm : {8, 16}) {
      if (weight == chord::kW4A16WeightInt4 && bm == 8) continue;  // the counts above
      chord::W4A16GemmConfig base = mma_sync_config(weight, chord::kW4A16Masked, bm, 128, 128, 3, 1, 4, 1);
      int hmma[chord::kW4A16GroupSumsCount] = {}, hfma2[chord::kW4A16GroupSumsCount] = {};
      for (int gs = 0; gs < chord::kW4A16GroupSumsCount; ++gs) {
        chord::W4A16GemmConfig c = base;
        c.group_sums = gs;
        REQUIRE(c.runs_group_sums());
        REQUIRE(c.error() == nullptr);
        const chord::KernelSource source = c.source();
        INFO(source.name);
        std::map<unsigned, int> ops = sass_opcodes(chord::compile_to_cubin(
            chord::CompileRequest{source.name, source.text, chord::parse_arch("sm_90a"), source.options}, "/tmp"));
        hmma[gs] = ops[kSassHmma];
        // HFMA2 or HADD2 in any operand form (ptxas turns the fma by 1 with a register bias into
        // an HADD2 that reads the splatted half in place).
        for (const auto& [op, count] : ops) hfma2[gs] += (op & 0x1feu) == (kSassHfma2 & 0x1feu) ? count : 0;
      }
      INFO("weight " << weight << " BLOCK_M " << bm);
      CHECK(hmma[chord::kW4A16GroupSumsOffset] < hmma[chord::kW4A16GroupSumsCorrection]);
      CHECK(hfma2[chord::kW4A16GroupSumsOffset] > hfma2[chord::kW4A16GroupSumsCorrection]);
    }
  }

  // A form other than 0 on a tile without the BF16 group sums is a config error (FP16 tiles
  // run the group sums in the offset form only).
  auto rejected = [](chord::W4A16GemmConfig c) {
    c.group_sums = chord::kW4A16GroupSumsCorrection;
    CHECK(c.runs_group_sums() == (c.weight != chord::kW4A16WeightNF4 && !c.wgmma() && c.block_m == 8));
    CHECK_FALSE(c.takes_group_sums(chord::kW4A16GroupSumsCorrection));
    const char* why = c.error();
    REQUIRE(why != nullptr);
    CHECK(std::string(why).find("group-sums") != std::string::npos);
    CHECK_THROWS_AS(c.descriptor(chord::parse_arch("sm_90a")), chord::Error);
    c.group_sums = 0;
    CHECK(c.error() == nullptr);
  };
  for (auto weight : {chord::kW4A16WeightInt4Fp16, chord::kW4A16WeightNF4, chord::kW4A16WeightInt4ZpFp16,
                      chord::kW4A16WeightInt4G128Fp16}) {
    rejected(mma_sync_config(weight, chord::kW4A16Masked, 8, 128, 128, 3, 1, 4, 1));
  }
  rejected(mma_sync_config(chord::kW4A16WeightInt4, chord::kW4A16Masked, 16, 128, 128, 2, 1, 4, 1));  // direct path
  rejected(mma_sync_config(chord::kW4A16WeightInt4, chord::kW4A16Masked, 32, 128, 128, 3, 1, 4, 1));  // 32 tokens
  rejected(mma_sync_config(chord::kW4A16WeightInt4, chord::kW4A16Masked, 64, 128, 64, 4, 2, 4, 1));   // prefill
  chord::W4A16GemmConfig wgmma = mma_sync_config(chord::kW4A16WeightInt4, chord::kW4A16Masked, 128, 128, 64, 5, 1, 4, 1);
  wgmma.engine = chord::W4A16Engine::kWgmma;
  rejected(wgmma);
  chord::W4A16GemmConfig bad = decode;
  bad.group_sums = chord::kW4A16GroupSumsCount;
  CHECK(bad.error() != nullptr);
}

// A decode tile of the mma.sync kernel that another schedule of the same tile is checked against.
struct DecodeTile {
  chord::W4A16WeightKind weight;
  int bm, bn, bk, stages;
};

// `schedule` (the whole tile `whole` on another schedule) builds for `arch` with one copy of the
// tile's main loop, so the same tensor instructions as the whole tile.
void check_one_main_loop(const chord::W4A16GemmConfig& schedule, const chord::W4A16GemmConfig& whole,
                         const chord::Arch& arch) {
  const chord::KernelSource source = schedule.source();
  const std::vector<char> cubin =
      chord::compile_to_cubin(chord::CompileRequest{source.name, source.text, arch, source.options}, "/tmp");
  CHECK(chord::read_cubin_info(cubin).arch == arch.name());
  const chord::KernelSource whole_source = whole.source();
  const std::vector<char> whole_cubin = chord::compile_to_cubin(
      chord::CompileRequest{whole_source.name, whole_source.text, arch, whole_source.options}, "/tmp");
  CHECK(sass_opcodes(cubin)[kSassHmma] == sass_opcodes(whole_cubin)[kSassHmma]);
  CHECK(sass_opcodes(cubin)[kSassHmma] > 0);
}

TEST_CASE("compile: masked tile loops build the mma.sync decode tiles on every arch with the one-tile form's "
          "spills plus the loop's saves, round-trip through the descriptor, leave the one-tile kernels as they were, "
          "and are refused where they cannot serve",
          "[compile]") {
  for (const char* arch_name : {"sm_80", "sm_90a", "sm_100a"}) {
    const chord::Arch arch = chord::parse_arch(arch_name);
    for (auto weight : {chord::kW4A16WeightInt4, chord::kW4A16WeightInt4ZpG128Fp16}) {
      for (auto [bm, split] : {std::pair{8, 1}, std::pair{16, 1}, std::pair{32, 1}, std::pair{8, 2}}) {
        if (split > 1 && arch.sm() < 90) continue;
        chord::W4A16GemmConfig one = mma_sync_config(weight, chord::kW4A16Masked, bm, 128, 128, 3, 1, 4, split);
        chord::W4A16GemmConfig loop = one;
        loop.masked_loop = true;
        REQUIRE(loop.error() == nullptr);
        INFO(arch_name << " " << loop.source().name);
        CHECK(loop.source().name == one.source().name + "_ml");
        CHECK(loop.source().text.find(", 1, 1>(args);") != std::string::npos);  // n_run 1, MASKED_LOOP 1
        const chord::KernelDescriptor d = loop.descriptor(arch);
        CHECK_FALSE(d == one.descriptor(arch));
        CHECK(chord::W4A16GemmConfig::from(d).masked_loop);
        CHECK_FALSE(chord::W4A16GemmConfig::from(one.descriptor(arch)).masked_loop);
        CHECK(spill_stores(loop, arch) <= spill_stores(one, arch) + loop_saves(loop));
      }
    }
  }
  // The BM64 tile of one warp along M that masked calls of 22-512 rows per group run in large
  // buffers off sm_90a (the heuristic's): its loop form builds with no spills on every INT4 kind.
  for (const char* arch_name : {"sm_80", "sm_100a"}) {
    const chord::Arch arch = chord::parse_arch(arch_name);
    for (auto weight : {chord::kW4A16WeightInt4, chord::kW4A16WeightInt4ZpG128Fp16}) {
      chord::W4A16Problem p;
      p.mode = chord::kW4A16Masked;
      p.arch = arch;
      p.weight = weight;
      p.n = 4096;
      p.k = 7168;
      p.experts = p.num_groups = 48;
      p.max_m = 2048;
      p.rows_per_expert = 32;
      const chord::W4A16GemmConfig loop = chord::resolve_w4a16_launch_config(p);
      INFO(arch_name << " " << loop.source().name);
      REQUIRE(loop.masked_loop);
      CHECK(loop.block_m == 64);
      CHECK(loop.threads() == 128);
      CHECK(spill_stores(loop, arch) == 0);
    }
  }
  // The one-tile form's text is the kernel's as it was (the same JIT name and cache entry).
  const chord::W4A16GemmConfig one = mma_sync_config(chord::kW4A16WeightInt4, chord::kW4A16Masked, 8, 128, 128, 3, 1, 4, 1);
  CHECK(one.source().text.find("chord::w4a16_gemm_body<1, 8, 128, 128, 3, 1, 4>(args);") != std::string::npos);
  // Refused: other modes, the WGMMA engines, the 256-thread tiles.
  chord::W4A16GemmConfig bad = one;
  bad.masked_loop = true;
  bad.mode = chord::kW4A16Offsets;
  CHECK(std::string(bad.error()) == "a masked tile loop needs a masked mma.sync tile of fewer than 256 threads");
  bad = mma_sync_config(chord::kW4A16WeightInt4, chord::kW4A16Masked, 128, 128, 64, 4, 2, 4, 1);
  bad.masked_loop = true;
  CHECK(std::string(bad.error()) == "a masked tile loop needs a masked mma.sync tile of fewer than 256 threads");
  bad.engine = chord::W4A16Engine::kWgmma;
  bad.block_k = 64;
  CHECK(std::string(bad.error()) == "a masked tile loop needs a masked mma.sync tile of fewer than 256 threads");
  // Which form a call runs: the hint-sized grid where the kernel can loop and the hint asks for
  // fewer tiles than the buffer holds.
  chord::W4A16Args args{};
  args.mode = chord::kW4A16Masked;
  args.num_groups = 48;
  args.max_m = 2048;
  args.expected_m = 8;
  chord::W4A16GemmConfig decode = mma_sync_config(chord::kW4A16WeightInt4, chord::kW4A16Masked, 16, 128, 128, 3, 1, 4, 1);
  CHECK(chord::w4a16_masked_grid_follows_hint(decode, args));
  CHECK(chord::w4a16_config_for_masked_grid(decode, args).masked_loop);
  args.max_m = 16;  // a tight buffer: its own tiles, the one-tile form
  CHECK_FALSE(chord::w4a16_masked_grid_follows_hint(decode, args));
  CHECK_FALSE(chord::w4a16_config_for_masked_grid(decode, args).masked_loop);
  args.max_m = 2048;
  args.expected_m = 0;  // no hint: the buffer
  CHECK_FALSE(chord::w4a16_masked_grid_follows_hint(decode, args));
  args.expected_m = 8;
  chord::W4A16GemmConfig wgmma = decode;
  wgmma.engine = chord::W4A16Engine::kWgmma;
  wgmma.block_m = 32;
  wgmma.block_k = 64;
  CHECK_FALSE(chord::w4a16_masked_grid_follows_hint(wgmma, args));  // one tile per CTA
  chord::W4A16GemmConfig ws = chord::warp_specialized_tile(wgmma, false);
  CHECK(chord::w4a16_masked_grid_follows_hint(ws, args));  // its own tile loop
  CHECK_FALSE(chord::w4a16_config_for_masked_grid(ws, args).masked_loop);
  args.mode = chord::kW4A16Offsets;
  CHECK_FALSE(chord::w4a16_masked_grid_follows_hint(decode, args));
}

TEST_CASE("compile: a descriptor's k schedule is whole tiles or a cluster split of 2, 4 or 8, and split-K is "
          "refused on the WGMMA kernels",
          "[compile]") {
  const chord::Arch arch = chord::parse_arch("sm_90a");
  const chord::W4A16GemmConfig whole =
      mma_sync_config(chord::kW4A16WeightInt4, chord::kW4A16Indexed, 8, 128, 128, 3, 1, 4, 1);
  CHECK(whole.descriptor(arch).params[10] == 0);
  CHECK(chord::W4A16GemmConfig::from(whole.descriptor(arch)).split_k == 1);
  for (int split : {2, 4, 8}) {
    chord::W4A16GemmConfig c = whole;
    c.split_k = split;
    REQUIRE(c.error() == nullptr);
    CHECK(chord::W4A16GemmConfig::from(c.descriptor(arch)).split_k == split);
  }
  // Any other value (a descriptor from elsewhere) reaches error() as it is, never whole tiles.
  for (int schedule : {-1, 3, 16}) {
    chord::KernelDescriptor d = whole.descriptor(arch);
    d.params[10] = schedule;
    const chord::W4A16GemmConfig c = chord::W4A16GemmConfig::from(d);
    INFO("k schedule " << schedule);
    REQUIRE(c.error() != nullptr);
    CHECK(std::string(c.error()) == "split-K must be 1, 2, 4 or 8");
    CHECK_THROWS_WITH(chord::generate_kernel_source(d), Catch::Contains("split-K must be 1, 2, 4 or 8"));
  }
  chord::W4A16GemmConfig c = whole;
  c.split_k = 2;
  c.engine = chord::W4A16Engine::kWgmma;
  c.block_m = 64;
  c.block_k = chord::kW4A16WgmmaBlockK;
  CHECK(std::string(c.error()) == "split-K is a mma.sync schedule");
  CHECK(std::string(chord::warp_specialized_tile(c, false).error()) == "split-K is a mma.sync schedule");
}

TEST_CASE("compile: n-block runs build the staged decode tiles of every mode on every arch, keep one copy of the "
          "main loop, round-trip through the descriptor, and are refused where they cannot serve",
          "[compile]") {
  // The 8-, 16- and 32-token staged tiles: INT4 BF16 (short K, BK 64), INT4 with zero points and
  // group 128 in FP16, group 128 in BF16.
  const DecodeTile cases[] = {{chord::kW4A16WeightInt4, 8, 128, 64, 3},
                        {chord::kW4A16WeightInt4ZpG128Fp16, 16, 128, 128, 3},
                        {chord::kW4A16WeightInt4G128, 8, 128, 128, 3},
                        {chord::kW4A16WeightInt4, 32, 128, 64, 4}};
  for (const char* arch_name : {"sm_80", "sm_90a", "sm_100a"}) {
    const chord::Arch arch = chord::parse_arch(arch_name);
    for (chord::W4A16Mode mode : {chord::kW4A16Contiguous, chord::kW4A16Masked, chord::kW4A16Offsets,
                                  chord::kW4A16Indexed}) {
      if (std::string(arch_name) != "sm_90a" && (mode == chord::kW4A16Contiguous || mode == chord::kW4A16Offsets)) {
        continue;  // every mode on one arch; the tile code is mode-independent
      }
      for (const DecodeTile& k : cases) {
        const chord::W4A16GemmConfig whole = mma_sync_config(k.weight, mode, k.bm, k.bn, k.bk, k.stages, 1, 4, 1);
        for (int run : {2, 4, 8}) {
          chord::W4A16GemmConfig c = whole;
          c.n_run = run;
          REQUIRE(c.error() == nullptr);
          const chord::KernelDescriptor d = c.descriptor(arch);
          CHECK(chord::W4A16GemmConfig::from(d).n_run == run);
          CHECK(chord::W4A16GemmConfig::from(d).group_sums == whole.group_sums);
          CHECK(c.source().name == whole.source().name + "_nr" + std::to_string(run));
        }
        CHECK(whole.descriptor(arch).params[11] == whole.group_sums);  // no run: the descriptor is unchanged
        CHECK(chord::W4A16GemmConfig::from(whole.descriptor(arch)).n_run == 1);
        chord::W4A16GemmConfig c = whole;
        c.n_run = 4;
        const chord::KernelSource source = c.source();
        INFO(arch_name << " " << source.name);
        CHECK(source.text.find(", 0, 4>(args);") != std::string::npos);
        check_one_main_loop(c, whole, arch);
      }
    }
  }
  // Every INT4 kind on sm_90a (the arch the rule runs them on), on the rule's short-K tile in
  // runs of 2 and 8 and on a 128-k block in runs of 8: each builds, with at most one 64-bit
  // value parked in local memory, as the whole tiles.
  const chord::Arch sm90a = chord::parse_arch("sm_90a");
  for (auto weight : {chord::kW4A16WeightInt4, chord::kW4A16WeightInt4Fp16, chord::kW4A16WeightInt4Zp,
                      chord::kW4A16WeightInt4ZpFp16, chord::kW4A16WeightInt4G128, chord::kW4A16WeightInt4G128Fp16,
                      chord::kW4A16WeightInt4ZpG128, chord::kW4A16WeightInt4ZpG128Fp16}) {
    for (auto [bk, run] : {std::pair{64, 2}, std::pair{64, 8}, std::pair{128, 8}}) {
      chord::W4A16GemmConfig c = mma_sync_config(weight, chord::kW4A16Indexed, 8, 128, bk, 3, 1, 4, 1);
      c.n_run = run;
      REQUIRE(c.error() == nullptr);
      INFO(c.source().name);
      CHECK(spill_stores(c, sm90a) <= 8);
    }
  }
  // The grid: n runs of the last CTA take what is left.
  CHECK(chord::w4a16_n_runs(4096, 128, 4) == 8);
  CHECK(chord::w4a16_n_runs(384, 128, 4) == 1);
  CHECK(chord::w4a16_n_runs(640, 128, 2) == 3);
  CHECK(chord::w4a16_grid(chord::kW4A16Masked, 8, 128, 640, 0, 4, 4, 8, 0, 2).x == 4u * 3u);
  chord::W4A16GemmConfig c = mma_sync_config(chord::kW4A16WeightInt4, chord::kW4A16Indexed, 8, 128, 64, 3, 1, 4, 1);
  c.n_run = 3;
  CHECK(std::string(c.error()) == "an n-block run must be 1, 2, 4 or 8 n blocks");
  c.n_run = 2;
  c.weight = chord::kW4A16WeightNF4;
  CHECK(std::string(c.error()) == "n-block runs serve the INT4 weight kinds");
  c.weight = chord::kW4A16WeightInt4;
  c.n_run = 2;
  c.stages = 2;  // the direct path
  CHECK(std::string(c.error()) == "n-block runs need the staged main loop (STAGES > 2 at decode tiles)");
  c.stages = 3;
  c.block_k = 128;
  c.split_k = 2;
  CHECK(std::string(c.error()) == "n-block runs and split-K are two schedules of one tile");
  c.split_k = 1;
  c.engine = chord::W4A16Engine::kWgmma;
  c.block_m = 64;
  c.block_k = chord::kW4A16WgmmaBlockK;
  CHECK(std::string(c.error()) == "n-block runs are a mma.sync schedule");
  chord::W4A16GemmConfig ws = chord::warp_specialized_tile(c, false);
  CHECK(ws.warp_specialized());
  CHECK(std::string(ws.error()) == "n-block runs are a mma.sync schedule");
}

TEST_CASE("compile: FP16 INT4 decode tiles run the group sums in the offset form on every arch (8-token tiles, and "
          "the 16-token tile's narrow path)",
          "[compile]") {
  // Per 128-k stage of the BN128 8-token tile: the same 16 MMAs and 32 scale FFMA as the BF16
  // tile (8 with group 128; the dequantizing form had no FFMA), and each scale widened to fp32
  // once per group.
  for (auto weight : {chord::kW4A16WeightInt4Fp16, chord::kW4A16WeightInt4ZpFp16, chord::kW4A16WeightInt4G128Fp16,
                      chord::kW4A16WeightInt4ZpG128Fp16}) {
    for (const char* arch_name : {"sm_80", "sm_90a", "sm_100a"}) {
      const chord::W4A16GemmConfig c = mma_sync_config(weight, chord::kW4A16Masked, 8, 128, 128, 3, 1, 4, 1);
      REQUIRE(c.runs_group_sums());
      REQUIRE(c.takes_group_sums(chord::kW4A16GroupSumsOffset));
      REQUIRE(c.error() == nullptr);
      const chord::KernelSource source = c.source();
      INFO(arch_name << " " << source.name);
      CHECK(source.name.find("_gs") == std::string::npos);
      const std::vector<char> cubin = chord::compile_to_cubin(
          chord::CompileRequest{source.name, source.text, chord::parse_arch(arch_name), source.options}, "/tmp");
      std::map<unsigned, int> ops = sass_opcodes(cubin);
      CHECK(ops[kSassHmma] == 16);  // HMMA.16816.F32 (FP16) has the BF16 MMA's opcode bits
      // Group 128 chains a scale entry's four 32-k groups and scales once (int4_group128_mma).
      CHECK(ops[kSassFfma] == (chord::w4a16_is_g128(weight) ? 8 : 32));
      // FP16 words take one shift instead of BF16's three (int4_pair: the odd registers'
      // nibbles stay at bits 4..7), 2 fewer per word: 32 per stage (16 words a lane), of which
      // ptxas keeps at least 24 whatever it does with the kernel's other shifts. The same holds
      // with zero points (int4_zp_odd_bias).
      {
        chord::W4A16GemmConfig bf16 = c;
        bf16.weight = weight == chord::kW4A16WeightInt4Fp16     ? chord::kW4A16WeightInt4
                      : weight == chord::kW4A16WeightInt4ZpFp16 ? chord::kW4A16WeightInt4Zp
                      : weight == chord::kW4A16WeightInt4G128Fp16 ? chord::kW4A16WeightInt4G128
                                                                 : chord::kW4A16WeightInt4ZpG128;
        REQUIRE(chord::w4a16_has_zero_point(bf16.weight) == chord::w4a16_has_zero_point(weight));
        const chord::KernelSource bs = bf16.source();
        std::map<unsigned, int> bops = sass_opcodes(chord::compile_to_cubin(
            chord::CompileRequest{bs.name, bs.text, chord::parse_arch(arch_name), bs.options}, "/tmp"));
        CHECK(bops[kSassShf] - ops[kSassShf] >= 24);
      }
      // At most one 64-bit value, as in the group-128 matrix: ptxas may park one loop-invariant
      // address in local memory (one L1-hit load per stage, outside the MMAs).
      CHECK(spill_stores(c, chord::parse_arch(arch_name)) <= 8);
      chord::W4A16GemmConfig loop = c;  // and its masked_loop form
      loop.masked_loop = true;
      REQUIRE(loop.error() == nullptr);
      CHECK(spill_stores(loop, chord::parse_arch(arch_name)) <= 8 + loop_saves(loop));
    }
  }
}
