// Every CHORD_* environment variable is read here and nowhere else. An invalid value is
// an Error(CHORD_ERROR_ENVIRONMENT) naming the variable; a CHORD_* variable chord does not
// know is warned about once. docs/environment.md lists them.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/w4a16_engine.hpp"

namespace chord {

// CHORD_W4A16_ENGINE: which candidate configs the resolver keeps or ranks first, and the engine
// it forces, if any. Its values (w4a16_engine_knob_name):
//   auto          the resolver's choice (tuning table, WGMMA defaults, heuristic)
//   portable      only mma.sync candidates, on every GPU
//   prefer_wgmma  on sm_90a, the WGMMA candidates first wherever they can run, decode included
//   mma_sync, wgmma, wgmma_ws   that engine: the resolver's config where it has that engine,
//                 else the engine's defaults
// The deprecated CHORD_W4A16_PORTABLE and CHORD_SM90_DECODE set `candidates` only; set with a
// forcing value, they still choose which candidate the forced engine starts from.
struct W4A16EngineKnob {
  enum Candidates { kAll, kPortable, kPreferWgmma };
  Candidates candidates = kAll;
  std::optional<W4A16Engine> forced;
  bool operator==(const W4A16EngineKnob& o) const { return candidates == o.candidates && forced == o.forced; }
};

// The knob's value names: "auto", "portable", "prefer_wgmma" or the forced engine's name (a
// knob with both, reachable only through a deprecated variable: the engine's name).
const char* w4a16_engine_knob_name(const W4A16EngineKnob& knob);
std::optional<W4A16EngineKnob> parse_w4a16_engine_knob(std::string_view name);

struct Environment {
  std::string cache_dir;             // CHORD_CACHE_DIR (default $XDG_CACHE_HOME/chord, ~/.cache/chord; "" = none)
  std::vector<std::string> cache_readonly_dirs;  // CHORD_CACHE_READONLY_DIRS: read-only layers, in order
  bool jit_debug = false;            // CHORD_JIT_DEBUG=0|1: log compiles, cache hits, header source
  bool dump_source = false;          // CHORD_JIT_DUMP_SOURCE=0|1: write generated source next to the cubin
  bool validate_routing = false;     // CHORD_VALIDATE_ROUTING=0|1: check routing tensors on the device
  std::optional<std::string> w4a16_table;  // CHORD_W4A16_PROFILE: the split whose tuning table to use, or "heuristic"
  W4A16EngineKnob w4a16_engine;      // CHORD_W4A16_ENGINE (CHORD_W4A16_PORTABLE, CHORD_SM90_DECODE: deprecated)
  std::optional<int> w4a16_bm;       // CHORD_W4A16_BM / _BN / _BK / _STAGES: force one config
  std::optional<int> w4a16_bn;
  std::optional<int> w4a16_bk;
  std::optional<int> w4a16_stages;
  std::optional<int> w4a16_warps_n;  // CHORD_W4A16_WARPS_N: warps along N of a forced mma.sync config
  std::optional<int> w4a16_warps_m;  // CHORD_W4A16_WARPS_M: warps along M of a forced mma.sync config
  std::optional<int> w4a16_split_k;  // CHORD_W4A16_SPLIT_K: force the mma.sync split-K (1, 2, 4, 8)
  // CHORD_W4A16_GROUP_SUMS: the group-sum form (W4A16GroupSums, 0 or 1) of the calls whose tile
  // runs the INT4 BF16 group sums; for measuring the correction form against the default 0
  std::optional<int> w4a16_group_sums;
  // CHORD_W4A16_N_RUN: n blocks one CTA of a mma.sync staged tile reduces (1, 2, 4, 8)
  std::optional<int> w4a16_n_run;
  // CHORD_W4A16_SEARCH=0|1 (default 1): time a few decode tiles at a shape's first call and
  // keep the fastest (ops/w4a16_search.hpp); off while any other CHORD_W4A16_* knob is set.
  bool w4a16_search = true;
  // Whether a CHORD_W4A16_* variable other than CHORD_W4A16_SEARCH chooses or shapes the
  // config: the choice is then the resolver's alone, deterministic.
  bool w4a16_overridden() const {
    return w4a16_table || !(w4a16_engine == W4A16EngineKnob{}) || w4a16_bm || w4a16_bn || w4a16_bk || w4a16_stages ||
           w4a16_warps_n || w4a16_warps_m || w4a16_split_k || w4a16_group_sums || w4a16_n_run;
  }
};

// Reads the process environment now (throws on an invalid value).
Environment read_environment();

// The environment as read at first use; later changes to the process environment are
// not seen (read it once so the launch path never parses strings).
const Environment& env();

}  // namespace chord
