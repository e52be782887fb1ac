// CPU reference of NF4 weights in the bitsandbytes format (ARCHITECTURE.md, "NF4"):
// quantization with 64-element blocks (double quantization of the absmax on by default),
// the QuantState forms a checkpoint carries, dequantization equal bit for bit to
// bitsandbytes' dequantize_4bit, and chord's packed NF4 layout (docs/packed_layout.md).
//
// Arithmetic of the format, all in FP32:
//   quantize:   absmax_b = max |x| over block b;  code = nf4_code(x * (1 / absmax_b))
//   nested:     offset = mean(absmax); v = absmax - offset; per 256 v's: absmax2 = max |v|,
//               q = nearest entry of the signed dynamic map to v * (1 / absmax2)
//   resolve:    absmax_b = (code2[q_b] * absmax2[b / 256]) + offset   (two FP32 roundings)
//   dequantize: out = T(kNF4Table[code] * absmax_b)                   (FP32 product, one rounding to T)
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace chord::ref {

constexpr int kNF4BlockSize = 64;      // elements per absmax
constexpr int kNF4NestedBlockSize = 256;  // absmax values per nested FP32 scale

// The 16 NF4 values (code 0 = -1, code 7 = 0, code 15 = 1), as FP32.
extern const float kNF4Table[16];

enum class NF4Float { kBF16, kFP16, kFP32 };

// One code for x already divided by its block's absmax (the bitsandbytes decision tree:
// thresholds halfway between neighbouring table values; NaN gives code 0).
uint8_t nf4_code(float x);

// bitsandbytes' create_dynamic_map(signed=True): 256 sorted FP32 values in [-1, 1], the
// code table of the 8-bit nested absmax.
std::vector<float> dynamic_map_signed();

// Nearest entry of a sorted 256-entry code table to x (bitsandbytes' 8-bit blockwise search).
uint8_t dynamic_code(const float* code, float x);

// A QuantState of an [E, N, K] weight (blocksize 64, flattened blocks along K of each row).
struct NF4QuantState {
  int64_t num_experts = 0, n = 0, k = 0;
  std::vector<uint8_t> packed;    // [E*N*K/2]: element 2i in the high nibble of byte i
  bool nested = false;
  std::vector<float> absmax;      // !nested: FP32 [E*N*K/64]
  std::vector<uint8_t> absmax_q;  // nested: uint8 [E*N*K/64]
  std::vector<float> absmax2;     // nested: FP32 [ceil(E*N*K/64 / 256)]
  std::vector<float> code2;       // nested: FP32 [256] (dynamic_map_signed() when made here)
  float offset = 0.0f;            // nested: added after the 8-bit absmax is dequantized

  int64_t elements() const { return num_experts * n * k; }
  int64_t blocks() const { return elements() / kNF4BlockSize; }
};

// Quantizes FP32 values [E, N, K] (BF16 / FP16 inputs: widen them first, exactly). K must be a
// multiple of 64. The mean for the nested offset is taken in double and rounded once to FP32
// (torch's float reduction order can differ by an ulp; dequantize uses whatever offset the state holds).
NF4QuantState nf4_quantize(const float* values, int64_t num_experts, int64_t n, int64_t k, bool double_quant = true);
std::vector<float> widen(const uint16_t* values, size_t count, NF4Float type);

// The FP32 absmax per 64-block: copied, or dequantized from the nested form.
std::vector<float> nf4_resolve_absmax(const NF4QuantState& state);

// Logical weight [E, N, K] as `type` bits (kFP32: the float bit patterns, use the float overload).
std::vector<uint16_t> nf4_dequantize(const NF4QuantState& state, NF4Float type);
std::vector<float> nf4_dequantize_fp32(const NF4QuantState& state);
// One element: T(kNF4Table[code] * absmax) as BF16 or FP16 bits.
uint16_t nf4_dequantize_value(uint32_t code, float absmax, NF4Float type);

// Packed NF4 layout v2 (docs/packed_layout.md, "NF4"): INT4 layout v1's word order with the
// NF4 code in each nibble, byte p of a word holding fragment register p (low nibble: the
// INT4 word's slot p, high nibble: its slot p + 4); FP32 absmax [E, K/64, N] with rows
// permuted within 16.
struct NF4Packed {
  std::vector<uint32_t> weight;  // E * N * K / 8 words
  std::vector<float> absmax;     // [E, K/64, N], permuted
  int num_experts = 0, n = 0, k = 0;
};
// Requires N % 16 == 0 and K % 64 == 0.
NF4Packed pack_nf4(const NF4QuantState& state);
// One word: INT4 layout v1 nibble order <-> NF4 layout v2 nibble order.
uint32_t nf4_word_from_int4_order(uint32_t word);
uint32_t int4_order_from_nf4_word(uint32_t word);
std::vector<uint16_t> dequantize_nf4_packed(const NF4Packed& packed, NF4Float type);

// Host FP16 conversion, round to nearest even (subnormals and overflow to infinity included).
uint16_t float_to_fp16(float value);
float fp16_to_float(uint16_t bits);

}  // namespace chord::ref
