#include "precompile/kernel_sets.hpp"

#include "core/error.hpp"
#include "core/model_shapes.hpp"
#include "jit/families/int4_dequant.hpp"
#include "jit/families/nf4.hpp"
#include "jit/families/l2_flush.hpp"
#include "jit/families/routing_check.hpp"
#include "jit/families/w4a16.hpp"
#include "tuning_tables/w4a16_resolver.hpp"

#include <algorithm>

namespace chord {
namespace {

std::vector<KernelDescriptor> dequant_kernels(const Arch& arch) {
  std::vector<KernelDescriptor> out;
  for (Int4SourceFormat format : {kInt4Codes, kInt4Compressed}) {
    Int4DequantConfig config;
    config.format = format;
    out.push_back(config.descriptor(arch));
  }
  return out;
}

// A kernel-set split of the shapes file, or nullptr.
const ShapeSplit* kernel_set_split(const std::string& name) {
  const ShapeSplit* split = model_shapes().split(name);
  return split && split->kernel_set ? split : nullptr;
}

// Whether the suite runs NF4 weights on the split (a row with "weight": "nf4").
bool runs_nf4(const ShapeSplit& split) {
  for (const auto& row : model_shapes().rows) {
    if (row.split == split.name && row.weight == "nf4") return true;
  }
  return false;
}

// The GEMM weight kinds a split's calls run, each with the modes it is called in: the eight
// INT4 kinds (BF16 or FP16 scales and activations, symmetric or with zero points, group 32 or
// 128: the compressed-tensors, GPTQ and AWQ checkpoints; CHORD_FORMAT_INT4_G32*,
// CHORD_FORMAT_INT4_G128*) in every mode, and
// NF4 with BF16 and FP16 activations (chord_nf4_offsets: the offsets mode) where the suite
// runs NF4 on the split.
std::vector<W4A16WeightKind> split_weight_kinds(bool nf4) {
  std::vector<W4A16WeightKind> kinds = {kW4A16WeightInt4,         kW4A16WeightInt4Fp16,
                                        kW4A16WeightInt4Zp,       kW4A16WeightInt4ZpFp16,
                                        kW4A16WeightInt4G128,     kW4A16WeightInt4G128Fp16,
                                        kW4A16WeightInt4ZpG128,   kW4A16WeightInt4ZpG128Fp16};
  if (nf4) {
    kinds.push_back(kW4A16WeightNF4);
    kinds.push_back(kW4A16WeightNF4Fp16);
  }
  return kinds;
}

// The routing block chord_kernels' indexed layer aligns to at a mean of `rows` routed rows per
// expert (python/chord_kernels/routing.py, block_size_for_rows with the "auto" policy).
int auto_routing_block(double rows) {
  for (int block : {16, 32}) {
    if (rows * 1.5 <= block) return block;
  }
  return 64;
}

// vLLM's default batched (masked) buffer per dispatching rank: its max_num_batched_tokens for
// DeepEP low-latency and NIXL EP with data parallelism (docs/vllm.md).
constexpr int kVllmBatchedRowsPerRank = 256;

// The routed calls whose decode kernels (split-K, narrow WGMMA tiles) a set holds: tokens
// routed top_k on a GPU of sm_count SMs.
struct RoutedCalls {
  std::vector<int> tokens;
  int top_k = 8;
  int sm_count = 132;
};

// The configs the resolver picks for a split's GEMMs, for each weight kind of the split
// (split_weight_kinds; NF4 where `nf4`): every mode at the row counts of the suite (docs/shapes.md), without
// routing geometry (no split-K; masked also with one group per local expert, whose count sets
// the narrow WGMMA tile's BN, in a buffer of twice the rows and in one far larger, as vLLM's
// batched buffers are, with the launch's masked-grid form); the offsets and indexed modes at `calls` (chord_kernels' routing
// block for indexed), which add the split-K kernels of the smallest grids. Other geometries (a few rows in other modes, other SM
// counts) can still compile a kernel at their first call.
std::vector<KernelDescriptor> gemm_kernels(const ShapeSplit& split, bool nf4, const RoutedCalls& calls,
                                           const Arch& arch) {
  std::vector<KernelDescriptor> out;
  auto add = [&out](const KernelDescriptor& d) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  const std::vector<W4A16WeightKind> weights = split_weight_kinds(nf4);
  for (const GemmShape& shape : {split.gate_up, split.down}) {
    for (W4A16Mode mode : {kW4A16Contiguous, kW4A16Masked, kW4A16Offsets, kW4A16Indexed}) {
      for (W4A16WeightKind weight : weights) {
        if (w4a16_is_nf4(weight) && mode != kW4A16Offsets) continue;
        if (w4a16_is_g128(weight) && shape.k % kW4A16Group128 != 0) continue;  // not a group-128 shape
        auto problem = [&](W4A16Mode m) {
          W4A16Problem p;
          p.mode = m;
          p.n = shape.n;
          p.k = shape.k;
          p.experts = split.experts_local;
          p.arch = arch;
          p.weight = weight;
          p.sm_count = calls.sm_count;  // the narrow tiles' BN and the masked split-K count the SMs
          return p;
        };
        for (int rows : {1, 8, 16, 32, 64, 128, 512}) {
          // Indexed calls at 128 rows and more: routing aligned to 64 (the block fallback under
          // expert parallelism) and to 128 (the BM128 rows' own block, e.g. TP8 prefill).
          for (int block : {64, 128}) {
            if (block == 128 && (mode != kW4A16Indexed || rows < 128)) continue;
            W4A16Problem p = problem(mode);
            p.rows_per_expert = rows;
            p.block_size = block;
            add(resolve_w4a16_config(p).descriptor(arch));
            if (mode == kW4A16Masked) {  // with the groups the operator passes (the tile's BN counts them)
              p.num_groups = split.experts_local;
              p.max_m = 2 * rows;
              add(resolve_w4a16_config(p).descriptor(arch));
              // And in a buffer far over the rows, as vLLM's batched buffers are (256 rows per
              // dispatching rank x the EP ranks; --moe knows no ranks: 16x the rows at least), as
              // the launch runs it: a grid that follows the hint may take other kernels, and which
              // ones depends only on the buffer holding over twice the hint's tiles.
              p.max_m = std::max(16 * rows, kVllmBatchedRowsPerRank * split.ep);
              add(resolve_w4a16_launch_config(p).descriptor(arch));
            }
          }
        }
        if (mode != kW4A16Offsets && mode != kW4A16Indexed) continue;
        for (int tokens : calls.tokens) {  // routed top_k, as the operators pass them
          W4A16Problem p = problem(mode);
          const int routes = calls.top_k * tokens;
          p.rows_per_expert = std::max(1, routes / split.experts_local);
          if (mode == kW4A16Offsets) {
            p.a_rows = routes;  // S: the routed rows
          } else {
            p.a_rows = tokens;  // M, each row routed top_k times
            p.top_k = calls.top_k;
            p.block_size = auto_routing_block(double(routes) / split.experts_local);
          }
          add(resolve_w4a16_config(p).descriptor(arch));
        }
      }
    }
  }
  add(RoutingCheckConfig{}.descriptor(arch));
  add(L2FlushConfig{}.descriptor(arch));  // the decode tile search's (ops/w4a16_search.cpp)
  if (nf4) {  // the NF4 (bitsandbytes) pack and dequantize kernels
    for (bool dequant : {false, true}) {
      for (int variant : {0, 1}) {
        NF4KernelConfig c;
        c.dequant = dequant;
        c.absmax_form = variant == 0 ? kNF4AbsmaxFP32 : kNF4AbsmaxNested;
        c.element = variant == 0 ? kNF4BF16 : kNF4FP16;
        add(c.descriptor(arch));
      }
    }
  }
  // The INT4 pack kernels of both checkpoint forms and the unpack kernel, per INT4 kind as
  // ops/w4a16.cpp configures them: one pack kernel for BF16 and FP16 scales (copied as 16-bit
  // patterns), the zero-point packer per element type, the unpack kernel per kind; group 128
  // has its own of each.
  for (W4A16WeightKind weight : weights) {
    if (w4a16_is_nf4(weight)) continue;
    const bool zp = w4a16_has_zero_point(weight);
    const NF4Element element = static_cast<NF4Element>(w4a16_element(weight));
    for (Int4SourceFormat format : {kInt4Codes, kInt4Compressed}) {
      W4A16PackConfig c;
      c.source_format = format;
      c.zero_point = zp;
      c.element = zp ? element : kNF4BF16;
      c.group = w4a16_scale_group(weight);
      add(c.descriptor(arch));
    }
    W4A16PackConfig c;
    c.unpack = true;
    c.source_format = kInt4Codes;
    c.zero_point = zp;
    c.element = element;
    c.group = w4a16_scale_group(weight);
    add(c.descriptor(arch));
  }
  return out;
}

// A kernel-set split's GEMM kernels: 1..4096 tokens routed top-8 on a 132-SM GPU (H100 / H200),
// NF4 where the suite runs it.
std::vector<KernelDescriptor> split_kernels(const ShapeSplit& split, const Arch& arch) {
  RoutedCalls calls;
  calls.tokens = {1, 8, 64, 512, 4096};
  return gemm_kernels(split, runs_nf4(split), calls, arch);
}

}  // namespace

std::vector<std::string> kernel_set_names() {
  std::vector<std::string> names = {"dequant"};
  for (const ShapeSplit* split : model_shapes().kernel_sets()) names.push_back(split->name);
  names.push_back("all");
  return names;
}

std::string kernel_set_summary(const std::string& name) {
  if (name == "dequant") return "the INT4 dequantize kernels";
  if (name == "all") return "all of the above";
  const ShapeSplit* split = kernel_set_split(name);
  if (split == nullptr) kernel_set_descriptors(name, Arch{});  // throws, naming the known sets
  return fmt::format(
      "{} experts, N x K {} x {}, {} x {}: the GEMM modes ({}), pack and routing-check kernels", split->experts_local,
      split->gate_up.n, split->gate_up.k, split->down.n, split->down.k,
      runs_nf4(*split) ? "INT4 BF16 and FP16, with and without zero points, group 32 and 128; NF4"
                       : "INT4 BF16 and FP16, with and without zero points, group 32 and 128");
}

std::vector<KernelDescriptor> moe_kernel_descriptors(const MoeLayerShape& shape, const Arch& arch) {
  // Within the operators' own bounds (ops/w4a16.cpp: E <= 2^16, N and K <= 2^20); real models
  // are far inside them.
  constexpr int kMaxExperts = 1 << 16, kMaxDim = 1 << 17;
  CHORD_REQUIRE(shape.experts >= 1 && shape.experts <= kMaxExperts, "experts must be in [1, {}], got {}",
                kMaxExperts, shape.experts);
  CHORD_REQUIRE(shape.hidden >= 1 && shape.hidden <= kMaxDim && shape.intermediate >= 1 &&
                    shape.intermediate <= kMaxDim,
                "hidden and intermediate sizes must be in [1, {}], got {} and {}", kMaxDim, shape.hidden,
                shape.intermediate);
  ShapeSplit split;
  split.name = "moe";
  split.experts_local = shape.experts;
  split.gate_up = {2 * shape.intermediate, shape.hidden};
  split.down = {shape.hidden, shape.intermediate};
  // The operators' packed layout (include/chord/chord.h): N % 16 == 0, K % 64 == 0.
  CHORD_REQUIRE(shape.hidden % 64 == 0 && shape.intermediate % 64 == 0,
                "the GEMMs gate_up {} x {} and down {} x {} (N x K) need N % 16 == 0 and K % 64 == 0: hidden and "
                "intermediate sizes must be multiples of 64, got {} and {}",
                split.gate_up.n, split.gate_up.k, split.down.n, split.down.k, shape.hidden, shape.intermediate);
  CHORD_REQUIRE(shape.top_k >= 1 && shape.top_k <= 64, "top_k must be in [1, 64], got {}", shape.top_k);
  CHORD_REQUIRE(shape.sm_count >= 1 && shape.sm_count <= 4096, "the SM count must be in [1, 4096], got {}",
                shape.sm_count);
  RoutedCalls calls;
  calls.top_k = shape.top_k;
  calls.sm_count = shape.sm_count;
  // vLLM's CUDA Graph batch sizes (1, 2, 4, then multiples of 8 to 512), then prefill sizes.
  calls.tokens = {1, 2, 4};
  for (int t = 8; t <= 512; t += 8) calls.tokens.push_back(t);
  for (int t = 1024; t <= 4096; t *= 2) calls.tokens.push_back(t);
  return gemm_kernels(split, shape.nf4, calls, arch);
}

std::vector<KernelDescriptor> kernel_set_descriptors(const std::string& name, const Arch& arch) {
  if (name == "dequant") return dequant_kernels(arch);
  if (const ShapeSplit* split = kernel_set_split(name)) return split_kernels(*split, arch);
  if (name == "all") {
    std::vector<KernelDescriptor> out = dequant_kernels(arch);
    for (const ShapeSplit* split : model_shapes().kernel_sets()) {
      for (const auto& d : split_kernels(*split, arch)) {
        if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
      }
    }
    return out;
  }
  std::string known;
  for (const auto& n : kernel_set_names()) known += (known.empty() ? "" : ", ") + n;
  fail(CHORD_ERROR_INVALID_ARGUMENT, "unknown kernel set '{}'; known kernel sets: {}", name, known);
}

}  // namespace chord
