// libFuzzer target: every input that reaches chord from outside the process.
//   - C API argument validation (all operators): any status other than SUCCESS (no work),
//     NO_DRIVER (valid input on this driverless machine) or INVALID_ARGUMENT with a message
//     naming one of the function's arguments is a bug, as is a crash.
//   - CHORD_* environment parsing: accepted values must be in range, rejected ones must be
//     ENVIRONMENT errors naming the variable.
//   - Tuning-table JSON: accepted tables must be well formed; everything else a chord Error.
//   - Disk-cache entries read back from disk, and the cubins in them (ELF headers, sections,
//     string tables, symbols, .nv.info records): never a crash; a refusal is an Error that
//     names the input. The CI step seeds this with real cubins of every kernel family and
//     crafted ones (tests/crafted_elf.hpp), so mutations start from well-formed ELFs.
// The last input byte picks the target (fuzz_targets.hpp).
// Runs only without a CUDA driver: valid arguments carry fake addresses.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cctype>
#include <cstdlib>
#include <fcntl.h>
#include <initializer_list>
#include <string>
#include <unistd.h>
#include <vector>

#include "cache/disk_cache.hpp"
#include "chord/chord.h"
#include "core/cubin_info.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/safe_file.hpp"
#include "fuzz_targets.hpp"
#include "launcher/driver_api.hpp"
#include "tuning_tables/tuning_table.hpp"

namespace {

[[noreturn]] void bug(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "chord fuzz: %s: %s\n", what.c_str(), detail.c_str());
  std::abort();
}

constexpr uintptr_t kBase = 0x100000;

int64_t size_value(FuzzedDataProvider& p) {
  static const int64_t interesting[] = {0,         1,          -1,         8,          16,         32,
                                        48,        64,         96,         128,        1024,       65536,
                                        65537,     1 << 20,    (1 << 20) + 64,        1 << 24,    int64_t{1} << 29,
                                        int64_t{1} << 30,      (int64_t{1} << 31) - 1, int64_t{1} << 31,
                                        int64_t{1} << 40,      INT64_MAX,  INT64_MIN};
  if (p.ConsumeBool()) return p.PickValueInArray(interesting);
  return p.ConsumeIntegral<int64_t>();
}

void* pointer(FuzzedDataProvider& p) {
  switch (p.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return nullptr;
    case 1: return reinterpret_cast<void*>(kBase + 16 * p.ConsumeIntegralInRange<uintptr_t>(0, 1 << 16));
    default: return reinterpret_cast<void*>(kBase + p.ConsumeIntegralInRange<uintptr_t>(0, 1 << 20));
  }
}

const int32_t* int_pointer(FuzzedDataProvider& p) { return static_cast<const int32_t*>(pointer(p)); }

chord_w4a16_weight_t weight_tag(FuzzedDataProvider& p) {
  chord_w4a16_weight_t t{CHORD_W4A16_MAGIC, CHORD_FORMAT_INT4_G32, chord_w4a16_layout_version(), 32, 2, 64, 128,
                         reinterpret_cast<void*>(kBase), reinterpret_cast<void*>(kBase + 4096)};
  if (p.ConsumeBool()) t.magic = p.ConsumeIntegral<uint32_t>();
  if (p.ConsumeBool()) {  // a group-128 format, with its group size or another
    t.format = CHORD_FORMAT_INT4_G128 + p.ConsumeIntegralInRange<uint32_t>(0, 3);
    t.group_size = p.ConsumeBool() ? 128 : 32;
  }
  if (p.ConsumeBool()) t.format = p.ConsumeIntegral<uint32_t>();
  if (p.ConsumeBool()) t.layout_version = p.ConsumeIntegral<uint32_t>();
  if (p.ConsumeBool()) t.group_size = p.ConsumeIntegral<uint32_t>();
  if (p.ConsumeBool()) t.experts = size_value(p);
  if (p.ConsumeBool()) t.n = size_value(p);
  if (p.ConsumeBool()) t.k = size_value(p);
  if (p.ConsumeBool()) t.weight_dev = pointer(p);
  if (p.ConsumeBool()) t.scales_dev = pointer(p);
  return t;
}

