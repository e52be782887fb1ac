// The bad-input table of the C API (docs/reliability.md), shared by the CPU test (fake,
// never dereferenced addresses: validation must reject before any driver call) and the GPU
// test (real buffers: a rejected call must leave its output untouched).
//
// Every case makes exactly one argument bad; all other arguments are valid for a small
// problem (E = 2, N = 64, K = 128, 128 rows), so the error must come from that argument.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chord/chord.h"

namespace chord::test {

// Buffers the cases point into. Sizes (GPU): a >= 32 KiB, out >= 64 KiB (poisoned by the
// GPU test; every case that could write aims at it), routing >= 4 KiB of int32, codes >=
// E*N*K bytes, src_scales >= E*N*K/16 bytes; tag is a valid packed weight of that shape.
struct BadInputBuffers {
  void* a = nullptr;
  void* out = nullptr;
  void* routing = nullptr;
  void* codes = nullptr;
  void* src_scales = nullptr;
  chord_w4a16_weight_t tag{};
  chord_stream_t stream = nullptr;
};

constexpr int64_t kCaseE = 2, kCaseN = 64, kCaseK = 128, kCaseRows = 128;

struct BadInputCase {
  const char* entry;                  // C API function
  const char* what;                   // the bad input, as the docs table lists it
  chord_status_t expect;
  std::vector<std::string> needles;   // each must appear in chord_last_error()
  std::function<chord_status_t()> call;
};

inline void* shifted(void* p, uintptr_t bytes) { return static_cast<char*>(p) + bytes; }
inline const int32_t* ints(void* p, uintptr_t bytes = 0) { return static_cast<const int32_t*>(shifted(p, bytes)); }

inline std::vector<BadInputCase> bad_input_cases(const BadInputBuffers& b) {
  constexpr auto kInvalid = CHORD_ERROR_INVALID_ARGUMENT;
  const int64_t E = kCaseE, N = kCaseN, K = kCaseK, M = kCaseRows;
  auto with = [&b](auto edit) {
    chord_w4a16_weight_t t = b.tag;
    edit(t);
    return t;
  };
  // Tags are captured by value so each case owns its (bad) copy.
  auto contiguous = [b](chord_w4a16_weight_t t, int64_t m) {
    return [b, t, m] { return chord_w4a16_contiguous(b.a, m, &t, ints(b.routing), b.out, b.stream); };
  };
  auto dequantize = [b](chord_w4a16_weight_t t) { return [b, t] { return chord_w4a16_dequantize(&t, b.out, b.stream); }; };
  void* w_out = b.out;
  void* s_out = shifted(b.out, 32768);
  std::vector<BadInputCase> c;
  // ---- chord_int4_dequantize_codes / _compressed
  c.push_back({"int4_dequantize_codes", "codes = NULL", kInvalid, {"'codes'", "null"},
               [=] { return chord_int4_dequantize_codes(nullptr, b.src_scales, b.out, E, N, K, b.stream); }});
  c.push_back({"int4_dequantize_compressed", "packed misaligned (+2 bytes)", kInvalid, {"'packed'", "aligned"},
               [=] { return chord_int4_dequantize_compressed(shifted(b.codes, 2), b.src_scales, b.out, E, N, K, b.stream); }});
  c.push_back({"int4_dequantize_codes", "scales misaligned (+1 byte)", kInvalid, {"'scales'", "aligned"},
               [=] { return chord_int4_dequantize_codes(b.codes, shifted(b.src_scales, 1), b.out, E, N, K, b.stream); }});
  c.push_back({"int4_dequantize_codes", "out misaligned (+8 bytes)", kInvalid, {"'out'", "16-byte"},
               [=] { return chord_int4_dequantize_codes(b.codes, b.src_scales, shifted(b.out, 8), E, N, K, b.stream); }});
  c.push_back({"int4_dequantize_codes", "K = 48 (not a multiple of 32)", kInvalid, {"'K'", "multiple of 32"},
               [=] { return chord_int4_dequantize_codes(b.codes, b.src_scales, b.out, E, N, 48, b.stream); }});
  c.push_back({"int4_dequantize_codes", "E = -1", kInvalid, {"'E'", "out of range"},
               [=] { return chord_int4_dequantize_codes(b.codes, b.src_scales, b.out, -1, N, K, b.stream); }});
  c.push_back({"int4_dequantize_compressed", "N = -5", kInvalid, {"'N'", "out of range"},
               [=] { return chord_int4_dequantize_compressed(b.codes, b.src_scales, b.out, E, -5, K, b.stream); }});
  c.push_back({"int4_dequantize_codes", "K = 2^25 (above 2^24)", kInvalid, {"'K'", "out of range"},
               [=] { return chord_int4_dequantize_codes(b.codes, b.src_scales, b.out, 1, 16, int64_t{1} << 25, b.stream); }});
  c.push_back({"int4_dequantize_codes", "E*N*K = 2^20*2^24*2^20 (overflows)", kInvalid, {"E*N*K", "exceeds"},
               [=] { return chord_int4_dequantize_codes(b.codes, b.src_scales, b.out, 1 << 20, 1 << 24, 1 << 20, b.stream); }});
  // ---- chord_w4a16_pack
  c.push_back({"w4a16_pack", "src_format = 2", kInvalid, {"'src_format'"},
               [=] { return chord_w4a16_pack(b.codes, 2, b.src_scales, E, N, K, w_out, s_out, nullptr, b.stream); }});
  c.push_back({"w4a16_pack", "N = 40 (not a multiple of 16)", kInvalid, {"'N'", "multiple of 16"}, [=] {
                 chord_w4a16_weight_t t{};
                 return chord_w4a16_pack(b.codes, 0, b.src_scales, E, 40, K, w_out, s_out, &t, b.stream);
               }});
  c.push_back({"w4a16_pack", "K = 96 (not a multiple of 64)", kInvalid, {"'K'", "multiple of 64"}, [=] {
                 chord_w4a16_weight_t t{};
                 return chord_w4a16_pack(b.codes, 0, b.src_scales, E, N, 96, w_out, s_out, &t, b.stream);
               }});
  c.push_back({"w4a16_pack", "E = 0", kInvalid, {"'E'", "out of range"}, [=] {
                 chord_w4a16_weight_t t{};
                 return chord_w4a16_pack(b.codes, 0, b.src_scales, 0, N, K, w_out, s_out, &t, b.stream);
               }});
  c.push_back({"w4a16_pack", "E = 65537 (above 2^16)", kInvalid, {"'E'", "out of range"}, [=] {
                 chord_w4a16_weight_t t{};
                 return chord_w4a16_pack(b.codes, 0, b.src_scales, 65537, N, K, w_out, s_out, &t, b.stream);
               }});
  c.push_back({"w4a16_pack", "N = 2^21 (above 2^20)", kInvalid, {"'N'", "out of range"}, [=] {
                 chord_w4a16_weight_t t{};
                 return chord_w4a16_pack(b.codes, 0, b.src_scales, E, int64_t{1} << 21, K, w_out, s_out, &t, b.stream);
               }});
  c.push_back({"w4a16_pack", "weight_out misaligned (+4 bytes)", kInvalid, {"'weight_out'", "16-byte"}, [=] {
                 chord_w4a16_weight_t t{};
                 return chord_w4a16_pack(b.codes, 0, b.src_scales, E, N, K, shifted(w_out, 4), s_out, &t, b.stream);
               }});
  c.push_back({"w4a16_pack", "weight (the tag to fill) = NULL", kInvalid, {"'weight'", "null"},
               [=] { return chord_w4a16_pack(b.codes, 0, b.src_scales, E, N, K, w_out, s_out, nullptr, b.stream); }});
  c.push_back({"w4a16_pack", "src = NULL", kInvalid, {"'src'", "null"}, [=] {
                 chord_w4a16_weight_t t{};
                 return chord_w4a16_pack(nullptr, 0, b.src_scales, E, N, K, w_out, s_out, &t, b.stream);
               }});
  c.push_back({"w4a16_pack", "compressed src misaligned (+2 bytes)", kInvalid, {"'src'", "4-byte"}, [=] {
                 chord_w4a16_weight_t t{};
                 return chord_w4a16_pack(shifted(b.codes, 2), 1, b.src_scales, E, N, K, w_out, s_out, &t, b.stream);
               }});
  // ---- chord_w4a16_dequantize: the weight tag
  c.push_back({"w4a16_dequantize", "weight = NULL", kInvalid, {"'weight'", "null"},
               [=] { return chord_w4a16_dequantize(nullptr, b.out, b.stream); }});
  c.push_back({"w4a16_dequantize", "tag magic = 0 (not a packed weight)", kInvalid, {"'weight'", "magic"},
               dequantize(with([](auto& t) { t.magic = 0; }))});
  c.push_back({"w4a16_dequantize", "tag format = 2", kInvalid, {"'weight'", "format 2"},
               dequantize(with([](auto& t) { t.format = 2; }))});
  c.push_back({"w4a16_dequantize", "tag layout_version = 99", kInvalid, {"'weight'", "layout version 99"},
               dequantize(with([](auto& t) { t.layout_version = 99; }))});
  c.push_back({"w4a16_dequantize", "tag group_size = 128", kInvalid, {"'weight'", "group size 128"},
               dequantize(with([](auto& t) { t.group_size = 128; }))});
  c.push_back({"w4a16_dequantize", "tag experts = 0", kInvalid, {"'weight'", "'E'"},
               dequantize(with([](auto& t) { t.experts = 0; }))});
  c.push_back({"w4a16_dequantize", "tag n = 40", kInvalid, {"'weight'", "'N'"}, dequantize(with([](auto& t) { t.n = 40; }))});
  c.push_back({"w4a16_dequantize", "tag k = -64", kInvalid, {"'weight'", "'K'"}, dequantize(with([](auto& t) { t.k = -64; }))});
  c.push_back({"w4a16_dequantize", "tag weight_dev = NULL", kInvalid, {"'weight.weight_dev'", "null"},
               dequantize(with([](auto& t) { t.weight_dev = nullptr; }))});
  c.push_back({"w4a16_dequantize", "tag scales_dev misaligned (+2 bytes)", kInvalid, {"'weight.scales_dev'", "aligned"},
               dequantize(with([](auto& t) { t.scales_dev = shifted(t.scales_dev, 2); }))});
  c.push_back({"w4a16_dequantize", "out = NULL", kInvalid, {"'out'", "null"},
               [=] { return chord_w4a16_dequantize(&b.tag, nullptr, b.stream); }});
  // ---- chord_w4a16_contiguous
  c.push_back({"w4a16_contiguous", "m = -1", kInvalid, {"'m'", "out of range"}, contiguous(b.tag, -1)});
  c.push_back({"w4a16_contiguous", "m = 2^31 (above 2^30)", kInvalid, {"'m'", "out of range"},
               contiguous(b.tag, int64_t{1} << 31)});
  c.push_back({"w4a16_contiguous", "tag layout_version = 0 (stale packing)", kInvalid, {"'weight'", "re-pack"},
               contiguous(with([](auto& t) { t.layout_version = 0; }), M)});
  c.push_back({"w4a16_contiguous", "a misaligned (+2 bytes)", kInvalid, {"'a'", "16-byte"},
               [=] { return chord_w4a16_contiguous(shifted(b.a, 2), M, &b.tag, ints(b.routing), b.out, b.stream); }});
  c.push_back({"w4a16_contiguous", "m_indices = NULL", kInvalid, {"'m_indices'", "null"},
               [=] { return chord_w4a16_contiguous(b.a, M, &b.tag, nullptr, b.out, b.stream); }});
  c.push_back({"w4a16_contiguous", "m_indices misaligned (+2 bytes)", kInvalid, {"'m_indices'", "4-byte"},
               [=] { return chord_w4a16_contiguous(b.a, M, &b.tag, ints(b.routing, 2), b.out, b.stream); }});
  c.push_back({"w4a16_contiguous", "out = NULL", kInvalid, {"'out'", "null"},
               [=] { return chord_w4a16_contiguous(b.a, M, &b.tag, ints(b.routing), nullptr, b.stream); }});
  // ---- chord_w4a16_masked
  c.push_back({"w4a16_masked", "G = 3 > E = 2", kInvalid, {"'G'", "[0, 2]"},
               [=] { return chord_w4a16_masked(b.a, 3, 8, &b.tag, ints(b.routing), 0, b.out, b.stream); }});
  c.push_back({"w4a16_masked", "G = -1", kInvalid, {"'G'", "out of range"},
               [=] { return chord_w4a16_masked(b.a, -1, 8, &b.tag, ints(b.routing), 0, b.out, b.stream); }});
  c.push_back({"w4a16_masked", "max_m = -8", kInvalid, {"'max_m'", "out of range"},
               [=] { return chord_w4a16_masked(b.a, E, -8, &b.tag, ints(b.routing), 0, b.out, b.stream); }});
  c.push_back({"w4a16_masked", "G*max_m = 2*2^29 (above 2^30-1)", kInvalid, {"G*max_m", "exceeds"},
               [=] { return chord_w4a16_masked(b.a, E, int64_t{1} << 29, &b.tag, ints(b.routing), 0, b.out, b.stream); }});
  c.push_back({"w4a16_masked", "masked_m = NULL", kInvalid, {"'masked_m'", "null"},
               [=] { return chord_w4a16_masked(b.a, E, 8, &b.tag, nullptr, 0, b.out, b.stream); }});
  const chord_w4a16_weight_t no_magic = with([](auto& t) { t.magic = 0; });
  c.push_back({"w4a16_masked", "tag magic = 0 (not a packed weight)", kInvalid, {"'weight'", "magic"},
               [=] { return chord_w4a16_masked(b.a, E, 8, &no_magic, ints(b.routing), 0, b.out, b.stream); }});
  // ---- chord_w4a16_offsets
  c.push_back({"w4a16_offsets", "S = -3", kInvalid, {"'S'", "out of range"},
               [=] { return chord_w4a16_offsets(b.a, -3, &b.tag, ints(b.routing), b.out, b.stream); }});
  c.push_back({"w4a16_offsets", "offsets = NULL", kInvalid, {"'offsets'", "null"},
               [=] { return chord_w4a16_offsets(b.a, M, &b.tag, nullptr, b.out, b.stream); }});
  c.push_back({"w4a16_offsets", "out misaligned (+2 bytes)", kInvalid, {"'out'", "16-byte"},
               [=] { return chord_w4a16_offsets(b.a, M, &b.tag, ints(b.routing), shifted(b.out, 2), b.stream); }});
  c.push_back({"w4a16_offsets", "tag k = 100 (not a multiple of 64)", kInvalid, {"'weight'", "'K'", "multiple of 64"},
               [=] {
                 chord_w4a16_weight_t t = b.tag;
                 t.k = 100;
                 return chord_w4a16_offsets(b.a, M, &t, ints(b.routing), b.out, b.stream);
               }});
  // ---- chord_w4a16_indexed (routing at routing[0..], sorted_ids / expert_ids / ntp)
  const int32_t* ids = ints(b.routing);
  const int32_t* experts = ints(b.routing, 2048);
  const int32_t* ntp = ints(b.routing, 3072);
  c.push_back({"w4a16_indexed", "top_k = 0", kInvalid, {"'top_k'", "out of range"},
               [=] { return chord_w4a16_indexed(b.a, 16, &b.tag, ids, 64, experts, ntp, 0, 16, b.out, b.stream); }});
  c.push_back({"w4a16_indexed", "block_size = 12 (not a multiple of 8)", kInvalid, {"'block_size'", "multiple of 8"},
               [=] { return chord_w4a16_indexed(b.a, 16, &b.tag, ids, 64, experts, ntp, 2, 12, b.out, b.stream); }});
  c.push_back({"w4a16_indexed", "block_size = 0", kInvalid, {"'block_size'", "out of range"},
               [=] { return chord_w4a16_indexed(b.a, 16, &b.tag, ids, 64, experts, ntp, 2, 0, b.out, b.stream); }});
  c.push_back({"w4a16_indexed", "M*top_k overflows int32 (M = 2^29, top_k = 8)", kInvalid, {"'M'", "out of range"},
               [=] {
                 return chord_w4a16_indexed(b.a, int64_t{1} << 29, &b.tag, ids, 64, experts, ntp, 8, 16, b.out,
                                            b.stream);
               }});
  c.push_back({"w4a16_indexed", "capacity = -1", kInvalid, {"'capacity'", "out of range"},
               [=] { return chord_w4a16_indexed(b.a, 16, &b.tag, ids, -1, experts, ntp, 2, 16, b.out, b.stream); }});
  c.push_back({"w4a16_indexed", "sorted_ids = NULL", kInvalid, {"'sorted_ids'", "null"},
               [=] { return chord_w4a16_indexed(b.a, 16, &b.tag, nullptr, 64, experts, ntp, 2, 16, b.out, b.stream); }});
  c.push_back({"w4a16_indexed", "expert_ids misaligned (+1 byte)", kInvalid, {"'expert_ids'", "4-byte"}, [=] {
                 return chord_w4a16_indexed(b.a, 16, &b.tag, ids, 64, ints(b.routing, 2049), ntp, 2, 16, b.out, b.stream);
               }});
  const chord_w4a16_weight_t group_128 = with([](auto& t) { t.group_size = 128; });
  c.push_back({"w4a16_indexed", "tag group_size = 128", kInvalid, {"'weight'", "group size 128"},
               [=] { return chord_w4a16_indexed(b.a, 16, &group_128, ids, 64, experts, ntp, 2, 16, b.out, b.stream); }});
  c.push_back({"w4a16_indexed", "num_tokens_padded = NULL", kInvalid, {"'num_tokens_padded'", "null"},
               [=] { return chord_w4a16_indexed(b.a, 16, &b.tag, ids, 64, experts, nullptr, 2, 16, b.out, b.stream); }});
  c.push_back({"w4a16_indexed", "a = NULL", kInvalid, {"'a'", "null"},
               [=] { return chord_w4a16_indexed(nullptr, 16, &b.tag, ids, 64, experts, ntp, 2, 16, b.out, b.stream); }});
  c.push_back({"w4a16_indexed", "weight = NULL", kInvalid, {"'weight'", "null"},
               [=] { return chord_w4a16_indexed(b.a, 16, nullptr, ids, 64, experts, ntp, 2, 16, b.out, b.stream); }});
  // ---- outputs that overlap another buffer of the call (no operator works in place)
  c.push_back({"w4a16_pack", "scales_out inside weight_out (+4096 bytes)", kInvalid,
               {"'weight_out'", "'scales_out'", "overlap"}, [=] {
                 chord_w4a16_weight_t t{};
                 return chord_w4a16_pack(b.codes, 0, b.src_scales, E, N, K, w_out, shifted(w_out, 4096), &t, b.stream);
               }});
  c.push_back({"w4a16_offsets", "a = out (in place)", kInvalid, {"'out'", "'a'", "overlap"},
               [=] { return chord_w4a16_offsets(b.out, M, &b.tag, ints(b.routing), b.out, b.stream); }});
  c.push_back({"w4a16_indexed", "sorted_ids inside out", kInvalid, {"'out'", "'sorted_ids'", "overlap"},
               [=] { return chord_w4a16_indexed(b.a, 16, &b.tag, ints(b.out, 256), 64, experts, ntp, 2, 16, b.out, b.stream); }});
  return c;
}

// Calls that do no work must succeed without touching any pointer (all NULL here).
struct EmptyCase {
  const char* entry;
  const char* what;
  std::function<chord_status_t()> call;
};

inline std::vector<EmptyCase> empty_work_cases(const BadInputBuffers& b) {
  std::vector<EmptyCase> c;
  c.push_back({"int4_dequantize_codes", "E = 0, all pointers NULL",
               [] { return chord_int4_dequantize_codes(nullptr, nullptr, nullptr, 0, 64, 64, nullptr); }});
  c.push_back({"w4a16_contiguous", "m = 0, a/m_indices/out NULL",
               [b] { return chord_w4a16_contiguous(nullptr, 0, &b.tag, nullptr, nullptr, b.stream); }});
  c.push_back({"w4a16_masked", "G = 0", [b] { return chord_w4a16_masked(nullptr, 0, 8, &b.tag, nullptr, 0, nullptr, b.stream); }});
  c.push_back({"w4a16_offsets", "S = 0", [b] { return chord_w4a16_offsets(nullptr, 0, &b.tag, nullptr, nullptr, b.stream); }});
  c.push_back({"w4a16_indexed", "M = 0", [b] {
                 return chord_w4a16_indexed(nullptr, 0, &b.tag, nullptr, 64, nullptr, nullptr, 8, 16, nullptr, b.stream);
               }});
  return c;
}

}  // namespace chord::test
