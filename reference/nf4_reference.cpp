#include "reference/nf4_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "reference/bf16.hpp"
#include "reference/w4a16_pack.hpp"

namespace chord::ref {

const float kNF4Table[16] = {
    -1.0f,
    -0.6961928009986877f,
    -0.5250730514526367f,
    -0.39491748809814453f,
    -0.28444138169288635f,
    -0.18477343022823334f,
    -0.09105003625154495f,
    0.0f,
    0.07958029955625534f,
    0.16093020141124725f,
    0.24611230194568634f,
    0.33791524171829224f,
    0.44070982933044434f,
    0.5626170039176941f,
    0.7229568362236023f,
    1.0f,
};

uint8_t nf4_code(float x) {
  // Decision thresholds of the format (between neighbouring codes). Comparisons are "x > t",
  // so a NaN (0 * inf of an all-zero block) falls through every test to code 0.
  static const float kUpper[15] = {
      -0.8480964004993439f, -0.6106329262256622f, -0.4599952697753906f, -0.33967943489551544f,
      -0.23460740596055984f, -0.13791173323988914f, -0.045525018125772476f, 0.03979014977812767f,
      0.1202552504837513f, 0.2035212516784668f, 0.2920137718319893f, 0.3893125355243683f,
      0.5016634166240692f, 0.6427869200706482f, 0.8614784181118011f,
  };
  uint8_t code = 0;
  for (int i = 0; i < 15; ++i) code += x > kUpper[i] ? 1 : 0;
  return code;
}

namespace {

float f32_mul(float a, float b) {
  volatile float p = a * b;  // one FP32 rounding, never fused with a neighbouring add
  return p;
}

// torch.linspace(start, end, steps) in float32 on the CPU: the first half counted up from
// start, the second half down from end, each element one fused multiply-add.
std::vector<float> linspace_f32(float start, float end, int steps) {
  std::vector<float> out(steps);
  const float step = (end - start) / static_cast<float>(steps - 1);
  for (int i = 0; i < steps; ++i) {
    out[i] = i < steps / 2 ? std::fma(step, static_cast<float>(i), start)
                           : std::fma(-step, static_cast<float>(steps - 1 - i), end);
  }
  return out;
}

}  // namespace

std::vector<float> dynamic_map_signed() {
  // 7 exponent levels (10^-6 .. 10^0); level i has 2^i linear fractions in (0.1, 1), each the
  // midpoint of a float32 linspace, scaled by the level's power of ten rounded to float32.
  std::vector<float> data;
  for (int i = 0; i < 7; ++i) {
    const std::vector<float> b = linspace_f32(0.1f, 1.0f, (1 << i) + 1);
    const float scale = static_cast<float>(std::pow(10.0, i - 6));
    for (int sign = 1; sign >= -1; sign -= 2)
      for (size_t j = 0; j + 1 < b.size(); ++j) {
        const float mean = (b[j] + b[j + 1]) / 2.0f;
        data.push_back(f32_mul(static_cast<float>(sign) * scale, mean));
      }
  }
  data.push_back(0.0f);
  data.push_back(1.0f);
  std::sort(data.begin(), data.end());
  return data;
}

uint8_t dynamic_code(const float* code, float x) {
  // Binary search from the middle (7 halvings), then the nearer of the two neighbours by the
  // FP32 midpoint, ties going to the entry the search landed on.
  int pivot = 127, upper_pivot = 255, lower_pivot = 0;
  float lower = -1.0f, upper = 1.0f;
  float val = code[pivot];
  for (int i = 64; i > 0; i >>= 1) {
    if (x > val) {
      lower_pivot = pivot;
      lower = val;
      pivot += i;
    } else {
      upper_pivot = pivot;
      upper = val;
      pivot -= i;
    }
    val = code[pivot];
  }
  if (upper_pivot == 255) upper = code[upper_pivot];
  if (lower_pivot == 0) lower = code[lower_pivot];
  if (x > val) {
    const float midpoint = (upper + val) * 0.5f;
    return static_cast<uint8_t>(x > midpoint ? upper_pivot : pivot);
  }
  const float midpoint = (lower + val) * 0.5f;
  return static_cast<uint8_t>(x < midpoint ? lower_pivot : pivot);
}

std::vector<float> widen(const uint16_t* values, size_t count, NF4Float type) {
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i)
    out[i] = type == NF4Float::kBF16 ? bf16_to_float(values[i]) : fp16_to_float(values[i]);
  return out;
}