void check_status(const char* entry, chord_status_t status, std::initializer_list<const char*> names) {
  const std::string message = chord_last_error();
  switch (status) {
    case CHORD_SUCCESS:
      if (!message.empty()) bug(std::string(entry) + ": success with a message", message);
      return;
    case CHORD_ERROR_NO_DRIVER:
      if (message.find("libcuda") == std::string::npos) bug(std::string(entry) + ": NO_DRIVER without libcuda", message);
      return;
    case CHORD_ERROR_INVALID_ARGUMENT:
      for (const char* name : names) {
        if (message.find(name) != std::string::npos) return;
      }
      bug(std::string(entry) + ": the message names no argument", message);
    default:
      bug(std::string(entry) + ": unexpected status " + chord_status_string(status), message);
  }
}

void fuzz_operator(int which, FuzzedDataProvider& p) {
  chord_stream_t stream = nullptr;
  switch (which) {
    case 0:
    case 1: {
      void* src = pointer(p);
      void* scales = pointer(p);
      void* out = pointer(p);
      int64_t e = size_value(p), n = size_value(p), k = size_value(p);
      chord_status_t s = which == 0 ? chord_int4_dequantize_codes(src, scales, out, e, n, k, stream)
                                    : chord_int4_dequantize_compressed(src, scales, out, e, n, k, stream);
      check_status("int4_dequantize", s, {"'codes'", "'packed'", "'scales'", "'out'", "'E'", "'N'", "'K'", "E*N*K"});
      return;
    }
    case 2: {
      int format = p.ConsumeIntegralInRange<int>(-2, 3);
      if (p.ConsumeBool()) format |= CHORD_W4A16_SRC_SCALES_FP16;
      if (p.ConsumeBool()) format |= CHORD_W4A16_SRC_GROUP_128;  // group 128: K % 128 == 0 too
      void* src = pointer(p);
      void* scales = pointer(p);
      int64_t e = size_value(p), n = size_value(p), k = size_value(p);
      void* w_out = pointer(p);
      void* s_out = pointer(p);
      chord_w4a16_weight_t tag{};
      chord_status_t s =
          chord_w4a16_pack(src, format, scales, e, n, k, w_out, s_out, p.ConsumeBool() ? &tag : nullptr, stream);
      check_status("w4a16_pack", s,
                   {"'src_format'", "'src'", "'scales'", "'E'", "'N'", "'K'", "'weight_out'", "'scales_out'", "'weight'"});
      if (p.ConsumeBool()) {  // the zero-point entry point: the same checks plus its zero points
        s = chord_w4a16_pack_zp(src, format, scales, pointer(p), e, n, k, w_out, s_out,
                                p.ConsumeBool() ? &tag : nullptr, stream);
        check_status("w4a16_pack_zp", s,
                     {"'src_format'", "'src'", "'scales'", "'zero_points'", "'E'", "'N'", "'K'", "'weight_out'",
                      "'scales_out'", "'weight'"});
      }
      return;
    }
    case 3: {
      chord_w4a16_weight_t tag = weight_tag(p);
      chord_status_t s = chord_w4a16_dequantize(p.ConsumeBool() ? &tag : nullptr, pointer(p), stream);
      check_status("w4a16_dequantize", s, {"'weight", "'out'"});
      return;
    }
    case 4: {
      chord_w4a16_weight_t tag = weight_tag(p);
      void* a = pointer(p);
      int64_t m = size_value(p);
      const int32_t* idx = int_pointer(p);
      chord_status_t s = chord_w4a16_contiguous(a, m, p.ConsumeBool() ? &tag : nullptr, idx, pointer(p), stream);
      check_status("w4a16_contiguous", s, {"'weight", "'m'", "'a'", "'m_indices'", "'out'"});
      return;
    }
    case 5: {
      chord_w4a16_weight_t tag = weight_tag(p);
      void* a = pointer(p);
      int64_t g = size_value(p), max_m = size_value(p), expected = size_value(p);
      const int32_t* masked = int_pointer(p);
      chord_status_t s = chord_w4a16_masked(a, g, max_m, &tag, masked, expected, pointer(p), stream);
      check_status("w4a16_masked", s, {"'weight", "'G'", "'max_m'", "G*max_m", "'a'", "'masked_m'", "'out'"});
      return;
    }
    case 6: {
      chord_w4a16_weight_t tag = weight_tag(p);
      void* a = pointer(p);
      int64_t rows = size_value(p);
      const int32_t* offsets = int_pointer(p);
      chord_status_t s = chord_w4a16_offsets(a, rows, &tag, offsets, pointer(p), stream);
      check_status("w4a16_offsets", s, {"'weight", "'S'", "'a'", "'offsets'", "'out'"});
      return;
    }
    default: {
      chord_w4a16_weight_t tag = weight_tag(p);
      void* a = pointer(p);
      int64_t m = size_value(p), capacity = size_value(p), top_k = size_value(p), block = size_value(p);
      const int32_t* ids = int_pointer(p);
      const int32_t* experts = int_pointer(p);
      const int32_t* ntp = int_pointer(p);
      chord_status_t s = chord_w4a16_indexed(a, m, &tag, ids, capacity, experts, ntp, top_k, block, pointer(p), stream);
      check_status("w4a16_indexed", s,
                   {"'weight", "'M'", "'top_k'", "'capacity'", "'block_size'", "'a'", "'sorted_ids'", "'expert_ids'",
                    "'num_tokens_padded'", "'out'"});
      return;
    }
  }
}

