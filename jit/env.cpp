#include "jit/env.hpp"

#include <cerrno>
#include <cstdlib>
#include <unistd.h>

#include "jit/error.hpp"

namespace chord {
namespace {

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

std::optional<int> read_positive_int(const char* name) {
  const char* value = get(name);
  if (value == nullptr) return std::nullopt;
  std::string v(value);
  char* end = nullptr;
  errno = 0;
  long parsed = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || parsed <= 0 || parsed > (1 << 20)) {
    fail(CHORD_ERROR_ENVIRONMENT, "environment variable {}='{}' is invalid: expected a positive integer",
         name, v);
  }
  return static_cast<int>(parsed);
}

std::string default_cache_dir() {
  const char* home = get("HOME");
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/chord";
  return "/tmp/chord-cache-" + std::to_string(getuid());
}

}  // namespace

Environment read_environment() {
  Environment e;
  if (const char* dir = get("CHORD_CACHE_DIR")) {
    std::string d(dir);
    if (d.empty()) fail(CHORD_ERROR_ENVIRONMENT, "environment variable CHORD_CACHE_DIR is set but empty");
    if (d[0] != '/') {
      fail(CHORD_ERROR_ENVIRONMENT, "environment variable CHORD_CACHE_DIR='{}' is invalid: expected an absolute path", d);
    }
    e.cache_dir = d;
  } else {
    e.cache_dir = default_cache_dir();
  }
  e.jit_debug = read_flag("CHORD_JIT_DEBUG").value_or(false);
  e.dump_source = read_flag("CHORD_JIT_DUMP_SOURCE").value_or(false);
  e.sm90_decode = read_flag("CHORD_SM90_DECODE");
  e.validate_routing = read_flag("CHORD_VALIDATE_ROUTING").value_or(false);
  e.w4a16_portable = read_flag("CHORD_W4A16_PORTABLE").value_or(false);
  if (const char* profile = get("CHORD_W4A16_PROFILE")) {
    std::string p(profile);
    if (p.empty() || p.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
      fail(CHORD_ERROR_ENVIRONMENT,
           "environment variable CHORD_W4A16_PROFILE='{}' is invalid: expected a profile name (ep8, tp8, qwen3, heuristic)",
           p);
    }
    e.w4a16_profile = p;
  }
  if (const char* engine = get("CHORD_W4A16_ENGINE")) {
    e.w4a16_engine = parse_w4a16_engine(engine);
    if (!e.w4a16_engine) {
      fail(CHORD_ERROR_ENVIRONMENT,
           "environment variable CHORD_W4A16_ENGINE='{}' is invalid: expected mma_sync, wgmma or wgmma_ws", engine);
    }
  }
  e.w4a16_bm = read_positive_int("CHORD_W4A16_BM");
  e.w4a16_bn = read_positive_int("CHORD_W4A16_BN");
  e.w4a16_bk = read_positive_int("CHORD_W4A16_BK");
  e.w4a16_stages = read_positive_int("CHORD_W4A16_STAGES");
  e.w4a16_warps_n = read_positive_int("CHORD_W4A16_WARPS_N");
  e.w4a16_split_k = read_positive_int("CHORD_W4A16_SPLIT_K");
  return e;
}

const Environment& env() {
  static const Environment environment = read_environment();
  return environment;
}

}  // namespace chord
