// The 4-bit weight kinds of the W4A16 kernels and the 16-bit element type each runs with;
// shared by host C++ and NVRTC.
#pragma once

#include "w4a16_args.cuh"

namespace chord {

// Element type of dequantized values (and of activations / outputs of the NF4 GEMM).
enum NF4Element : int {
  kNF4BF16 = 0,
  kNF4FP16 = 1,
};

// Weight format of the W4A16 GEMM body (its WEIGHT template argument): what a packed nibble
// means and which activation / output type the MMA takes.
enum W4A16WeightKind : int {
  kW4A16WeightInt4 = 0,     // INT4 group-32, BF16 scales; BF16 activations
  kW4A16WeightNF4 = 1,      // NF4, FP32 absmax per 64; BF16 activations
  kW4A16WeightNF4Fp16 = 2,  // NF4, FP32 absmax per 64; FP16 activations
  kW4A16WeightInt4Fp16 = 3, // INT4 group-32, FP16 scales; FP16 activations
  // INT4 group-32 with a zero point per (row, group): W = T((code - zp) * scale). The packed
  // scales are 32-bit pairs {scale, -(M + zp)} in T (docs/packed_layout.md, "Zero points").
  kW4A16WeightInt4Zp = 4,      // BF16 pairs; BF16 activations
  kW4A16WeightInt4ZpFp16 = 5,  // FP16 pairs; FP16 activations
  // The same four INT4 kinds with one scale (or {scale, bias} pair) per 128 k instead of per 32:
  // the packed scales are [E, K/128, N] (docs/packed_layout.md, "Group 128"); the packed
  // weight words are those of group 32.
  kW4A16WeightInt4G128 = 6,        // BF16 scales; BF16 activations
  kW4A16WeightInt4G128Fp16 = 7,    // FP16 scales; FP16 activations
  kW4A16WeightInt4ZpG128 = 8,      // BF16 pairs; BF16 activations
  kW4A16WeightInt4ZpG128Fp16 = 9,  // FP16 pairs; FP16 activations
};

// NF4 kinds decode through the shared-memory pair table and read FP32 absmax per 64 k; INT4
// kinds decode with lop3 and read 16-bit scales per 32 k.
CHORD_W4A16_HD constexpr bool w4a16_is_nf4(int weight) {
  return weight == kW4A16WeightNF4 || weight == kW4A16WeightNF4Fp16;
}

// INT4 kinds whose packed scales carry a zero point (32-bit {scale, bias} entries per group).
CHORD_W4A16_HD constexpr bool w4a16_has_zero_point(int weight) {
  return weight == kW4A16WeightInt4Zp || weight == kW4A16WeightInt4ZpFp16 || weight == kW4A16WeightInt4ZpG128 ||
         weight == kW4A16WeightInt4ZpG128Fp16;
}

// INT4 kinds with one scale entry per 128 k (kW4A16WeightInt4G128 .. kW4A16WeightInt4ZpG128Fp16).
CHORD_W4A16_HD constexpr bool w4a16_is_g128(int weight) {
  return weight >= kW4A16WeightInt4G128 && weight <= kW4A16WeightInt4ZpG128Fp16;
}

// The k each packed scale entry covers: 128 for the group-128 kinds, 64 for NF4's absmax, 32
// for the other INT4 kinds.
CHORD_W4A16_HD constexpr int w4a16_scale_group(int weight) {
  return w4a16_is_g128(weight) ? 128 : w4a16_is_nf4(weight) ? 64 : 32;
}

// The group-32 kind a group-128 kind shares its element type and zero points with (others: itself).
CHORD_W4A16_HD constexpr int w4a16_g32_kind(int weight) {
  return weight == kW4A16WeightInt4G128       ? kW4A16WeightInt4
         : weight == kW4A16WeightInt4G128Fp16 ? kW4A16WeightInt4Fp16
         : weight == kW4A16WeightInt4ZpG128   ? kW4A16WeightInt4Zp
         : weight == kW4A16WeightInt4ZpG128Fp16 ? kW4A16WeightInt4ZpFp16
                                                : weight;
}

// The activation / output element type a weight kind runs with (INT4 FP16: also its scales').
CHORD_W4A16_HD constexpr int w4a16_element(int weight) {
  return weight == kW4A16WeightNF4Fp16 || weight == kW4A16WeightInt4Fp16 || weight == kW4A16WeightInt4ZpFp16 ||
                 weight == kW4A16WeightInt4G128Fp16 || weight == kW4A16WeightInt4ZpG128Fp16
             ? kNF4FP16
             : kNF4BF16;
}

// The 16-bit bias -(M + zp) a zero-point kind stores beside each scale, for zp in 0..15 in the
// element type (M = 128 in BF16, 1024 in FP16: nibble_pair's magic, whose ulp is 1, so the
// value is the sign-set magic with zp in the mantissa LSBs; exact).
CHORD_W4A16_HD constexpr unsigned int int4_zp_bias(int elem, unsigned int zp) {
  return (elem == kNF4FP16 ? 0xe400u : 0xc300u) | (zp & 15u);
}

CHORD_W4A16_HD constexpr bool w4a16_known_weight(int weight) {
  return weight >= kW4A16WeightInt4 && weight <= kW4A16WeightInt4ZpG128Fp16;
}

// The math of the INT4 BF16 decode tile's fp32 group sums (int4_group_mma, w4a16_decode.cuh):
// the GROUP_SUMS template argument of w4a16_gemm_body, W4A16GemmConfig::group_sums,
// CHORD_W4A16_GROUP_SUMS. The offset form is the kernels' math: on the 8-token tiles the
// correction MMAs it drops cost more time than the half fmas it adds; on the 16-token tiles the
// two are within a few percent either way (docs/kernels.md, "mma.sync"). The correction form is
// kept so that a shape can be measured both ways.
enum W4A16GroupSums : int {
  kW4A16GroupSumsOffset = 0,      // (code - 8), or (code - zp), per register by one bf16x2 fma
  kW4A16GroupSumsCorrection = 1,  // constant-A correction MMAs (token-sum MMAs with zero points)
  kW4A16GroupSumsCount = 2,       // the number of forms (not one)
};

// Whether a mma.sync tile runs the INT4 BF16 group sums (int4_group_mma, int4_group_mma_zp):
// INT4 weights with BF16 scales (symmetric or with zero points, group 32 or 128) on tiles of 8
// tokens per warp (w4a16_gemm_body's kScaleInAcc), or 16-token tiles of one warp along M on the
// staged path (kNarrowPath: the group sums on a tile that holds <= 8 rows).
CHORD_W4A16_HD constexpr bool w4a16_runs_group_sums(int weight, int block_m, int warps_m, int stages) {
  return w4a16_known_weight(weight) && !w4a16_is_nf4(weight) && w4a16_element(weight) == kNF4BF16 && warps_m > 0 &&
         (block_m == 8 * warps_m ||
          (block_m == 16 && warps_m == 1 && w4a16_default_path(block_m, warps_m, stages) == kW4A16PathStaged));
}

// Why a group-sums form is invalid for a mma.sync tile, or nullptr.
CHORD_W4A16_HD constexpr const char* w4a16_group_sums_error(int group_sums, int weight, int block_m, int warps_m,
                                                            int stages) {
  return (group_sums < 0 || group_sums >= kW4A16GroupSumsCount) ? "the group-sums form must be 0 or 1"
         : (group_sums != 0 && !w4a16_runs_group_sums(weight, block_m, warps_m, stages))
             ? "a group-sums form other than 0 needs a tile that runs the INT4 BF16 group sums (INT4 weights "
               "with BF16 scales, and 8 tokens per warp (BLOCK_M == 8 * WARPS_M) or a 16-token tile of one warp "
               "along M on the staged path)"
             : nullptr;
}

}  // namespace chord