const char* const kVariables[] = {"CHORD_CACHE_DIR",        "CHORD_CACHE_READONLY_DIRS", "CHORD_JIT_DEBUG",
                                  "CHORD_JIT_DUMP_SOURCE",  "CHORD_SM90_DECODE",         "CHORD_W4A16_BM",
                                  "CHORD_W4A16_BN",         "CHORD_W4A16_BK",            "CHORD_W4A16_STAGES",
                                  "CHORD_VALIDATE_ROUTING", "CHORD_W4A16_PROFILE",       "CHORD_W4A16_ENGINE",
                                  "CHORD_W4A16_PORTABLE",   "CHORD_W4A16_GROUP_SUMS",    "CHORD_W4A16_N_RUN",
                                  "CHORD_W4A16_WARPS_N",    "CHORD_W4A16_WARPS_M",       "CHORD_W4A16_SPLIT_K"};

// An absolute path without surrounding white space (what a path variable may hold).
bool clean_path(const std::string& path) {
  return !path.empty() && path[0] == '/' && !std::isspace(static_cast<unsigned char>(path.back()));
}

void fuzz_environment(FuzzedDataProvider& p) {
  for (const char* v : kVariables) unsetenv(v);
  const char* name = p.PickValueInArray(kVariables);
  const std::string value = p.ConsumeRandomLengthString(64);
  setenv(name, value.c_str(), 1);
  try {
    chord::Environment e = chord::read_environment();
    if (!e.cache_dir.empty() && !clean_path(e.cache_dir)) bug("accepted a cache dir that is no clean path", e.cache_dir);
    for (const auto& dir : e.cache_readonly_dirs) {
      if (!clean_path(dir)) bug("accepted a read-only cache dir that is no clean path", dir);
    }
    for (const auto& forced : {e.w4a16_bm, e.w4a16_bn, e.w4a16_bk, e.w4a16_stages, e.w4a16_warps_n, e.w4a16_warps_m}) {
      if (forced && (*forced <= 0 || *forced > (1 << 20))) bug(std::string("accepted ") + name, value);
    }
    if (e.w4a16_group_sums && (*e.w4a16_group_sums < 0 || *e.w4a16_group_sums >= chord::kW4A16GroupSumsCount)) {
      bug("accepted CHORD_W4A16_GROUP_SUMS", value);
    }
    if (e.w4a16_n_run && *e.w4a16_n_run != 1 && *e.w4a16_n_run != 2 && *e.w4a16_n_run != 4 && *e.w4a16_n_run != 8) {
      bug("accepted CHORD_W4A16_N_RUN", value);
    }
  } catch (const chord::Error& e) {
    if (e.status() != CHORD_ERROR_ENVIRONMENT || std::string(e.what()).find(name) == std::string::npos) {
      bug(std::string("bad rejection of ") + name, e.what());
    }
  }
  unsetenv(name);
}

void fuzz_tuning_table(FuzzedDataProvider& p) {
  const std::string text = p.ConsumeRemainingBytesAsString();
  try {
    chord::TuningTable t = chord::parse_tuning_table("fuzz.json", text);
    if (t.rows.empty()) bug("accepted a table without rows", text);
    for (const bool nf4 : {false, true}) {  // each weight kind's range rows: sorted, contiguous from 0
      int64_t next = 0;
      for (const auto& row : t.rows) {
        if (!row.range_row() || !row.applies_to(nf4)) continue;
        if (row.min_m != next || row.max_m < row.min_m) bug("accepted unsorted ranges", text);
        next = row.max_m + 1;
      }
      if (next == 0) bug("accepted a weight kind without range rows", text);
    }
    for (const auto& row : t.rows) {
      for (const bool nf4 : {false, true}) {
        if (!row.applies_to(nf4)) continue;
        const auto weight = nf4 ? chord::kW4A16WeightNF4 : chord::kW4A16WeightInt4;
        if (const char* why = chord::w4a16_config_for_weight(row.config, weight).error()) {
          bug(std::string("accepted an invalid config: ") + why, text);
        }
      }
    }
  } catch (const chord::Error& e) {
    if (e.status() != CHORD_ERROR_INVALID_ARGUMENT && e.status() != CHORD_ERROR_UNSUPPORTED) {
      bug("tuning table: unexpected status", e.what());
    }
  }
}

