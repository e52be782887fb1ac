// NF4 kernels compile through NVRTC for every arch family we ship, and the NF4 C API
// rejects bad arguments (before touching a GPU) with messages that name them.
#include <catch2/catch.hpp>

#include <string>

#include "chord/chord.h"
#include "core/arch.hpp"
#include "jit/families/nf4.hpp"
#include "jit/families/w4a16.hpp"
#include "runtime/runtime.hpp"

TEST_CASE("nf4: pack and dequantize kernels compile for sm_80, sm_90a, sm_100a", "[nf4][compile]") {
  for (const char* arch : {"sm_80", "sm_90a", "sm_100a"}) {
    for (int variant = 0; variant < 4; ++variant) {
      chord::NF4KernelConfig c;
      c.dequant = variant >= 2;
      c.absmax_form = variant == 1 ? chord::kNF4AbsmaxNested : chord::kNF4AbsmaxFP32;
      c.element = variant == 3 ? chord::kNF4FP16 : chord::kNF4BF16;
      const chord::KernelDescriptor d = c.descriptor(chord::parse_arch(arch));
      const chord::NF4KernelConfig back = chord::NF4KernelConfig::from(d);
      CHECK(back.dequant == c.dequant);
      if (c.dequant) CHECK(back.element == c.element);
      else CHECK(back.absmax_form == c.absmax_form);
      auto kernel = chord::JitRuntime::global().compile(d);
      CHECK(kernel->info.arch == arch);
      CHECK(kernel->info.has_meta);
    }
  }
}

TEST_CASE("nf4: the GEMM's NF4 instantiations compile for sm_80, sm_90a, sm_100a", "[nf4][compile]") {
  // A direct-path decode config (STAGES == 2) and a staged prefill config, BF16 and FP16.
  for (const char* arch : {"sm_80", "sm_90a", "sm_100a"}) {
    for (auto weight : {chord::kW4A16WeightNF4, chord::kW4A16WeightNF4Fp16}) {
      for (int prefill = 0; prefill < 2; ++prefill) {
        chord::W4A16GemmConfig c;
        c.mode = chord::kW4A16Offsets;
        c.block_m = prefill ? 64 : 8;
        c.block_n = prefill ? 128 : 64;
        c.block_k = prefill ? 64 : 256;
        c.stages = prefill ? 4 : 2;
        c.warps_m = prefill ? 2 : 1;
        c.warps_n = 4;
        c.weight = weight;
        const chord::KernelDescriptor d = c.descriptor(chord::parse_arch(arch));
        CHECK(chord::W4A16GemmConfig::from(d).weight == weight);
        auto kernel = chord::JitRuntime::global().compile(d);
        CHECK(kernel->info.arch == arch);
      }
      // The WGMMA prefill config (its body traps off sm_90a but compiles everywhere).
      chord::W4A16GemmConfig w;
      w.engine = chord::W4A16Engine::kWgmma;
      w.mode = chord::kW4A16Offsets;
      w.block_m = 128;
      w.block_n = 128;
      w.block_k = chord::kW4A16WgmmaBlockK;
      w.warpgroups = 2;
      w.stages = 5;
      w.weight = weight;
      const chord::KernelDescriptor d = w.descriptor(chord::parse_arch(arch));
      CHECK(chord::W4A16GemmConfig::from(d).weight == weight);
      CHECK(w.source().name.find(weight == chord::kW4A16WeightNF4Fp16 ? "_nf4f16" : "_nf4") != std::string::npos);
      auto kernel = chord::JitRuntime::global().compile(d);
      CHECK(kernel->info.arch == arch);
    }
  }
}

TEST_CASE("nf4: C API argument errors", "[nf4]") {
  chord_w4a16_weight_t tag{};
  void* p = reinterpret_cast<void*>(uintptr_t{0x10000});
  auto status = [&](int64_t e, int64_t n, int64_t k, const void* nested, const void* code) {
    return chord_nf4_pack(p, p, nested, code, 0.0f, e, n, k, p, p, &tag, nullptr);
  };
  CHECK(status(1, 24, 64, nullptr, nullptr) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("'N' = 24 must be a multiple of 16") != std::string::npos);
  CHECK(status(1, 16, 96, nullptr, nullptr) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("'K' = 96 must be a multiple of 64") != std::string::npos);
  CHECK(status(0, 16, 64, nullptr, nullptr) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(status(1, 16, 64, nullptr, p) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("nested_code") != std::string::npos);
  CHECK(status(1, 16, 64, p, nullptr) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("'nested_code' is a null pointer") != std::string::npos);
  CHECK(chord_nf4_pack(nullptr, p, nullptr, nullptr, 0.0f, 1, 16, 64, p, p, &tag, nullptr) ==
        CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("'packed' is a null pointer") != std::string::npos);

  CHECK(chord_nf4_weight_bytes(2, 32, 128) == 2 * 32 * 128 / 2);
  CHECK(chord_nf4_absmax_bytes(2, 32, 128) == 2 * 32 * 2 * 4);
  CHECK(chord_nf4_layout_version() == 2);

  // Tags of the other format are rejected both ways, naming both formats.
  chord_w4a16_weight_t int4{CHORD_W4A16_MAGIC, CHORD_FORMAT_INT4_G32, chord_w4a16_layout_version(), 32, 1, 16, 64,
                            p, p};
  CHECK(chord_nf4_dequantize(&int4, CHORD_DTYPE_BF16, p, nullptr) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("format 1 (INT4 group-32); this operator needs NF4") != std::string::npos);
  chord_w4a16_weight_t nf4{CHORD_W4A16_MAGIC, CHORD_FORMAT_NF4, chord_nf4_layout_version(), 64, 1, 16, 64, p, p};
  CHECK(chord_w4a16_dequantize(&nf4, p, nullptr) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("format 2 (NF4); this operator needs INT4 group-32") != std::string::npos);
  // NF4 buffers packed with layout v1 (the nibble order before the pair-table decode).
  chord_w4a16_weight_t nf4_v1 = nf4;
  nf4_v1.layout_version = 1;
  CHECK(chord_nf4_dequantize(&nf4_v1, CHORD_DTYPE_BF16, p, nullptr) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("re-pack") != std::string::npos);
  CHECK(chord_w4a16_offsets(p, 4, &nf4, static_cast<const int32_t*>(p), p, nullptr) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(chord_nf4_dequantize(&nf4, 7, p, nullptr) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("'dtype' = 7 is invalid") != std::string::npos);
  chord_w4a16_weight_t bad_group = nf4;
  bad_group.group_size = 32;
  CHECK(chord_nf4_dequantize(&bad_group, CHORD_DTYPE_BF16, p, nullptr) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("group size 32; supported: 64") != std::string::npos);
  // A descriptor past NF4's E*N*K bound (no packed NF4 weight is that large): refused before the
  // overlap checks, which could not size its buffers, let an output onto its absmax through.
  chord_w4a16_weight_t huge = nf4;
  huge.experts = 65536;
  huge.n = 1 << 20;
  huge.k = 1 << 20;
  CHECK(chord_nf4_dequantize(&huge, CHORD_DTYPE_BF16, huge.scales_dev, nullptr) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(chord_last_error()).find("more than an NF4 weight holds") != std::string::npos);
}
