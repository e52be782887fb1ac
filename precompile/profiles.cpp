#include "precompile/profiles.hpp"

#include "core/error.hpp"
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

struct ModelShape {
  int experts, n, k;
};

// The GEMM shapes of docs/shapes.md, per profile (gate_up and down).
std::vector<ModelShape> model_shapes(const std::string& name) {
  if (name == "ep8") return {{48, 4096, 7168}, {48, 7168, 2048}};
  if (name == "tp8") return {{384, 512, 7168}, {384, 7168, 256}};
  if (name == "qwen3") return {{128, 1536, 2048}, {128, 2048, 768}};
  return {};
}

// The configs the resolver picks for a profile's shapes: every mode at the row counts of the
// suite (docs/shapes.md), without routing geometry (no split-K), and the offsets mode (INT4, and NF4
// for qwen3) at 1..4096 tokens routed top-8 on a 132-SM GPU, which adds the split-K kernels
// of the smallest grids. Other geometries (a few rows in other modes, other SM counts) can
// still compile a kernel at their first call.
std::vector<KernelDescriptor> gemm_kernels(const std::string& name, const Arch& arch) {
  std::vector<KernelDescriptor> out;
  auto add = [&out](const KernelDescriptor& d) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  const std::vector<W4A16WeightKind> weights =
      name == "qwen3" ? std::vector<W4A16WeightKind>{kW4A16WeightInt4, kW4A16WeightNF4, kW4A16WeightNF4Fp16}
                      : std::vector<W4A16WeightKind>{kW4A16WeightInt4};  // NF4: the offsets mode of qwen3
  for (const auto& shape : model_shapes(name)) {
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
            p.experts = shape.experts;
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
          p.rows_per_expert = std::max(1, p.a_rows / shape.experts);
          p.n = shape.n;
          p.k = shape.k;
          p.experts = shape.experts;
          p.arch = arch;
          p.weight = weight;
          add(resolve_w4a16_config(p).descriptor(arch));
        }
      }
    }
  }
  add(RoutingCheckConfig{}.descriptor(arch));
  if (name == "qwen3") {  // the NF4 (bitsandbytes) pack and dequantize kernels
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
    for (W4A16PackSource format : {kW4A16SrcCodes, kW4A16SrcCompressed}) {
      W4A16PackConfig c;
      c.unpack = unpack;
      c.source_format = unpack ? kW4A16SrcCodes : format;
      add(c.descriptor(arch));
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> profile_names() { return {"dequant", "ep8", "tp8", "qwen3", "all"}; }

std::string profile_summary(const std::string& name) {
  if (name == "dequant") return "the INT4 dequantize kernels";
  if (name == "all") return "all of the above";
  const std::vector<ModelShape> shapes = model_shapes(name);
  if (shapes.empty()) profile_descriptors(name, Arch{});  // throws, naming the known profiles
  std::string sizes;
  for (const auto& s : shapes) sizes += fmt::format("{}{} x {}", sizes.empty() ? "" : ", ", s.n, s.k);
  return fmt::format("{} experts, N x K {}: the GEMM modes ({}), pack and routing-check kernels", shapes[0].experts,
                     sizes, name == "qwen3" ? "INT4 and NF4" : "INT4");
}

std::vector<KernelDescriptor> profile_descriptors(const std::string& name, const Arch& arch) {
  if (name == "dequant") return dequant_kernels(arch);
  if (name == "ep8" || name == "tp8" || name == "qwen3") return gemm_kernels(name, arch);
  if (name == "all") {
    std::vector<KernelDescriptor> out = dequant_kernels(arch);
    for (const char* profile : {"ep8", "tp8", "qwen3"}) {
      for (const auto& d : gemm_kernels(profile, arch)) {
        if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
      }
    }
    return out;
  }
  std::string known;
  for (const auto& n : profile_names()) known += (known.empty() ? "" : ", ") + n;
  fail(CHORD_ERROR_INVALID_ARGUMENT, "unknown profile '{}'; known profiles: {}", name, known);
}

}  // namespace chord
