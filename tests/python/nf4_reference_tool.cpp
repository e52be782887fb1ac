// Runs the C++ NF4 reference (reference/nf4_reference.hpp) for the Python tests, which
// compile this file at test time and compare chord_kernels' torch quantizer with it.
//
//   nf4_reference_tool constants            -> text: the 16 table values and the 15 code
//                                              thresholds as FP32 bit patterns (hex), then the
//                                              256 entries of the signed dynamic map
//   nf4_reference_tool dyncode IN OUT        -> IN: float32 values; OUT: uint8 index of each in
//                                              the signed dynamic map (dynamic_code)
//   nf4_reference_tool quantize IN OUT       -> IN:  int64 E, N, K; int32 type (0 BF16, 1 FP16,
//                                                    2 FP32); int32 double_quant; E*N*K values
//                                                    (uint16 bits or float32)
//                                              OUT: int32 nested; float32 offset; uint8 packed
//                                                   [E*N*K/2]; absmax FP32 [blocks] or uint8
//                                                   [blocks] + FP32 absmax2 + FP32 code2 [256];
//                                                   FP32 resolved absmax [blocks]; BF16 and FP16
//                                                   dequantized [E*N*K] (uint16 bits)
// All binary data little-endian, as the machine writes it.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/nf4_reference.hpp"

namespace {

using namespace chord::ref;

uint32_t bits_of(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

float float_of(uint32_t u) {
  float v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

// Floats in value order as unsigned integers (negative values mirrored below positive ones).
uint32_t order_key(float v) {
  const uint32_t u = bits_of(v);
  return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}

float from_order_key(uint32_t key) { return float_of((key & 0x80000000u) ? key & 0x7fffffffu : ~key); }

// Threshold i: the largest float whose code is <= i (nf4_code tests "x > t").
float threshold(int i) {
  uint32_t lo = order_key(-2.0f), hi = order_key(2.0f);  // code(lo) = 0 <= i, code(hi) = 15 > i
  while (hi - lo > 1) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (nf4_code(from_order_key(mid)) <= i) lo = mid; else hi = mid;
  }
  return from_order_key(lo);
}

template <typename T>
void put(std::ofstream& out, const T* data, size_t count) {
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * sizeof(T)));
}

int dyncode(const char* in_path, const char* out_path) {
  std::ifstream in(in_path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), values.size() * 4);
  const std::vector<float> map = dynamic_map_signed();
  std::vector<uint8_t> codes(values.size());
  for (size_t i = 0; i < values.size(); ++i) codes[i] = dynamic_code(map.data(), values[i]);
  std::ofstream out(out_path, std::ios::binary);
  put(out, codes.data(), codes.size());
  return out.good() ? 0 : 1;
}

int quantize(const char* in_path, const char* out_path) {
  std::ifstream in(in_path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 32) throw std::runtime_error("input too short");
  int64_t dims[3];
  int32_t type, double_quant;
  std::memcpy(dims, bytes.data(), sizeof dims);
  std::memcpy(&type, bytes.data() + 24, 4);
  std::memcpy(&double_quant, bytes.data() + 28, 4);
  const size_t count = static_cast<size_t>(dims[0] * dims[1] * dims[2]);
  const char* payload = bytes.data() + 32;
  std::vector<float> values;
  if (type == 2) {
    if (bytes.size() != 32 + count * 4) throw std::runtime_error("FP32 payload has the wrong size");
    values.resize(count);
    std::memcpy(values.data(), payload, count * 4);
  } else {
    if (bytes.size() != 32 + count * 2) throw std::runtime_error("16-bit payload has the wrong size");
    std::vector<uint16_t> raw(count);
    std::memcpy(raw.data(), payload, count * 2);
    values = widen(raw.data(), count, type == 0 ? NF4Float::kBF16 : NF4Float::kFP16);
  }
  const NF4QuantState s = nf4_quantize(values.data(), dims[0], dims[1], dims[2], double_quant != 0);
  std::ofstream out(out_path, std::ios::binary);
  const int32_t nested = s.nested ? 1 : 0;
  put(out, &nested, 1);
  put(out, &s.offset, 1);
  put(out, s.packed.data(), s.packed.size());
  if (s.nested) {
    put(out, s.absmax_q.data(), s.absmax_q.size());
    put(out, s.absmax2.data(), s.absmax2.size());
    put(out, s.code2.data(), s.code2.size());
  } else {
    put(out, s.absmax.data(), s.absmax.size());
  }
  const std::vector<float> resolved = nf4_resolve_absmax(s);
  put(out, resolved.data(), resolved.size());
  const std::vector<uint16_t> bf16 = nf4_dequantize(s, NF4Float::kBF16);
  const std::vector<uint16_t> fp16 = nf4_dequantize(s, NF4Float::kFP16);
  put(out, bf16.data(), bf16.size());
  put(out, fp16.data(), fp16.size());
  return out.good() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 2 && std::string(argv[1]) == "constants") {
      for (int i = 0; i < 16; ++i) std::printf("table %d %08x\n", i, bits_of(kNF4Table[i]));
      for (int i = 0; i < 15; ++i) std::printf("threshold %d %08x\n", i, bits_of(threshold(i)));
      const std::vector<float> map = dynamic_map_signed();
      for (size_t i = 0; i < map.size(); ++i) std::printf("code2 %zu %08x\n", i, bits_of(map[i]));
      return 0;
    }
    if (argc == 4 && std::string(argv[1]) == "quantize") return quantize(argv[2], argv[3]);
    if (argc == 4 && std::string(argv[1]) == "dyncode") return dyncode(argv[2], argv[3]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nf4_reference_tool: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: nf4_reference_tool constants | dyncode IN OUT | quantize IN OUT\n");
  return 2;
}
