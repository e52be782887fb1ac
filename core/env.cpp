#include "core/env.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "core/error.hpp"

extern char** environ;

namespace chord {
namespace {

// Every variable the library reads (docs/environment.md).
constexpr const char* kVariables[] = {
    "CHORD_CACHE_DIR",      "CHORD_CACHE_READONLY_DIRS", "CHORD_JIT_DEBUG",     "CHORD_JIT_DUMP_SOURCE",
    "CHORD_SM90_DECODE",    "CHORD_W4A16_PORTABLE",      "CHORD_VALIDATE_ROUTING", "CHORD_W4A16_PROFILE",
    "CHORD_W4A16_ENGINE",   "CHORD_W4A16_BM",            "CHORD_W4A16_BN",      "CHORD_W4A16_BK",
    "CHORD_W4A16_STAGES",   "CHORD_W4A16_WARPS_N",       "CHORD_W4A16_SPLIT_K", "CHORD_W4A16_GROUP_SUMS",
    "CHORD_W4A16_SEARCH",   "CHORD_W4A16_N_RUN",         "CHORD_W4A16_WARPS_M"};

const char* get(const char* name) {
  const char* value = std::getenv(name);
  return value;
}

std::optional<bool> read_flag(const char* name) {
  const char* value = get(name);
  if (value == nullptr) return std::nullopt;
  std::string v(value);
  if (v == "0") return false;
  if (v == "1") return true;
  fail(CHORD_ERROR_ENVIRONMENT, "environment variable {}='{}' is invalid: expected 0 or 1", name, v);
}

// Digits only: no sign, no space on either side (strtol alone would take " 64" and "+64"
// but not "64 ").
std::optional<int> read_positive_int(const char* name) {
  const char* value = get(name);
  if (value == nullptr) return std::nullopt;
  std::string v(value);
  long parsed = 0;
  bool ok = !v.empty() && v.size() <= 7 && v.find_first_not_of("0123456789") == std::string::npos;
  if (ok) parsed = std::stol(v);
  if (!ok || parsed <= 0 || parsed > (1 << 20)) {
    fail(CHORD_ERROR_ENVIRONMENT,
         "environment variable {}='{}' is invalid: expected a positive integer (digits only, at most 1048576)", name, v);
  }
  return static_cast<int>(parsed);
}

// One digit in [0, most] (no sign, no space).
std::optional<int> read_digit(const char* name, int most) {
  const char* value = get(name);
  if (value == nullptr) return std::nullopt;
  std::string v(value);
  if (v.size() != 1 || v[0] < '0' || v[0] > '0' + most) {
    fail(CHORD_ERROR_ENVIRONMENT, "environment variable {}='{}' is invalid: expected one of 0..{}", name, v, most);
  }
  return v[0] - '0';
}

// One of 1, 2, 4, 8 (the n blocks of a run, the split-K; no sign, no space).
std::optional<int> read_power_of_two_to_8(const char* name) {
  const char* value = get(name);
  if (value == nullptr) return std::nullopt;
  const std::string v(value);
  if (v != "1" && v != "2" && v != "4" && v != "8") {
    fail(CHORD_ERROR_ENVIRONMENT, "environment variable {}='{}' is invalid: expected 1, 2, 4 or 8", name, v);
  }
  return v[0] - '0';
}

// An absolute path with no leading or trailing white space (which would be a typo, and one
// side of it a relative path). `value` is the variable's whole value, `path` one of its paths.
std::string checked_path(const char* name, const std::string& value, const std::string& path) {
  if (path.empty() || path[0] != '/' || std::isspace(static_cast<unsigned char>(path.back()))) {
    fail(CHORD_ERROR_ENVIRONMENT,
         "environment variable {}='{}' is invalid: '{}' is not an absolute path without surrounding spaces", name,
         value, path);
  }
  return path;
}

// An absolute base directory from a variable, if it is set to one.
std::optional<std::string> absolute_dir(const char* value) {
  if (value == nullptr || value[0] != '/') return std::nullopt;
  return std::string(value);
}

// The user's cache root: $XDG_CACHE_HOME, else $HOME/.cache, else <home from the user
// database>/.cache; "" when there is none (the cache is then memory-only: a shared
// fallback such as /tmp/chord-<uid> could be planted by another user beforehand).
std::string default_cache_dir() {
  if (auto xdg = absolute_dir(get("XDG_CACHE_HOME"))) return *xdg + "/chord";
  std::optional<std::string> home = absolute_dir(get("HOME"));
  if (!home) {
    struct passwd entry, *found = nullptr;
    std::vector<char> buffer(16384);
    struct stat st;
    if (getpwuid_r(geteuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
        stat(found->pw_dir, &st) == 0 && S_ISDIR(st.st_mode)) {
      home = absolute_dir(found->pw_dir);
    }
  }
  return home ? *home + "/.cache/chord" : "";
}

// An empty value is an empty list: setting CHORD_CACHE_READONLY_DIRS= is how a user of the
// wheel turns its kernel layer off (the package sets the variable only where it is unset).
std::vector<std::string> read_path_list(const char* name) {
  std::vector<std::string> paths;
  const char* value = get(name);
  if (value == nullptr || *value == '\0') return paths;
  std::string list(value);
  size_t start = 0;
  for (;;) {
    const size_t end = list.find(':', start);
    paths.push_back(checked_path(name, list, list.substr(start, end == std::string::npos ? end : end - start)));
    if (end == std::string::npos) return paths;
    start = end + 1;
  }
}

// Variables chord's own tools and tests read (not the library): known, so not warned about.
constexpr const char* kToolVariables[] = {
    "CHORD_BAD_INPUT_CHILD", "CHORD_BAD_INPUT_REPORT", "CHORD_BENCH_COMMIT", "CHORD_BENCH_FLUSH",
    "CHORD_BENCH_FLUSH_PASSES", "CHORD_FUZZ_SECONDS", "CHORD_OTHER_LIBRARY", "CHORD_PYTEST_OUT",
    "CHORD_PY_CI_DIR", "CHORD_REQUIRE_BNB", "CHORD_REQUIRE_VLLM", "CHORD_SKIP_PORTABLE",
    "CHORD_VLLM_ACTIVATIONS"};

// A CHORD_* variable the library does not read is most likely a misspelt one that the
// user believes is in effect (e.g. CHORD_W4A16_CM for CHORD_W4A16_BM).
void warn_unknown_variables() {
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string name(*entry, std::strcspn(*entry, "="));
    if (name.rfind("CHORD_", 0) != 0) continue;
    const auto known = [&name](const char* k) { return name == k; };
    if (std::any_of(std::begin(kVariables), std::end(kVariables), known) ||
        std::any_of(std::begin(kToolVariables), std::end(kToolVariables), known)) {
      continue;
    }
    warn(fmt::format("environment variable {} is not one chord reads (docs/environment.md lists them); it has "
                     "no effect", name));
  }
}

// The deprecated CHORD_W4A16_PORTABLE and CHORD_SM90_DECODE, as the CHORD_W4A16_ENGINE value they
// stand for; nullopt where they choose nothing (unset, or only CHORD_W4A16_PORTABLE=0). Each one
// set is warned about once, naming its replacement.
struct DeprecatedEngineFlags {
  W4A16EngineKnob::Candidates candidates;
  std::string setting;  // e.g. "CHORD_SM90_DECODE=1", for messages
};

std::optional<DeprecatedEngineFlags> read_deprecated_engine_flags() {
  const std::optional<bool> portable = read_flag("CHORD_W4A16_PORTABLE");
  const std::optional<bool> decode = read_flag("CHORD_SM90_DECODE");
  auto named = [](const char* name, bool value, W4A16EngineKnob::Candidates candidates) {
    return DeprecatedEngineFlags{candidates, fmt::format("{}={}", name, value ? 1 : 0)};
  };
  std::optional<DeprecatedEngineFlags> portable_flag, decode_flag;
  if (portable) {
    if (*portable) {
      portable_flag = named("CHORD_W4A16_PORTABLE", true, W4A16EngineKnob::kPortable);
    } else {
      warn("environment variable CHORD_W4A16_PORTABLE is deprecated (CHORD_W4A16_ENGINE replaces it); "
           "CHORD_W4A16_PORTABLE=0 changes nothing: unset it");
    }
  }
  if (decode) {
    decode_flag = named("CHORD_SM90_DECODE", *decode,
                        *decode ? W4A16EngineKnob::kPortable : W4A16EngineKnob::kPreferWgmma);
  }
  for (const auto& flag : {portable_flag, decode_flag}) {
    if (!flag) continue;
    W4A16EngineKnob knob;
    knob.candidates = flag->candidates;
    warn(fmt::format("environment variable {} is deprecated: use CHORD_W4A16_ENGINE={} (docs/environment.md)",
                     flag->setting, w4a16_engine_knob_name(knob)));
  }
  // CHORD_W4A16_PORTABLE=1 rejects every WGMMA candidate, so CHORD_SM90_DECODE=0's ranking of
  // them first never chose a config next to it.
  return portable_flag ? portable_flag : decode_flag;
}

// CHORD_W4A16_ENGINE, with the deprecated variables translated into it. Where both are set they
// must agree on the candidates; a forcing value (mma_sync, wgmma, wgmma_ws) keeps the deprecated
// variable's candidates, which choose the config the forced engine starts from.
W4A16EngineKnob read_engine_knob() {
  const std::optional<DeprecatedEngineFlags> deprecated = read_deprecated_engine_flags();
  W4A16EngineKnob knob;
  if (const char* value = get("CHORD_W4A16_ENGINE")) {
    const std::optional<W4A16EngineKnob> parsed = parse_w4a16_engine_knob(value);
    if (!parsed) {
      fail(CHORD_ERROR_ENVIRONMENT,
           "environment variable CHORD_W4A16_ENGINE='{}' is invalid: expected auto, portable, prefer_wgmma, "
           "mma_sync, wgmma or wgmma_ws",
           value);
    }
    knob = *parsed;
    if (deprecated && !knob.forced && knob.candidates != deprecated->candidates) {
      W4A16EngineKnob meant;
      meant.candidates = deprecated->candidates;
      fail(CHORD_ERROR_ENVIRONMENT,
           "environment variables {} and CHORD_W4A16_ENGINE={} conflict: {} (deprecated) means "
           "CHORD_W4A16_ENGINE={}; set CHORD_W4A16_ENGINE alone",
           deprecated->setting, value, deprecated->setting, w4a16_engine_knob_name(meant));
    }
  }
  if (deprecated) knob.candidates = deprecated->candidates;
  return knob;
}

}  // namespace

const char* w4a16_engine_knob_name(const W4A16EngineKnob& knob) {
  if (knob.forced) return w4a16_engine_name(*knob.forced);
  switch (knob.candidates) {
    case W4A16EngineKnob::kAll: return "auto";
    case W4A16EngineKnob::kPortable: return "portable";
    case W4A16EngineKnob::kPreferWgmma: return "prefer_wgmma";
  }
  return "";
}

std::optional<W4A16EngineKnob> parse_w4a16_engine_knob(std::string_view name) {
  W4A16EngineKnob knob;
  for (auto candidates : {W4A16EngineKnob::kAll, W4A16EngineKnob::kPortable, W4A16EngineKnob::kPreferWgmma}) {
    knob.candidates = candidates;
    if (name == w4a16_engine_knob_name(knob)) return knob;
  }
  knob.candidates = W4A16EngineKnob::kAll;
  knob.forced = parse_w4a16_engine(name);
  if (!knob.forced) return std::nullopt;
  return knob;
}

Environment read_environment() {
  Environment e;
  warn_unknown_variables();
  if (const char* dir = get("CHORD_CACHE_DIR")) {
    std::string d(dir);
    if (d.empty()) fail(CHORD_ERROR_ENVIRONMENT, "environment variable CHORD_CACHE_DIR is set but empty");
    e.cache_dir = checked_path("CHORD_CACHE_DIR", d, d);
  } else {
    e.cache_dir = default_cache_dir();
  }
  e.cache_readonly_dirs = read_path_list("CHORD_CACHE_READONLY_DIRS");
  e.jit_debug = read_flag("CHORD_JIT_DEBUG").value_or(false);
  e.dump_source = read_flag("CHORD_JIT_DUMP_SOURCE").value_or(false);
  e.validate_routing = read_flag("CHORD_VALIDATE_ROUTING").value_or(false);
  if (const char* split = get("CHORD_W4A16_PROFILE")) {
    std::string p(split);
    if (p.empty() || p.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
      fail(CHORD_ERROR_ENVIRONMENT,
           "environment variable CHORD_W4A16_PROFILE='{}' is invalid: expected a tuning table's split (ep8, tp8, qwen3) "
           "or heuristic",
           p);
    }
    e.w4a16_table = p;
  }
  e.w4a16_engine = read_engine_knob();
  e.w4a16_bm = read_positive_int("CHORD_W4A16_BM");
  e.w4a16_bn = read_positive_int("CHORD_W4A16_BN");
  e.w4a16_bk = read_positive_int("CHORD_W4A16_BK");
  e.w4a16_stages = read_positive_int("CHORD_W4A16_STAGES");
  e.w4a16_warps_n = read_positive_int("CHORD_W4A16_WARPS_N");
  e.w4a16_warps_m = read_positive_int("CHORD_W4A16_WARPS_M");
  e.w4a16_split_k = read_power_of_two_to_8("CHORD_W4A16_SPLIT_K");  // checked even where a WGMMA call ignores it
  e.w4a16_group_sums = read_digit("CHORD_W4A16_GROUP_SUMS", 1);
  e.w4a16_n_run = read_power_of_two_to_8("CHORD_W4A16_N_RUN");
  e.w4a16_search = read_flag("CHORD_W4A16_SEARCH").value_or(true);
  return e;
}

const Environment& env() {
  static const Environment environment = read_environment();
  return environment;
}

}  // namespace chord