std::string& cache_dir() {
  static std::string dir = [] {
    char pattern[] = "/tmp/chord-fuzz-XXXXXX";
    return std::string(mkdtemp(pattern));
  }();
  return dir;
}

// The runtime's view of an entry: its checksum and key, then its payload as a cubin.
void fuzz_cache_entry(FuzzedDataProvider& p) {
  static chord::DiskCache cache(cache_dir());
  const chord::KernelKey key = chord::fuzz::kEntryKey;
  const bool damage = p.ConsumeBool();  // a well-formed entry whose bytes are then damaged
  std::string bytes = p.ConsumeRemainingBytesAsString();
  if (damage) {
    std::vector<char> entry = chord::encode_cache_entry(key, std::vector<char>(bytes.begin(), bytes.end()));
    if (!bytes.empty()) entry[bytes.size() % entry.size()] ^= static_cast<char>(bytes[0] | 1);
    bytes.assign(entry.begin(), entry.end());
  }
  const std::string path = cache.entry_path(key);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || !chord::write_all(fd, bytes.data(), bytes.size())) bug("cache: cannot write the entry", path);
  ::close(fd);
  auto check = [](const std::vector<char>& payload, const std::string& entry) {
    chord::read_cubin_info(payload, "kernel cache entry " + entry);
  };
  auto loaded = cache.load(key, check);
  if (loaded && !damage) {
    // Only a valid encoding of (key, payload) may load; re-encoding must give the bytes back.
    std::vector<char> again = chord::encode_cache_entry(key, *loaded);
    if (std::string(again.begin(), again.end()) != bytes) bug("cache: loaded an entry that does not re-encode", "");
  }
  ::unlink(path.c_str());
}

// How deep the cubin inputs got: the CI step prints these and fails when no input was read
// through its symbols (the metadata) and its .nv.info records (a register count).
struct CubinDepth {
  uint64_t inputs = 0, refused = 0, with_meta = 0, with_registers = 0;
  ~CubinDepth() {
    std::fprintf(stderr, "chord fuzz: cubin inputs %llu, refused %llu, read with metadata %llu, with registers %llu\n",
                 static_cast<unsigned long long>(inputs), static_cast<unsigned long long>(refused),
                 static_cast<unsigned long long>(with_meta), static_cast<unsigned long long>(with_registers));
  }
};
CubinDepth g_depth;

void fuzz_cubin(FuzzedDataProvider& p) {
  const std::string bytes = p.ConsumeRemainingBytesAsString();
  ++g_depth.inputs;
  try {
    const chord::CubinInfo info = chord::read_cubin_info(std::vector<char>(bytes.begin(), bytes.end()), "fuzz input");
    g_depth.with_meta += info.has_meta;
    g_depth.with_registers += info.registers > 0;
  } catch (const chord::Error& e) {
    ++g_depth.refused;
    if (e.status() != CHORD_ERROR_INTERNAL) bug("cubin: unexpected status", e.what());
    if (std::string(e.what()).find("fuzz input") == std::string::npos) bug("cubin: the error names no input", e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::string why;
  if (chord::driver_available(&why)) {
    std::fprintf(stderr, "chord fuzz: a CUDA driver is present; this target passes fake device addresses and "
                         "runs only on machines without one\n");
    std::exit(1);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider p(data, size);
  const int target = p.ConsumeIntegralInRange<int>(0, chord::fuzz::kTargetCount - 1);
  if (target < chord::fuzz::kEnvironment) fuzz_operator(target, p);
  else if (target == chord::fuzz::kEnvironment) fuzz_environment(p);
  else if (target == chord::fuzz::kTuningTable) fuzz_tuning_table(p);
  else if (target == chord::fuzz::kCacheEntry) fuzz_cache_entry(p);
  else fuzz_cubin(p);
  return 0;
}
