// Where things lie in the packed weight layouts (docs/packed_layout.md): the packed word and
// scale indices of the pack / unpack kernels and the mma.m16n8k16 A-fragment slot of each
// nibble, shared by the pack kernels and the GEMMs' decode. Host and device (CHORD_W4A16_HD).
#pragma once

#include "w4a16_args.cuh"

namespace chord {
namespace w4a16_detail {

// Where packed word w lies in the layout (docs/packed_layout.md), for the pack / unpack
// kernels of both formats: w = (((e * N/16 + nt) * K/64 + kc) * 32 + lane) * 4 + j, i.e.
// expert e, 16-row n tile nt, 64-k chunk kc, lane, k16 step j. kcs = K/64, nts = N/16.
struct PackedWordAt {
  long long e;
  int nt, kc, lane, j;
};
__device__ __forceinline__ PackedWordAt packed_word_at(long long w, int kcs, int nts) {
  PackedWordAt at;
  at.j = (int)(w & 3);
  at.lane = (int)((w >> 2) & 31);
  long long rest = w >> 7;
  at.kc = (int)(rest % kcs);
  rest /= kcs;
  at.nt = (int)(rest % nts);
  at.e = rest / nts;
  return at;
}

// Where packed scale i lies: i = (e * groups + grp) * N + nt * 16 + pos, with `row` the row of
// n tile nt whose scale is stored at pos (the inverse of scale_pos_in_16). groups: scale rows
// per expert (K/32 for INT4, K/64 for NF4's absmax); nts = N/16.
struct PackedScaleAt {
  long long e;
  int grp, nt, row;
};
__device__ __forceinline__ PackedScaleAt packed_scale_at(long long i, int n, int nts, int groups) {
  PackedScaleAt at;
  const int pos = (int)(i & 15);
  at.nt = (int)((i / 16) % nts);
  const long long eg = i / n;
  at.grp = (int)(eg % groups);
  at.e = eg / groups;
  at.row = (pos >> 1) + 8 * (pos & 1);
  return at;
}

// Position of (row r of a 16-row n tile, register-lane view) inside a 16-scale packed group:
// row r -> 2 * (r % 8) + r / 8, so lane group g reads {s[g], s[g+8]} with one 32-bit load.
CHORD_W4A16_HD constexpr int scale_pos_in_16(int r) { return 2 * (r & 7) + (r >> 3); }

// Element (row, col) of a 16x16 tile held by (lane, word nibble slot) in an mma A fragment.
// Slot s in 0..7 is the nibble at bit 4*s of the packed word.
//   slot 0..3 -> register s, low element; slot 4..7 -> register s-4, high element.
//   register p: row g + 8*(p&1), col 2t + 8*(p>>1) (+1 for the high element).
CHORD_W4A16_HD constexpr int frag_row(int lane, int slot) { return (lane >> 2) + 8 * ((slot & 3) & 1); }
CHORD_W4A16_HD constexpr int frag_col(int lane, int slot) {
  return 2 * (lane & 3) + 8 * ((slot & 3) >> 1) + (slot >> 2);
}

// NF4 (layout v2, kNF4LayoutVersion): the nibble (bits 4 * nibble .. + 3) of a packed word that
// holds fragment slot s, so that byte p holds register p: slot p < 4 -> 2p, slot p + 4 -> 2p + 1.
CHORD_W4A16_HD constexpr int nf4_slot_nibble(int slot) { return slot < 4 ? 2 * slot : 2 * slot - 7; }
}  // namespace w4a16_detail
}  // namespace chord
