// The W4A16 GEMM engines and their one spelling, shared by the tuning tables, the vLLM
// export, the CLI and CHORD_W4A16_ENGINE.
#pragma once
#include <optional>
#include <string_view>

namespace chord {

// Which inner-product engine a W4A16 GEMM config uses.
enum class W4A16Engine : int {
  kMmaSync = 0,  // portable (sm_80+): kernels_src/w4a16_gemm.cuh
  kWgmma = 1,    // Hopper prefill (sm_90a): kernels_src/w4a16_wgmma.cuh; block_k fixed at 64
  kWgmmaWs = 2,  // the same, warp-specialized and persistent: kernels_src/w4a16_wgmma_ws.cuh;
                 // block_m 128, block_n 128 or 256, one CTA per SM (the resolver: NF4 prefill,
                 // large long-K INT4 prefill)
};

constexpr const char* w4a16_engine_name(W4A16Engine engine) {
  return engine == W4A16Engine::kWgmmaWs ? "wgmma_ws" : engine == W4A16Engine::kWgmma ? "wgmma" : "mma_sync";
}

inline std::optional<W4A16Engine> parse_w4a16_engine(std::string_view name) {
  for (auto engine : {W4A16Engine::kMmaSync, W4A16Engine::kWgmma, W4A16Engine::kWgmmaWs}) {
    if (name == w4a16_engine_name(engine)) return engine;
  }
  return std::nullopt;
}

}  // namespace chord
