#include "precompile/kernel_sets.hpp"

#include "core/error.hpp"
#include "core/model_shapes.hpp"
#include "jit/families/int4_dequant.hpp"
#include "jit/families/nf4.hpp"
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

// The configs the resolver picks for a split's GEMMs: every mode at the row counts of the
// suite (docs/shapes.md), without routing geometry (no split-K), and the offsets mode (INT4, and
// NF4 with BF16 and FP16 activations where the suite runs NF4) at 1..4096 tokens routed top-8 on
// a 132-SM GPU, which adds the split-K kernels of the smallest grids. Other geometries (a few
// rows in other modes, other SM counts) can still compile a kernel at their first call.
std::vector<KernelDescriptor> gemm_kernels(const ShapeSplit& split, const Arch& arch) {
  std::vector<KernelDescriptor> out;
  auto add = [&out](const KernelDescriptor& d) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  const bool nf4 = runs_nf4(split);
  const std::vector<W4A16WeightKind> weights =
      nf4 ? std::vector<W4A16WeightKind>{kW4A16WeightInt4, kW4A16WeightNF4, kW4A16WeightNF4Fp16}
          : std::vector<W4A16WeightKind>{kW4A16WeightInt4};
  for (const GemmShape& shape : {split.gate_up, split.down}) {
    for (W4A16Mode mode : {kW4A16Contiguous, kW4A16Masked, kW4A16Offsets, kW4A16Indexed}) {
      for (W4A16WeightKind weight : weights) {
        if (weight != kW4A16WeightInt4 && mode != kW4A16Offsets) continue;
        for (int rows : {1, 8, 16, 32, 64, 128, 512}) {
          // Indexed calls at 128 rows and more: routing aligned to 64 (the block fallback under
          // expert parallelism) and to 128 (the BM128 rows' own block, e.g. TP8 prefill).
          for (int block : {64, 128}) {
            if (block == 128 && (mode != kW4A16Indexed || rows < 128)) continue;
            W4A16Problem p;
            p.mode = mode;
            p.rows_per_expert = rows;
            p.n = shape.n;
            p.k = shape.k;
            p.experts = split.experts_local;
            p.block_size = block;
            p.arch = arch;
            p.weight = weight;
            add(resolve_w4a16_config(p).descriptor(arch));
          }
        }
        if (mode != kW4A16Offsets) continue;
        for (int tokens : {1, 8, 64, 512, 4096}) {  // what w4a16_offsets_format passes
          W4A16Problem p;
          p.mode = kW4A16Offsets;
          p.a_rows = 8 * tokens;
          p.rows_per_expert = std::max(1, p.a_rows / split.experts_local);
          p.n = shape.n;
          p.k = shape.k;
          p.experts = split.experts_local;
          p.arch = arch;
          p.weight = weight;
          add(resolve_w4a16_config(p).descriptor(arch));
        }
      }
    }
  }
  add(RoutingCheckConfig{}.descriptor(arch));
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
  for (bool unpack : {false, true}) {
    for (Int4SourceFormat format : {kInt4Codes, kInt4Compressed}) {
      W4A16PackConfig c;
      c.unpack = unpack;
      c.source_format = unpack ? kInt4Codes : format;
      add(c.descriptor(arch));
    }
  }
  return out;
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
  return fmt::format("{} experts, N x K {} x {}, {} x {}: the GEMM modes ({}), pack and routing-check kernels",
                     split->experts_local, split->gate_up.n, split->gate_up.k, split->down.n, split->down.k,
                     runs_nf4(*split) ? "INT4 and NF4" : "INT4");
}

std::vector<KernelDescriptor> kernel_set_descriptors(const std::string& name, const Arch& arch) {
  if (name == "dequant") return dequant_kernels(arch);
  if (const ShapeSplit* split = kernel_set_split(name)) return gemm_kernels(*split, arch);
  if (name == "all") {
    std::vector<KernelDescriptor> out = dequant_kernels(arch);
    for (const ShapeSplit* split : model_shapes().kernel_sets()) {
      for (const auto& d : gemm_kernels(*split, arch)) {
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