namespace {

// max |x| of each block (NaN inputs ignored, as fmaxf does) and its FP32 reciprocal.
float block_absmax(const float* x, int64_t count) {
  float m = -3.402823466e38f;
  for (int64_t i = 0; i < count; ++i) m = std::fmax(m, std::fabs(x[i]));
  return m;
}

}  // namespace

NF4QuantState nf4_quantize(const float* values, int64_t num_experts, int64_t n, int64_t k, bool double_quant) {
  if (num_experts <= 0 || n <= 0 || k <= 0 || k % kNF4BlockSize != 0)
    throw std::invalid_argument("nf4_quantize needs E, N, K > 0 and K % 64 == 0");
  NF4QuantState s;
  s.num_experts = num_experts;
  s.n = n;
  s.k = k;
  const int64_t blocks = s.blocks();
  s.packed.assign(static_cast<size_t>(s.elements() / 2), 0);
  std::vector<float> absmax(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) {
    const float* x = values + b * kNF4BlockSize;
    const float m = block_absmax(x, kNF4BlockSize);
    absmax[b] = m;
    const float inv = 1.0f / m;
    for (int j = 0; j < kNF4BlockSize; j += 2) {
      const uint8_t hi = nf4_code(f32_mul(x[j], inv));
      const uint8_t lo = nf4_code(f32_mul(x[j + 1], inv));
      s.packed[static_cast<size_t>((b * kNF4BlockSize + j) / 2)] = static_cast<uint8_t>(hi << 4 | lo);
    }
  }
  if (!double_quant) {
    s.absmax = std::move(absmax);
    return s;
  }
  s.nested = true;
  double sum = 0.0;
  for (float v : absmax) sum += v;
  s.offset = static_cast<float>(sum / static_cast<double>(blocks));
  s.code2 = dynamic_map_signed();
  const int64_t blocks2 = (blocks + kNF4NestedBlockSize - 1) / kNF4NestedBlockSize;
  s.absmax2.resize(static_cast<size_t>(blocks2));
  s.absmax_q.resize(static_cast<size_t>(blocks));
  std::vector<float> centred(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) centred[b] = absmax[b] - s.offset;
  for (int64_t b2 = 0; b2 < blocks2; ++b2) {
    const int64_t begin = b2 * kNF4NestedBlockSize;
    const int64_t count = std::min<int64_t>(kNF4NestedBlockSize, blocks - begin);
    const float m = block_absmax(centred.data() + begin, count);
    s.absmax2[b2] = m;
    const float inv = 1.0f / m;
    for (int64_t j = 0; j < count; ++j)
      s.absmax_q[begin + j] = dynamic_code(s.code2.data(), f32_mul(centred[begin + j], inv));
  }
  return s;
}

std::vector<float> nf4_resolve_absmax(const NF4QuantState& s) {
  const int64_t blocks = s.blocks();
  if (!s.nested) {
    if (static_cast<int64_t>(s.absmax.size()) != blocks) throw std::invalid_argument("absmax has the wrong size");
    return s.absmax;
  }
  if (static_cast<int64_t>(s.absmax_q.size()) != blocks || s.code2.size() != 256 ||
      static_cast<int64_t>(s.absmax2.size()) != (blocks + kNF4NestedBlockSize - 1) / kNF4NestedBlockSize)
    throw std::invalid_argument("nested absmax state has the wrong sizes");
  std::vector<float> out(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) {
    const float v = f32_mul(s.code2[s.absmax_q[b]], s.absmax2[b / kNF4NestedBlockSize]);
    out[b] = v + s.offset;
  }
  return out;
}

uint16_t nf4_dequantize_value(uint32_t code, float absmax, NF4Float type) {
  const float v = f32_mul(kNF4Table[code & 15u], absmax);
  return type == NF4Float::kFP16 ? float_to_fp16(v) : float_to_bf16(v);
}

namespace {
uint32_t code_at(const NF4QuantState& s, int64_t i) {
  const uint8_t byte = s.packed[static_cast<size_t>(i / 2)];
  return (i & 1) ? byte & 15u : byte >> 4;
}
}  // namespace

std::vector<uint16_t> nf4_dequantize(const NF4QuantState& s, NF4Float type) {
  if (type == NF4Float::kFP32) throw std::invalid_argument("use nf4_dequantize_fp32 for FP32 output");
  const std::vector<float> absmax = nf4_resolve_absmax(s);
  std::vector<uint16_t> out(static_cast<size_t>(s.elements()));
  for (int64_t i = 0; i < s.elements(); ++i)
    out[i] = nf4_dequantize_value(code_at(s, i), absmax[i / kNF4BlockSize], type);
  return out;
}

std::vector<float> nf4_dequantize_fp32(const NF4QuantState& s) {
  const std::vector<float> absmax = nf4_resolve_absmax(s);
  std::vector<float> out(static_cast<size_t>(s.elements()));
  for (int64_t i = 0; i < s.elements(); ++i) out[i] = f32_mul(kNF4Table[code_at(s, i)], absmax[i / kNF4BlockSize]);
  return out;
}

uint32_t nf4_word_from_int4_order(uint32_t q) {
  uint32_t r = 0;
  for (int p = 0; p < 4; ++p) {
    r |= ((q >> (4 * p)) & 15u) << (8 * p);            // slot p: register p, low element
    r |= ((q >> (16 + 4 * p)) & 15u) << (8 * p + 4);   // slot p + 4: its high element
  }
  return r;
}

uint32_t int4_order_from_nf4_word(uint32_t q) {
  uint32_t r = 0;
  for (int p = 0; p < 4; ++p) {
    r |= ((q >> (8 * p)) & 15u) << (4 * p);
    r |= ((q >> (8 * p + 4)) & 15u) << (16 + 4 * p);
  }
  return r;
}

NF4Packed pack_nf4(const NF4QuantState& s) {
  if (s.n % 16 != 0 || s.k % 64 != 0 || s.num_experts <= 0)
    throw std::invalid_argument("the packed NF4 layout needs N % 16 == 0 and K % 64 == 0");
  std::vector<uint8_t> codes(static_cast<size_t>(s.elements()));
  for (int64_t i = 0; i < s.elements(); ++i) codes[i] = static_cast<uint8_t>(code_at(s, i));
  NF4Packed p;
  p.num_experts = static_cast<int>(s.num_experts);
  p.n = static_cast<int>(s.n);
  p.k = static_cast<int>(s.k);
  p.weight = pack_w4a16_words(codes.data(), p.num_experts, p.n, p.k);
  for (uint32_t& q : p.weight) q = nf4_word_from_int4_order(q);
  const std::vector<float> absmax = nf4_resolve_absmax(s);
  const int kb = p.k / kNF4BlockSize;
  p.absmax.resize(absmax.size());
  for (int e = 0; e < p.num_experts; ++e)
    for (int b = 0; b < kb; ++b)
      for (int row = 0; row < p.n; ++row)
        p.absmax[(static_cast<size_t>(e) * kb + b) * p.n + packed_scale_column(row)] =
            absmax[(static_cast<size_t>(e) * p.n + row) * kb + b];
  return p;
}

std::vector<uint16_t> dequantize_nf4_packed(const NF4Packed& p, NF4Float type) {
  const int kb = p.k / kNF4BlockSize;
  std::vector<uint32_t> words(p.weight.size());
  for (size_t i = 0; i < words.size(); ++i) words[i] = int4_order_from_nf4_word(p.weight[i]);
  std::vector<uint16_t> out(static_cast<size_t>(p.num_experts) * p.n * p.k);
  for (int e = 0; e < p.num_experts; ++e)
    for (int row = 0; row < p.n; ++row)
      for (int col = 0; col < p.k; ++col) {
        const uint32_t code = packed_code(words.data(), p.n, p.k, e, row, col);
        const float a = p.absmax[(static_cast<size_t>(e) * kb + col / kNF4BlockSize) * p.n + packed_scale_column(row)];
        out[(static_cast<size_t>(e) * p.n + row) * p.k + col] = nf4_dequantize_value(code, a, type);
      }
  return out;
}

uint16_t float_to_fp16(float value) {
  uint32_t u;
  std::memcpy(&u, &value, sizeof u);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: infinity
  if (a < 0x38800000u) {
    // Below the smallest normal (2^-14): count units of 2^-24 (exact scaling), round to even;
    // 1024 units is the smallest normal's bit pattern.
    const float units = std::fabs(value) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(units)));
  }
  const uint32_t rebased = a - (112u << 23);
  const uint32_t rounded = rebased + 0xfffu + ((rebased >> 13) & 1u);
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

float fp16_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu, mant = bits & 0x3ffu;
  float magnitude;
  if (exp == 0) {
    magnitude = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    uint32_t u = 0x7f800000u | (mant << 13);
    std::memcpy(&magnitude, &u, sizeof magnitude);
  } else {
    uint32_t u = ((exp + 112u) << 23) | (mant << 13);
    std::memcpy(&magnitude, &u, sizeof magnitude);
  }
  uint32_t out;
  std::memcpy(&out, &magnitude, sizeof out);
  out |= sign;
  float f;
  std::memcpy(&f, &out, sizeof f);
  return f;
}

}  // namespace chord::ref
