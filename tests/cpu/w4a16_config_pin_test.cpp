// Config choice pinned: a sample of what resolve_w4a16_config returned for a grid of problems
// (every tuning table's shapes and others, N and K from 48 to 7168, 0 to 10^9 rows per expert,
// the four modes, INT4 and NF4, four arches, with and without the routing geometry split-K
// needs) and, through `chord config`, for the CHORD_W4A16_* / CHORD_SM90_DECODE overrides. The
// expected values are the configs of the resolver before config choice became candidates ->
// best; a line that changes here changes the kernel a call runs: measure the change on a GPU
// (docs/benchmarking.md) before updating the line. (The sm_120a lines whose tiles would take more
// than that arch's 99 KiB of shared memory per CTA changed without a measurement: they could not
// load there.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <sstream>
#include <string>

#include "test_support.hpp"
#include "tuning_tables/w4a16_resolver.hpp"

namespace {

// "ARCH nN kK rROWS mMODE wWEIGHT eEXPERTS aA_ROWS bBLOCK sSMS: " then the config: "eENGINE mMODE
// bmBM bnBN bkBK sSTAGES wmWARPS_M wnWARPS_N wgWARPGROUPS wWEIGHT skSPLIT_K", and " nrRUN" where
// the tile runs several n blocks per CTA (the K 192 lines, measured on the H200). With a_rows the
// problem also has the masked groups (E, max_m = 1.5 rows + 1) and the indexed capacity
// (a_rows + E * block), as the operators derive them.
const char kPinned[] = R"(
sm_90a n48 k64 r43 m1 w1 E128 a5504 b0 s132: e0 m1 bm64 bn16 bk64 s4 wm2 wn1 wg2 w1 sk1
sm_90a n48 k256 r65536 m3 w1 E48 a0 b192 s132: e0 m3 bm64 bn16 bk64 s4 wm2 wn1 wg2 w1 sk1
sm_90a n48 k512 r8 m0 w0 E48 a48 b0 s132: e0 m0 bm16 bn16 bk128 s3 wm1 wn1 wg2 w0 sk1
sm_90a n48 k2048 r3 m3 w0 E48 a18 b32 s132: e0 m3 bm8 bn16 bk128 s3 wm1 wn1 wg2 w0 sk1
sm_90a n48 k2048 r52 m3 w0 E128 a6656 b32 s132: e0 m3 bm32 bn16 bk128 s3 wm1 wn1 wg2 w0 sk1
sm_90a n48 k2048 r511 m3 w1 E48 a0 b256 s132: e0 m3 bm128 bn16 bk64 s4 wm4 wn1 wg2 w1 sk1
sm_90a n48 k2048 r2048 m3 w1 E48 a0 b48 s132: e0 m3 bm16 bn16 bk128 s3 wm1 wn1 wg2 w1 sk1
sm_90a n48 k7168 r5 m0 w1 E48 a30 b0 s132: e0 m0 bm8 bn16 bk128 s3 wm1 wn1 wg2 w1 sk4
sm_90a n48 k7168 r16 m0 w0 E48 a96 b0 s132: e0 m0 bm32 bn16 bk128 s3 wm1 wn1 wg2 w0 sk4
sm_90a n128 k2048 r5 m3 w2 E384 a1920 b16 s78: e0 m3 bm8 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_90a n128 k2048 r8 m2 w1 E128 a1024 b0 s132: e0 m2 bm16 bn64 bk256 s2 wm1 wn4 wg2 w1 sk1
sm_90a n128 k2048 r43 m3 w0 E48 a258 b32 s132: e0 m3 bm32 bn64 bk256 s2 wm1 wn4 wg2 w0 sk2
sm_90a n128 k2048 r53 m3 w0 E128 a6784 b256 s132: e1 m3 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n128 k7168 r8 m3 w1 E48 a48 b16 s132: e0 m3 bm16 bn64 bk256 s2 wm1 wn4 wg2 w1 sk2
sm_90a n128 k7168 r10 m0 w2 E48 a60 b0 s132: e0 m0 bm16 bn64 bk256 s2 wm1 wn4 wg2 w2 sk4
sm_90a n128 k7168 r10 m3 w2 E48 a60 b16 s132: e0 m3 bm16 bn64 bk256 s2 wm1 wn4 wg2 w2 sk2
sm_90a n128 k7168 r21 m1 w2 E48 a126 b0 s132: e0 m1 bm32 bn64 bk256 s2 wm1 wn4 wg2 w2 sk2
sm_90a n128 k7168 r52 m3 w0 E48 a312 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n256 k64 r43 m3 w2 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w2 sk1
sm_90a n256 k64 r511 m3 w0 E48 a0 b192 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n256 k256 r1000000001 m2 w2 E384 a1073741824 b0 s78: e2 m2 bm128 bn256 bk64 s5 wm1 wn4 wg2 w2 sk1
sm_90a n256 k768 r3 m3 w1 E128 a384 b128 s132: e0 m3 bm8 bn64 bk256 s2 wm1 wn4 wg2 w1 sk1
sm_90a n256 k768 r64 m2 w0 E48 a0 b0 s132: e1 m2 bm96 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n256 k2048 r53 m3 w1 E48 a318 b48 s132: e0 m3 bm16 bn64 bk256 s2 wm1 wn4 wg2 w1 sk1
sm_90a n256 k7168 r22 m0 w1 E48 a0 b0 s132: e2 m0 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n512 k64 r6 m3 w2 E48 a0 b96 s132: e0 m3 bm16 bn128 bk64 s3 wm1 wn4 wg2 w2 sk1
sm_90a n512 k256 r1 m1 w0 E48 a6 b0 s132: e0 m1 bm8 bn64 bk256 s3 wm1 wn4 wg2 w0 sk1
sm_90a n512 k256 r8 m3 w1 E384 a3072 b96 s78: e0 m3 bm16 bn64 bk256 s2 wm1 wn4 wg2 w1 sk1
sm_90a n512 k256 r10 m3 w1 E384 a3840 b64 s78: e0 m3 bm16 bn64 bk256 s2 wm1 wn4 wg2 w1 sk1
sm_90a n512 k256 r11 m3 w2 E48 a0 b16 s132: e0 m3 bm16 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_90a n512 k256 r16 m0 w0 E48 a0 b0 s132: e0 m0 bm32 bn64 bk256 s2 wm1 wn4 wg2 w0 sk1
sm_90a n512 k256 r42 m2 w2 E48 a252 b0 s132: e2 m2 bm128 bn256 bk64 s5 wm1 wn4 wg2 w2 sk1
sm_90a n512 k512 r8 m3 w0 E48 a0 b64 s132: e0 m3 bm16 bn64 bk256 s2 wm1 wn4 wg2 w0 sk1
sm_90a n512 k768 r8 m2 w0 E384 a3072 b0 s78: e0 m2 bm16 bn64 bk256 s2 wm1 wn4 wg2 w0 sk1
sm_90a n512 k768 r2048 m3 w1 E384 a786432 b128 s78: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n512 k2048 r5 m0 w1 E48 a30 b0 s132: e0 m0 bm8 bn64 bk256 s2 wm1 wn4 wg2 w1 sk2
sm_90a n512 k2048 r8 m0 w0 E48 a48 b0 s132: e0 m0 bm16 bn64 bk256 s2 wm1 wn4 wg2 w0 sk2
sm_90a n512 k2048 r11 m0 w0 E48 a66 b0 s132: e0 m0 bm16 bn64 bk256 s2 wm1 wn4 wg2 w0 sk2
sm_90a n512 k2048 r42 m3 w0 E48 a252 b32 s132: e0 m3 bm32 bn64 bk256 s2 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r3 m1 w0 E48 a0 b0 s132: e0 m1 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r3 m1 w1 E48 a0 b0 s132: e0 m1 bm8 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r3 m3 w0 E48 a0 b64 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r3 m3 w0 E48 a0 b128 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r3 m3 w1 E48 a0 b64 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r3 m3 w1 E48 a0 b128 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r5 m1 w0 E48 a0 b0 s132: e0 m1 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r5 m1 w1 E48 a0 b0 s132: e0 m1 bm8 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r5 m3 w0 E48 a0 b64 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r5 m3 w0 E48 a0 b128 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r5 m3 w1 E48 a0 b64 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r5 m3 w1 E48 a0 b128 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r8 m1 w0 E48 a0 b0 s132: e0 m1 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r8 m1 w1 E48 a0 b0 s132: e0 m1 bm16 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r16 m1 w0 E48 a0 b0 s132: e1 m1 bm32 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r16 m1 w1 E48 a0 b0 s132: e1 m1 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r22 m3 w1 E384 a8448 b32 s78: e0 m3 bm32 bn64 bk256 s2 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r32 m1 w0 E48 a0 b0 s132: e1 m1 bm48 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r32 m1 w1 E48 a0 b0 s132: e1 m1 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r32 m3 w1 E48 a192 b192 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r53 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r53 m3 w0 E48 a0 b128 s132: e1 m3 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r53 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r53 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r170 m1 w0 E48 a0 b0 s132: e1 m1 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r170 m1 w1 E48 a0 b0 s132: e2 m1 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r170 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r170 m3 w0 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s6 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r170 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r170 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r2048 m0 w0 E48 a0 b0 s132: e2 m0 bm128 bn256 bk64 s6 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r2048 m0 w1 E48 a0 b0 s132: e2 m0 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r2048 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r2048 m3 w0 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s6 wm1 wn4 wg2 w0 sk1
sm_90a n512 k7168 r2048 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r2048 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n512 k7168 r1000000001 m1 w2 E48 a1073741824 b0 s132: e2 m1 bm128 bn256 bk64 s5 wm1 wn4 wg2 w2 sk1
sm_90a n1536 k64 r64 m3 w1 E384 a24576 b16 s78: e0 m3 bm16 bn128 bk64 s3 wm1 wn4 wg2 w1 sk1
sm_90a n1536 k256 r4 m3 w2 E384 a1536 b32 s78: e0 m3 bm8 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_90a n1536 k256 r16 m3 w2 E128 a2048 b192 s132: e0 m3 bm32 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_90a n1536 k256 r256 m1 w1 E384 a98304 b0 s78: e2 m1 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n1536 k256 r65536 m3 w2 E128 a8388608 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w2 sk1
sm_90a n1536 k512 r6 m3 w0 E48 a36 b128 s132: e0 m3 bm16 bn64 bk256 s2 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k768 r53 m3 w0 E48 a0 b256 s132: e1 m3 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k768 r2048 m3 w2 E48 a12288 b256 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w2 sk1
sm_90a n1536 k2048 r1 m0 w1 E128 a128 b0 s132: e0 m0 bm8 bn256 bk128 s3 wm1 wn8 wg2 w1 sk2
sm_90a n1536 k2048 r3 m1 w0 E48 a0 b0 s132: e0 m1 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r3 m1 w1 E48 a0 b0 s132: e0 m1 bm8 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n1536 k2048 r3 m2 w0 E48 a0 b0 s132: e0 m2 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r3 m2 w1 E48 a0 b0 s132: e0 m2 bm8 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n1536 k2048 r3 m3 w0 E48 a0 b64 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r3 m3 w0 E48 a0 b128 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r3 m3 w1 E48 a0 b64 s132: e0 m3 bm8 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n1536 k2048 r3 m3 w1 E48 a0 b128 s132: e0 m3 bm8 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n1536 k2048 r5 m1 w0 E48 a0 b0 s132: e0 m1 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r5 m1 w1 E48 a0 b0 s132: e0 m1 bm8 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n1536 k2048 r5 m3 w0 E48 a0 b64 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r5 m3 w0 E48 a0 b128 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r5 m3 w1 E48 a0 b64 s132: e0 m3 bm8 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n1536 k2048 r5 m3 w1 E48 a0 b128 s132: e0 m3 bm8 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n1536 k2048 r8 m1 w0 E48 a0 b0 s132: e0 m1 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r8 m1 w1 E48 a0 b0 s132: e0 m1 bm16 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n1536 k2048 r8 m2 w0 E48 a0 b0 s132: e0 m2 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r8 m2 w1 E48 a0 b0 s132: e0 m2 bm16 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n1536 k2048 r16 m1 w0 E48 a0 b0 s132: e1 m1 bm32 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r16 m1 w1 E48 a0 b0 s132: e0 m1 bm32 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n1536 k2048 r16 m2 w0 E48 a0 b0 s132: e1 m2 bm32 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r16 m2 w1 E48 a0 b0 s132: e0 m2 bm32 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n1536 k2048 r32 m1 w0 E48 a0 b0 s132: e1 m1 bm48 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r32 m1 w1 E48 a0 b0 s132: e1 m1 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n1536 k2048 r32 m2 w0 E48 a0 b0 s132: e1 m2 bm48 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r32 m2 w1 E48 a0 b0 s132: e1 m2 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n1536 k2048 r52 m3 w2 E384 a19968 b64 s78: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w2 sk1
sm_90a n1536 k2048 r53 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r53 m3 w0 E48 a0 b128 s132: e1 m3 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r53 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n1536 k2048 r53 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n1536 k2048 r170 m1 w0 E48 a0 b0 s132: e1 m1 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r170 m1 w1 E48 a0 b0 s132: e2 m1 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n1536 k2048 r170 m2 w0 E48 a0 b0 s132: e1 m2 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r170 m2 w1 E48 a0 b0 s132: e2 m2 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n1536 k2048 r170 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r170 m3 w0 E48 a0 b128 s132: e1 m3 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r170 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n1536 k2048 r170 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n1536 k2048 r2048 m0 w0 E48 a0 b0 s132: e2 m0 bm128 bn256 bk64 s6 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r2048 m0 w1 E48 a0 b0 s132: e2 m0 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n1536 k2048 r2048 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r2048 m3 w0 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s6 wm1 wn4 wg2 w0 sk1
sm_90a n1536 k2048 r2048 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n1536 k2048 r2048 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n1536 k2048 r2048 m3 w2 E128 a262144 b192 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w2 sk1
sm_90a n1536 k7168 r3 m3 w1 E384 a1152 b64 s78: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n1536 k7168 r32 m1 w2 E384 a12288 b0 s78: e2 m1 bm128 bn256 bk64 s5 wm1 wn4 wg2 w2 sk1
sm_90a n1536 k7168 r53 m3 w2 E128 a6784 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w2 sk1
sm_90a n1536 k7168 r256 m3 w0 E128 a32768 b128 s132: e1 m3 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n1664 k64 r16 m0 w0 E48 a0 b0 s132: e0 m0 bm32 bn128 bk64 s3 wm1 wn4 wg2 w0 sk1
sm_90a n1664 k256 r1 m3 w0 E128 a128 b32 s132: e0 m3 bm8 bn64 bk256 s3 wm1 wn4 wg2 w0 sk1
sm_90a n1664 k256 r21 m3 w2 E48 a126 b64 s132: e0 m3 bm32 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_90a n1664 k512 r11 m3 w2 E48 a0 b48 s132: e0 m3 bm16 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_90a n1664 k512 r169 m3 w2 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w2 sk1
sm_90a n1664 k768 r11 m3 w2 E128 a1408 b96 s132: e0 m3 bm16 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_90a n1664 k768 r2048 m1 w2 E48 a12288 b0 s132: e1 m1 bm128 bn128 bk64 s4 wm1 wn4 wg2 w2 sk1
sm_90a n1664 k2048 r1 m0 w1 E48 a6 b0 s132: e0 m0 bm8 bn64 bk256 s2 wm1 wn4 wg2 w1 sk2
sm_90a n1664 k2048 r1 m3 w0 E128 a128 b192 s132: e0 m3 bm8 bn64 bk256 s3 wm1 wn4 wg2 w0 sk1
sm_90a n1664 k2048 r8 m2 w2 E384 a3072 b0 s78: e0 m2 bm16 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_90a n1664 k2048 r256 m2 w0 E48 a0 b0 s132: e1 m2 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n1664 k7168 r11 m0 w1 E48 a66 b0 s132: e0 m0 bm16 bn128 bk128 s3 wm1 wn4 wg2 w1 sk4
sm_90a n1664 k7168 r11 m3 w0 E128 a1408 b256 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n1664 k7168 r2047 m2 w0 E48 a12282 b0 s132: e1 m2 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k256 r4 m3 w2 E128 a512 b32 s132: e0 m3 bm8 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_90a n2048 k256 r2048 m3 w0 E128 a262144 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k512 r10 m3 w1 E384 a3840 b96 s78: e0 m3 bm16 bn64 bk256 s2 wm1 wn4 wg2 w1 sk1
sm_90a n2048 k768 r3 m1 w0 E48 a0 b0 s132: e0 m1 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r3 m1 w1 E48 a0 b0 s132: e0 m1 bm8 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n2048 k768 r3 m2 w0 E48 a0 b0 s132: e0 m2 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r3 m2 w1 E48 a0 b0 s132: e0 m2 bm8 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n2048 k768 r3 m3 w0 E48 a0 b64 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r3 m3 w0 E48 a0 b128 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r3 m3 w1 E48 a0 b64 s132: e0 m3 bm8 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n2048 k768 r3 m3 w1 E48 a0 b128 s132: e0 m3 bm8 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n2048 k768 r5 m1 w0 E48 a0 b0 s132: e0 m1 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r5 m1 w1 E48 a0 b0 s132: e0 m1 bm8 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n2048 k768 r5 m3 w0 E48 a0 b64 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r5 m3 w0 E48 a0 b128 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r5 m3 w1 E48 a0 b64 s132: e0 m3 bm8 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n2048 k768 r5 m3 w1 E48 a0 b128 s132: e0 m3 bm8 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n2048 k768 r8 m1 w0 E48 a0 b0 s132: e0 m1 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r8 m1 w1 E48 a0 b0 s132: e0 m1 bm16 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n2048 k768 r8 m2 w0 E48 a0 b0 s132: e0 m2 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r8 m2 w1 E48 a0 b0 s132: e0 m2 bm16 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n2048 k768 r16 m1 w0 E48 a0 b0 s132: e1 m1 bm32 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r16 m1 w1 E48 a0 b0 s132: e0 m1 bm32 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n2048 k768 r16 m2 w0 E48 a0 b0 s132: e1 m2 bm32 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r16 m2 w1 E48 a0 b0 s132: e0 m2 bm32 bn256 bk128 s3 wm1 wn8 wg2 w1 sk1
sm_90a n2048 k768 r32 m1 w0 E48 a0 b0 s132: e1 m1 bm48 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r32 m1 w1 E48 a0 b0 s132: e1 m1 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n2048 k768 r32 m2 w0 E48 a0 b0 s132: e1 m2 bm48 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r32 m2 w1 E48 a0 b0 s132: e1 m2 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n2048 k768 r53 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r53 m3 w0 E48 a0 b128 s132: e1 m3 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r53 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n2048 k768 r53 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n2048 k768 r170 m1 w0 E48 a0 b0 s132: e1 m1 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r170 m1 w1 E48 a0 b0 s132: e2 m1 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n2048 k768 r170 m2 w0 E48 a0 b0 s132: e1 m2 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r170 m2 w1 E48 a0 b0 s132: e2 m2 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n2048 k768 r170 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r170 m3 w0 E48 a0 b128 s132: e1 m3 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r170 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n2048 k768 r170 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n2048 k768 r2047 m0 w0 E48 a12282 b0 s132: e2 m0 bm128 bn256 bk64 s6 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r2048 m0 w0 E48 a0 b0 s132: e2 m0 bm128 bn256 bk64 s6 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r2048 m0 w1 E48 a0 b0 s132: e2 m0 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n2048 k768 r2048 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r2048 m3 w0 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s6 wm1 wn4 wg2 w0 sk1
sm_90a n2048 k768 r2048 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n2048 k768 r2048 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n2048 k7168 r1 m3 w1 E384 a384 b48 s78: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n2048 k7168 r2047 m1 w1 E128 a262016 b0 s132: e2 m1 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k192 r3 m1 w0 E128 a448 b0 s132: e0 m1 bm8 bn128 bk64 s3 wm1 wn4 wg2 w0 sk1 nr4
sm_90a n4096 k192 r2 m2 w0 E128 a320 b0 s132: e0 m2 bm8 bn128 bk64 s3 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k192 r3 m2 w0 E128 a448 b0 s132: e0 m2 bm8 bn128 bk64 s3 wm1 wn4 wg2 w0 sk1 nr4
sm_90a n4096 k256 r16 m0 w2 E48 a96 b0 s132: e0 m0 bm32 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_90a n4096 k256 r53 m3 w1 E48 a318 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k768 r22 m3 w2 E384 a8448 b48 s78: e0 m3 bm16 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_90a n4096 k2048 r10 m0 w0 E48 a60 b0 s132: e0 m0 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk2
sm_90a n4096 k2048 r11 m3 w0 E48 a0 b64 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r1 m0 w0 E48 a6 b0 s132: e0 m0 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk4
sm_90a n4096 k7168 r3 m1 w0 E48 a0 b0 s132: e0 m1 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r3 m1 w1 E48 a0 b0 s132: e0 m1 bm16 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r3 m3 w0 E48 a0 b64 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r3 m3 w0 E48 a0 b128 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r3 m3 w1 E48 a0 b64 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r3 m3 w1 E48 a0 b128 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r5 m1 w0 E48 a0 b0 s132: e0 m1 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r5 m1 w1 E48 a0 b0 s132: e0 m1 bm16 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r5 m3 w0 E48 a0 b64 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r5 m3 w0 E48 a0 b128 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r5 m3 w1 E48 a0 b64 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r5 m3 w1 E48 a0 b128 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r8 m1 w0 E48 a0 b0 s132: e0 m1 bm16 bn256 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r8 m1 w1 E48 a0 b0 s132: e0 m1 bm16 bn256 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r16 m1 w0 E48 a0 b0 s132: e1 m1 bm32 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r16 m1 w1 E48 a0 b0 s132: e0 m1 bm32 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r32 m1 w0 E48 a0 b0 s132: e1 m1 bm48 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r32 m1 w1 E48 a0 b0 s132: e1 m1 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r32 m3 w0 E384 a12288 b16 s78: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r53 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r53 m3 w0 E48 a0 b128 s132: e1 m3 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r53 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r53 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r170 m1 w0 E48 a0 b0 s132: e1 m1 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r170 m1 w1 E48 a0 b0 s132: e2 m1 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r170 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r170 m3 w0 E48 a0 b128 s132: e1 m3 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r170 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r170 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r2048 m0 w0 E48 a0 b0 s132: e2 m0 bm128 bn256 bk64 s6 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r2048 m0 w1 E48 a0 b0 s132: e2 m0 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r2048 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r2048 m3 w0 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s6 wm1 wn4 wg2 w0 sk1
sm_90a n4096 k7168 r2048 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n4096 k7168 r2048 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r3 m1 w0 E48 a0 b0 s132: e0 m1 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r3 m1 w1 E48 a0 b0 s132: e0 m1 bm8 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r3 m3 w0 E48 a0 b64 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r3 m3 w0 E48 a0 b128 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r3 m3 w1 E48 a0 b64 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r3 m3 w1 E48 a0 b128 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r5 m1 w0 E48 a0 b0 s132: e0 m1 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r5 m1 w1 E48 a0 b0 s132: e0 m1 bm8 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r5 m3 w0 E48 a0 b64 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r5 m3 w0 E48 a0 b128 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r5 m3 w1 E48 a0 b64 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r5 m3 w1 E48 a0 b128 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r8 m1 w0 E48 a0 b0 s132: e0 m1 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r8 m1 w1 E48 a0 b0 s132: e0 m1 bm16 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r16 m1 w0 E48 a0 b0 s132: e1 m1 bm32 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r16 m1 w1 E48 a0 b0 s132: e1 m1 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r32 m1 w0 E48 a0 b0 s132: e1 m1 bm48 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r32 m1 w1 E48 a0 b0 s132: e1 m1 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r53 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r53 m3 w0 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s4 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r53 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r53 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r170 m1 w0 E48 a0 b0 s132: e1 m1 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r170 m1 w1 E48 a0 b0 s132: e2 m1 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r170 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r170 m3 w0 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s4 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r170 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r170 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r2048 m0 w0 E48 a0 b0 s132: e1 m0 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r2048 m0 w1 E48 a0 b0 s132: e2 m0 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r2048 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r2048 m3 w0 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s4 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k256 r2048 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k256 r2048 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r3 m1 w0 E48 a0 b0 s132: e0 m1 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r3 m1 w1 E48 a0 b0 s132: e0 m1 bm16 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r3 m3 w0 E48 a0 b64 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r3 m3 w0 E48 a0 b128 s132: e0 m3 bm8 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r3 m3 w1 E48 a0 b64 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r3 m3 w1 E48 a0 b128 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r5 m1 w0 E48 a0 b0 s132: e0 m1 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r5 m1 w1 E48 a0 b0 s132: e0 m1 bm16 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r5 m3 w0 E48 a0 b64 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r5 m3 w0 E48 a0 b128 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r5 m3 w1 E48 a0 b64 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r5 m3 w1 E48 a0 b128 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r8 m1 w0 E48 a0 b0 s132: e0 m1 bm16 bn256 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r8 m1 w1 E48 a0 b0 s132: e0 m1 bm16 bn256 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r16 m1 w0 E48 a0 b0 s132: e1 m1 bm32 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r16 m1 w1 E48 a0 b0 s132: e0 m1 bm32 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r32 m1 w0 E48 a0 b0 s132: e1 m1 bm48 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r32 m1 w1 E48 a0 b0 s132: e1 m1 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r53 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn256 bk64 s4 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r53 m3 w0 E48 a0 b128 s132: e1 m3 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r53 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r53 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r170 m1 w0 E48 a0 b0 s132: e1 m1 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r170 m1 w1 E48 a0 b0 s132: e2 m1 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r170 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn256 bk64 s4 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r170 m3 w0 E48 a0 b128 s132: e1 m3 bm128 bn128 bk64 s5 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r170 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r170 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r512 m3 w2 E128 a65536 b16 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w2 sk1
sm_90a n7168 k2048 r2048 m0 w0 E48 a0 b0 s132: e2 m0 bm128 bn256 bk64 s6 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r2048 m0 w1 E48 a0 b0 s132: e2 m0 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r2048 m3 w0 E48 a0 b64 s132: e1 m3 bm64 bn256 bk64 s4 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r2048 m3 w0 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s6 wm1 wn4 wg2 w0 sk1
sm_90a n7168 k2048 r2048 m3 w1 E48 a0 b64 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r2048 m3 w1 E48 a0 b128 s132: e2 m3 bm128 bn256 bk64 s5 wm1 wn4 wg2 w1 sk1
sm_90a n7168 k2048 r1000000001 m3 w2 E128 a1073741824 b192 s132: e1 m3 bm64 bn128 bk64 s5 wm1 wn4 wg2 w2 sk1
sm_90a n7168 k7168 r512 m3 w0 E128 a65536 b32 s132: e0 m3 bm32 bn128 bk128 s3 wm1 wn4 wg2 w0 sk1
sm_80 n128 k256 r4 m1 w0 E128 a512 b0 s132: e0 m1 bm8 bn64 bk256 s3 wm1 wn4 wg2 w0 sk1
sm_80 n256 k64 r22 m1 w1 E128 a2816 b0 s132: e0 m1 bm64 bn128 bk64 s4 wm2 wn4 wg2 w1 sk1
sm_80 n256 k2048 r32 m3 w2 E128 a4096 b32 s132: e0 m3 bm32 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_80 n1664 k64 r21 m3 w2 E128 a2688 b48 s132: e0 m3 bm16 bn128 bk64 s3 wm1 wn4 wg2 w2 sk1
sm_80 n1664 k7168 r11 m3 w2 E128 a1408 b48 s132: e0 m3 bm16 bn128 bk128 s3 wm1 wn4 wg2 w2 sk1
sm_80 n1664 k7168 r64 m3 w1 E128 a8192 b32 s132: e0 m3 bm32 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_80 n4096 k64 r10 m2 w1 E128 a1280 b0 s132: e0 m2 bm16 bn128 bk64 s3 wm1 wn4 wg2 w1 sk1
sm_80 n4096 k256 r22 m3 w2 E128 a2816 b96 s132: e0 m3 bm32 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_80 n4096 k512 r5 m1 w2 E128 a640 b0 s132: e0 m1 bm8 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_80 n4096 k7168 r21 m0 w1 E128 a2688 b0 s132: e0 m0 bm32 bn128 bk128 s3 wm1 wn4 wg2 w1 sk1
sm_80 n7168 k512 r3 m3 w1 E128 a384 b256 s132: e0 m3 bm8 bn64 bk256 s2 wm1 wn4 wg2 w1 sk1
sm_100a n128 k2048 r1 m0 w1 E128 a128 b0 s132: e0 m0 bm8 bn64 bk256 s2 wm1 wn4 wg2 w1 sk2
sm_100a n128 k2048 r4 m0 w1 E128 a512 b0 s132: e0 m0 bm8 bn64 bk256 s2 wm1 wn4 wg2 w1 sk2
sm_100a n256 k64 r4 m3 w0 E128 a512 b48 s132: e0 m3 bm8 bn128 bk64 s3 wm1 wn4 wg2 w0 sk1
sm_100a n256 k64 r4 m3 w1 E128 a512 b96 s132: e0 m3 bm8 bn128 bk64 s3 wm1 wn4 wg2 w1 sk1
sm_100a n256 k64 r11 m3 w2 E128 a1408 b96 s132: e0 m3 bm16 bn128 bk64 s3 wm1 wn4 wg2 w2 sk1
sm_100a n256 k512 r42 m3 w2 E128 a5376 b32 s132: e0 m3 bm32 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_100a n256 k2048 r5 m0 w0 E128 a640 b0 s132: e0 m0 bm8 bn64 bk256 s3 wm1 wn4 wg2 w0 sk2
sm_100a n512 k512 r22 m2 w2 E128 a2816 b0 s132: e0 m2 bm64 bn128 bk64 s4 wm2 wn4 wg2 w2 sk1
sm_100a n512 k7168 r52 m3 w1 E128 a6656 b96 s132: e0 m3 bm32 bn64 bk256 s2 wm1 wn4 wg2 w1 sk1
sm_100a n1664 k7168 r42 m3 w2 E128 a5376 b32 s132: e0 m3 bm32 bn128 bk128 s3 wm1 wn4 wg2 w2 sk1
sm_100a n2048 k2048 r3 m3 w2 E128 a384 b256 s132: e0 m3 bm8 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_100a n4096 k2048 r64 m3 w2 E128 a8192 b192 s132: e0 m3 bm64 bn128 bk64 s4 wm2 wn4 wg2 w2 sk1
sm_100a n4096 k7168 r53 m2 w2 E128 a6784 b0 s132: e0 m2 bm128 bn128 bk64 s4 wm2 wn4 wg2 w2 sk1
sm_100a n7168 k64 r10 m3 w0 E128 a1280 b128 s132: e0 m3 bm16 bn128 bk64 s3 wm1 wn4 wg2 w0 sk1
sm_120a n128 k64 r6 m3 w2 E128 a768 b16 s132: e0 m3 bm16 bn128 bk64 s3 wm1 wn4 wg2 w2 sk1
sm_120a n128 k2048 r3 m0 w0 E128 a384 b0 s132: e0 m0 bm8 bn64 bk256 s3 wm1 wn4 wg2 w0 sk2
sm_120a n256 k512 r11 m1 w2 E128 a1408 b0 s132: e0 m1 bm16 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_120a n256 k2048 r22 m2 w2 E128 a2816 b0 s132: e0 m2 bm64 bn128 bk64 s4 wm2 wn4 wg2 w2 sk1
sm_120a n512 k64 r4 m3 w2 E128 a512 b48 s132: e0 m3 bm8 bn128 bk64 s3 wm1 wn4 wg2 w2 sk1
sm_120a n512 k7168 r1 m0 w2 E128 a128 b0 s132: e0 m0 bm8 bn64 bk256 s2 wm1 wn4 wg2 w2 sk2
sm_120a n2048 k256 r511 m2 w1 E128 a65408 b0 s132: e0 m2 bm128 bn128 bk64 s3 wm2 wn4 wg2 w1 sk1
sm_120a n4096 k256 r21 m3 w0 E128 a2688 b192 s132: e0 m3 bm32 bn64 bk256 s2 wm1 wn4 wg2 w0 sk1
sm_120a n7168 k7168 r52 m2 w0 E128 a6656 b0 s132: e0 m2 bm128 bn128 bk64 s4 wm2 wn4 wg2 w0 sk1
sm_89 n128 k64 r5 m3 w1 E128 a640 b96 s132: e0 m3 bm8 bn128 bk64 s3 wm1 wn4 wg2 w1 sk1
sm_89 n128 k7168 r8 m2 w2 E128 a1024 b0 s132: e0 m2 bm16 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_89 n128 k7168 r10 m3 w1 E128 a1280 b256 s132: e0 m3 bm16 bn64 bk256 s2 wm1 wn4 wg2 w1 sk1
sm_89 n256 k64 r32 m3 w2 E128 a4096 b64 s132: e0 m3 bm64 bn128 bk64 s4 wm2 wn4 wg2 w2 sk1
sm_89 n256 k64 r1000000001 m3 w2 E128 a1073741824 b48 s132: e0 m3 bm16 bn128 bk64 s3 wm1 wn4 wg2 w2 sk1
sm_89 n256 k256 r1 m0 w2 E128 a128 b0 s132: e0 m0 bm8 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_89 n256 k7168 r21 m3 w2 E128 a2688 b256 s132: e0 m3 bm32 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_89 n1664 k256 r22 m3 w2 E128 a2816 b192 s132: e0 m3 bm64 bn128 bk64 s4 wm2 wn4 wg2 w2 sk1
sm_89 n1664 k512 r1 m3 w1 E128 a128 b192 s132: e0 m3 bm8 bn64 bk256 s2 wm1 wn4 wg2 w1 sk1
sm_89 n1664 k512 r22 m3 w0 E128 a2816 b128 s132: e0 m3 bm64 bn128 bk64 s4 wm2 wn4 wg2 w0 sk1
sm_89 n1664 k512 r32 m3 w0 E128 a4096 b192 s132: e0 m3 bm64 bn128 bk64 s4 wm2 wn4 wg2 w0 sk1
sm_89 n1664 k2048 r6 m1 w2 E128 a768 b0 s132: e0 m1 bm16 bn64 bk256 s2 wm1 wn4 wg2 w2 sk1
sm_89 n4096 k512 r32 m3 w1 E128 a4096 b64 s132: e0 m3 bm64 bn128 bk64 s4 wm2 wn4 wg2 w1 sk1
)";

std::string config_line(const chord::W4A16GemmConfig& c) {
  char text[160];
  std::snprintf(text, sizeof text, "e%d m%d bm%d bn%d bk%d s%d wm%d wn%d wg%d w%d sk%d", static_cast<int>(c.engine),
                static_cast<int>(c.mode), c.block_m, c.block_n, c.block_k, c.stages, c.warps_m, c.warps_n, c.warpgroups,
                static_cast<int>(c.weight), c.split_k);
  // A run of n blocks only where there is one, so the lines pinned before runs stay as they are.
  return c.n_run > 1 ? std::string(text) + " nr" + std::to_string(c.n_run) : std::string(text);
}

// `chord config` under an environment: the config line's fields, or the resolver's error.
struct EnvPin {
  const char* env;
  const char* args;
  const char* expected;  // a part of the output
  bool error;
};
const EnvPin kEnvPins[] = {
    // Masked calls of a few dozen rows per group in vLLM's batched buffer off sm_90a: the
    // heuristic's looping BM64 tile of one warp along M keeps its split under knobs that do not
    // force BM or BN (forced BM64 gets the 256-thread split, one tile per CTA).
    {"CHORD_W4A16_STAGES=4", "--arch sm_100a --mode masked --n 4096 --k 7168 --experts 48 --rows 32 --groups 48 --max-m 2048",
     "block_m=64 block_n=128 block_k=64 stages=4 warps_m=1 warps_n=4 warpgroups=2 split_k=1 threads=128 smem=51968 kernel=w4a16_masked_m64n128k64s4w1x4_ml", false},
    {"CHORD_W4A16_ENGINE=mma_sync", "--arch sm_90a --mode masked --n 4096 --k 7168 --experts 48 --rows 32 --groups 48 --max-m 2048",
     "kernel=w4a16_masked_m64n128k64s4w1x4_ml", false},
    {"CHORD_W4A16_BM=64", "--arch sm_100a --mode masked --n 4096 --k 7168 --experts 48 --rows 32 --groups 48 --max-m 2048",
     "kernel=w4a16_masked_m64n128k64s4w2x4\n", false},
    {"CHORD_W4A16_BM=64 CHORD_W4A16_WARPS_M=1", "--arch sm_100a --mode masked --n 4096 --k 7168 --experts 48 --rows 96 --groups 48 --max-m 2048",
     "kernel=w4a16_masked_m64n128k64s4w1x4_ml", false},
    {"CHORD_W4A16_BM=128 CHORD_W4A16_WARPS_M=2 CHORD_W4A16_WARPS_N=1", "--arch sm_100a --mode masked --n 4096 --k 7168 --experts 48 --rows 96 --groups 48 --max-m 2048",
     "CHORD_W4A16_WARPS_M=2 gives 64 threads, fewer than BLOCK_M = 128", true},
    {"CHORD_W4A16_BM=8 CHORD_W4A16_WARPS_M=2", "--arch sm_100a --mode masked --n 4096 --k 7168 --experts 48 --rows 32 --groups 48 --max-m 2048",
     "BLOCK_M / WARPS_M must be a multiple of 8", true},
    {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_WARPS_M=1", "--arch sm_90a --mode masked --n 4096 --k 7168 --experts 48 --rows 32 --groups 48 --max-m 64",
     "CHORD_W4A16_WARPS_M=1 applies to the mma.sync kernel, not to wgmma", true},
    {"CHORD_SM90_DECODE=1", "--arch sm_90a --mode indexed --n 512 --k 7168 --experts 384 --rows 32 --weight nf4-fp16 --sms 78 --a-rows 12288 --block-size 192 --capacity 86016",
     "engine=mma_sync block_m=64 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_SM90_DECODE=1", "--arch sm_90a --mode masked --n 4096 --k 2048 --experts 48 --rows 43",
     "engine=mma_sync block_m=64 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_SM90_DECODE=0", "--arch sm_90a --mode indexed --n 512 --k 64 --experts 48 --rows 10 --block-size 256",
     "engine=wgmma block_m=128 block_n=128 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_SM90_DECODE=0", "--arch sm_90a --mode indexed --n 128 --k 256 --experts 128 --rows 21 --weight nf4 --a-rows 2688 --block-size 192 --capacity 27264",
     "engine=wgmma block_m=64 block_n=128 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PORTABLE=1", "--arch sm_90a --mode offsets --n 512 --k 7168 --experts 384 --rows 1000000001 --weight nf4 --sms 78 --a-rows 1073741823",
     "engine=mma_sync block_m=128 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PORTABLE=1", "--arch sm_90a --mode indexed --n 512 --k 7168 --experts 384 --rows 169 --sms 78 --a-rows 64896 --block-size 128 --capacity 114048",
     "engine=mma_sync block_m=128 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=ep8", "--arch sm_90a --mode indexed --n 512 --k 512 --experts 384 --rows 5 --weight nf4-fp16 --sms 78 --a-rows 1920 --block-size 32 --capacity 14208",
     "engine=mma_sync block_m=16 block_n=128 block_k=128 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=ep8", "--arch sm_90a --mode indexed --n 256 --k 768 --experts 48 --rows 8 --a-rows 48 --block-size 48 --capacity 2352",
     "engine=mma_sync block_m=16 block_n=256 block_k=128 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=ep8", "--arch sm_89 --mode indexed --n 512 --k 7168 --experts 128 --rows 22 --weight nf4 --a-rows 2816 --block-size 48 --capacity 8960",
     "CHORD_W4A16_PROFILE='ep8' names no tuning table for sm_89 (see tuning_tables/)", true},
    {"CHORD_W4A16_PROFILE=tp8", "--arch sm_90a --mode offsets --n 128 --k 256 --experts 48 --rows 3 --weight nf4-fp16 --a-rows 18",
     "engine=mma_sync block_m=8 block_n=128 block_k=128 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=tp8", "--arch sm_90a --mode indexed --n 256 --k 768 --experts 384 --rows 10 --weight nf4 --sms 78 --a-rows 3840 --block-size 256 --capacity 102144",
     "engine=mma_sync block_m=16 block_n=128 block_k=128 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=tp8", "--arch sm_100a --mode contiguous --n 1664 --k 64 --experts 128 --rows 21 --weight nf4 --a-rows 2688",
     "CHORD_W4A16_PROFILE='tp8' names no tuning table for sm_100a (see tuning_tables/)", true},
    {"CHORD_W4A16_PROFILE=qwen3", "--arch sm_90a --mode indexed --n 4096 --k 2048 --experts 128 --rows 6 --weight nf4 --a-rows 768 --block-size 32 --capacity 4864",
     "engine=mma_sync block_m=16 block_n=256 block_k=128 stages=3 warps_m=1 warps_n=8 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=qwen3", "--arch sm_90a --mode indexed --n 4096 --k 768 --experts 128 --rows 21 --a-rows 2688 --block-size 96 --capacity 14976",
     "engine=mma_sync block_m=32 block_n=128 block_k=128 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=qwen3", "--arch sm_100a --mode indexed --n 2048 --k 7168 --experts 128 --rows 53 --a-rows 6784 --block-size 64 --capacity 14976",
     "CHORD_W4A16_PROFILE='qwen3' names no tuning table for sm_100a (see tuning_tables/)", true},
    {"CHORD_W4A16_PROFILE=heuristic", "--arch sm_90a --mode offsets --n 7168 --k 2048 --experts 48 --rows 11 --weight nf4 --a-rows 66",
     "engine=mma_sync block_m=16 block_n=128 block_k=128 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=heuristic", "--arch sm_90a --mode contiguous --n 512 --k 7168 --experts 384 --rows 0 --sms 78",
     "engine=mma_sync block_m=8 block_n=64 block_k=256 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=nosuch", "--arch sm_89 --mode indexed --n 1664 --k 256 --experts 128 --rows 16 --weight nf4-fp16 --a-rows 2048 --block-size 16 --capacity 4096",
     "CHORD_W4A16_PROFILE='nosuch' names no tuning table for sm_89 (see tuning_tables/)", true},
    {"CHORD_W4A16_ENGINE=mma_sync", "--arch sm_90a --mode indexed --n 128 --k 7168 --experts 384 --rows 170 --weight nf4-fp16 --sms 78 --a-rows 65280 --block-size 128 --capacity 114432",
     "engine=mma_sync block_m=128 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=mma_sync", "--arch sm_90a --mode contiguous --n 1536 --k 256 --experts 48 --rows 170 --weight nf4 --a-rows 1020",
     "engine=mma_sync block_m=128 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma", "--arch sm_90a --mode indexed --n 128 --k 256 --experts 128 --rows 21 --weight nf4 --a-rows 2688 --block-size 64 --capacity 10880",
     "engine=wgmma block_m=64 block_n=128 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma", "--arch sm_90a --mode contiguous --n 128 --k 64 --experts 128 --rows 4 --a-rows 512",
     "engine=wgmma block_m=128 block_n=128 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma", "--arch sm_90a --mode indexed --n 7168 --k 512 --experts 48 --rows 16 --weight nf4-fp16 --a-rows 96 --block-size 32 --capacity 1632",
     "CHORD_W4A16_* force BLOCK_M = 64, which does not divide the routing block_size 32", true},
    {"CHORD_W4A16_ENGINE=wgmma_ws", "--arch sm_90a --mode indexed --n 7168 --k 512 --experts 48 --rows 11 --weight nf4 --a-rows 66 --block-size 128 --capacity 6210",
     "engine=wgmma_ws block_m=128 block_n=256 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma_ws", "--arch sm_90a --mode masked --n 512 --k 512 --experts 128 --rows 512 --a-rows 65536 --groups 128 --max-m 769",
     "engine=wgmma_ws block_m=128 block_n=256 block_k=64 stages=6 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    // Masked, 32 rows per group in vLLM's EP8 buffer: the narrow tile's height on the
    // warp-specialized kernel; a forced one-role engine gets the one-role narrow tile.
    {"CHORD_W4A16_ENGINE=auto", "--arch sm_90a --mode masked --n 4096 --k 7168 --experts 48 --rows 32 --groups 48 --max-m 2048",
     "engine=wgmma_ws block_m=48 block_n=256 block_k=64 stages=6 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma", "--arch sm_90a --mode masked --n 4096 --k 7168 --experts 48 --rows 32 --groups 48 --max-m 2048",
     "engine=wgmma block_m=48 block_n=256 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    // Over 64 rows per group in that buffer: the warp-specialized 128-token tile, and prefer_wgmma's
    // WGMMA defaults do not take a decode call there (8 rows per group keep the looping mma.sync
    // decode tile).
    {"CHORD_W4A16_ENGINE=auto", "--arch sm_90a --mode masked --n 4096 --k 7168 --experts 48 --rows 96 --groups 48 --max-m 2048",
     "engine=wgmma_ws block_m=128 block_n=256 block_k=64 stages=6 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=prefer_wgmma", "--arch sm_90a --mode masked --n 4096 --k 7168 --experts 48 --rows 8 --groups 48 --max-m 2048",
     "kernel=w4a16_masked_m16n256k128s3w1x4_ml", false},
    {"CHORD_W4A16_ENGINE=wgmma_ws", "--arch sm_90a --mode indexed --n 1536 --k 7168 --experts 128 --rows 170 --weight nf4-fp16 --a-rows 21760 --block-size 96 --capacity 34048",
     "CHORD_W4A16_* force BLOCK_M = 128, which does not divide the routing block_size 96", true},
    {"CHORD_W4A16_BM=64", "--arch sm_90a --mode masked --n 1536 --k 2048 --experts 48 --rows 4",
     "engine=mma_sync block_m=64 block_n=128 block_k=128 stages=3 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_BM=64", "--arch sm_90a --mode masked --n 7168 --k 256 --experts 48 --rows 170",
     "engine=mma_sync block_m=64 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_BM=64", "--arch sm_90a --mode indexed --n 7168 --k 512 --experts 48 --rows 169 --weight nf4 --a-rows 1014 --block-size 32 --capacity 2550",
     "CHORD_W4A16_* force BLOCK_M = 64, which does not divide the routing block_size 32", true},
    {"CHORD_W4A16_BN=256", "--arch sm_120a --mode indexed --n 7168 --k 7168 --experts 128 --rows 11 --weight nf4-fp16 --a-rows 1408 --block-size 32 --capacity 5504",
     "engine=mma_sync block_m=16 block_n=256 block_k=128 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_BN=256", "--arch sm_120a --mode indexed --n 256 --k 2048 --experts 128 --rows 53 --weight nf4-fp16 --a-rows 6784 --block-size 128 --capacity 23168",
     "CHORD_W4A16_* force a config of 110848 bytes of shared memory; sm_120a allows 101376 per CTA", true},
    {"CHORD_W4A16_BN=256", "--arch sm_90a --mode indexed --n 1664 --k 7168 --experts 384 --rows 6 --sms 78 --a-rows 2304 --block-size 16 --capacity 8448",
     "CHORD_W4A16_BN/BK = 256/128 do not fit N = 1664, K = 7168: N must be a positive multiple of BLOCK_N", true},
    {"CHORD_W4A16_BK=256", "--arch sm_90a --mode indexed --n 48 --k 768 --experts 128 --rows 1 --weight nf4-fp16 --a-rows 128 --block-size 32 --capacity 4224",
     "engine=mma_sync block_m=8 block_n=16 block_k=256 stages=3 warps_m=1 warps_n=1 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_BK=256", "--arch sm_90a --mode indexed --n 2048 --k 7168 --experts 128 --rows 169 --weight nf4 --a-rows 21632 --block-size 96 --capacity 33920",
     "engine=mma_sync block_m=32 block_n=128 block_k=256 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_BK=256", "--arch sm_120a --mode masked --n 128 --k 64 --experts 128 --rows 1 --weight nf4 --a-rows 128 --groups 128 --max-m 2",
     "CHORD_W4A16_BN/BK = 128/256 do not fit N = 128, K = 64: K must be a positive multiple of BLOCK_K", true},
    {"CHORD_W4A16_STAGES=4", "--arch sm_90a --mode offsets --n 256 --k 512 --experts 48 --rows 11 --weight nf4-fp16 --a-rows 66",
     "engine=mma_sync block_m=16 block_n=64 block_k=256 stages=4 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_STAGES=4", "--arch sm_90a --mode offsets --n 1664 --k 512 --experts 48 --rows 43 --weight nf4-fp16 --a-rows 258",
     "engine=mma_sync block_m=64 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_WARPS_N=2", "--arch sm_100a --mode indexed --n 256 --k 256 --experts 128 --rows 52 --a-rows 6656 --block-size 192 --capacity 31232",
     "engine=mma_sync block_m=64 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=2 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_WARPS_N=2", "--arch sm_80 --mode indexed --n 512 --k 64 --experts 128 --rows 5 --weight nf4-fp16 --a-rows 640 --block-size 96 --capacity 12928",
     "engine=mma_sync block_m=8 block_n=128 block_k=64 stages=3 warps_m=1 warps_n=2 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_WARPS_N=2", "--arch sm_90a --mode indexed --n 48 --k 7168 --experts 48 --rows 2047 --a-rows 12282 --block-size 256 --capacity 24570",
     "CHORD_W4A16_ENGINE/BM/BN/BK/STAGES/WARPS_N/WARPS_M force an invalid config (mma_sync bm=128 bn=16 bk=64 stages=4 warps_n=2 warps_m=2): BLOCK_N / WARPS_N must be a multiple of 16", true},
    {"CHORD_W4A16_SPLIT_K=1", "--arch sm_90a --mode indexed --n 128 --k 2048 --experts 48 --rows 22 --weight nf4-fp16 --a-rows 132 --block-size 16 --capacity 900",
     "engine=mma_sync block_m=16 block_n=64 block_k=256 stages=2 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_SPLIT_K=1", "--arch sm_90a --mode contiguous --n 128 --k 7168 --experts 48 --rows 11 --a-rows 66",
     "engine=mma_sync block_m=16 block_n=64 block_k=256 stages=2 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_SPLIT_K=2", "--arch sm_100a --mode masked --n 7168 --k 256 --experts 128 --rows 21 --a-rows 2688 --groups 128 --max-m 32",
     "engine=mma_sync block_m=32 block_n=64 block_k=256 stages=2 warps_m=1 warps_n=4 warpgroups=2 split_k=2", false},
    {"CHORD_W4A16_SPLIT_K=2", "--arch sm_90a --mode indexed --n 512 --k 64 --experts 48 --rows 52 --a-rows 312 --block-size 96 --capacity 4920",
     "engine=mma_sync block_m=32 block_n=128 block_k=64 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=2", false},
    {"CHORD_W4A16_SPLIT_K=2", "--arch sm_89 --mode indexed --n 2048 --k 64 --experts 128 --rows 3 --weight nf4 --a-rows 384 --block-size 96 --capacity 12672",
     "CHORD_W4A16_SPLIT_K=2 needs sm_90+ (thread block clusters); this GPU is sm_89", true},
    {"CHORD_W4A16_SPLIT_K=4", "--arch sm_90a --mode indexed --n 256 --k 7168 --experts 384 --rows 3 --weight nf4 --sms 78 --a-rows 1152 --block-size 256 --capacity 99456",
     "engine=mma_sync block_m=8 block_n=64 block_k=256 stages=2 warps_m=1 warps_n=4 warpgroups=2 split_k=4", false},
    {"CHORD_W4A16_SPLIT_K=4", "--arch sm_90a --mode indexed --n 2048 --k 2048 --experts 48 --rows 11 --weight nf4 --block-size 32",
     "engine=mma_sync block_m=16 block_n=64 block_k=256 stages=2 warps_m=1 warps_n=4 warpgroups=2 split_k=4", false},
    {"CHORD_W4A16_SPLIT_K=4", "--arch sm_80 --mode indexed --n 2048 --k 2048 --experts 128 --rows 22 --weight nf4-fp16 --a-rows 2816 --block-size 32 --capacity 6912",
     "CHORD_W4A16_SPLIT_K=4 needs sm_90+ (thread block clusters); this GPU is sm_80", true},
    {"CHORD_W4A16_SPLIT_K=8", "--arch sm_90a --mode indexed --n 1536 --k 7168 --experts 48 --rows 3 --block-size 48",
     "engine=mma_sync block_m=8 block_n=128 block_k=128 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=8", false},
    {"CHORD_W4A16_SPLIT_K=8", "--arch sm_90a --mode indexed --n 48 --k 256 --experts 384 --rows 8 --weight nf4 --sms 78 --a-rows 3072 --block-size 256 --capacity 101376",
     "engine=mma_sync block_m=16 block_n=16 block_k=128 stages=3 warps_m=1 warps_n=1 warpgroups=2 split_k=8", false},
    {"CHORD_W4A16_SPLIT_K=8", "--arch sm_89 --mode indexed --n 512 --k 2048 --experts 128 --rows 0 --block-size 96",
     "CHORD_W4A16_SPLIT_K=8 needs sm_90+ (thread block clusters); this GPU is sm_89", true},
    {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_BM=64 CHORD_W4A16_BN=256 CHORD_W4A16_STAGES=4", "--arch sm_90a --mode indexed --n 7168 --k 64 --experts 128 --rows 53 --a-rows 6784 --block-size 128 --capacity 23168",
     "engine=wgmma block_m=64 block_n=256 block_k=64 stages=4 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_BM=64 CHORD_W4A16_BN=256 CHORD_W4A16_STAGES=4", "--arch sm_90a --mode indexed --n 4096 --k 768 --experts 48 --rows 53 --weight nf4-fp16 --a-rows 318 --block-size 192 --capacity 9534",
     "engine=wgmma block_m=64 block_n=256 block_k=64 stages=4 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_BM=64 CHORD_W4A16_BN=256 CHORD_W4A16_STAGES=4", "--arch sm_90a --mode indexed --n 1664 --k 512 --experts 48 --rows 1000000001 --weight nf4 --a-rows 1073741823 --block-size 128 --capacity 1073741823",
     "CHORD_W4A16_BN/BK = 256/64 do not fit N = 1664, K = 512: N must be a positive multiple of BLOCK_N", true},
    {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_BN=256", "--arch sm_90a --mode indexed --n 1536 --k 64 --experts 48 --rows 64 --a-rows 384 --block-size 128 --capacity 6528",
     "engine=wgmma block_m=128 block_n=256 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_BN=256", "--arch sm_90a --mode offsets --n 2048 --k 512 --experts 48 --rows 22 --a-rows 132",
     "engine=wgmma block_m=48 block_n=256 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_BN=256", "--arch sm_89 --mode indexed --n 256 --k 2048 --experts 128 --rows 42 --weight nf4-fp16 --a-rows 5376 --block-size 256 --capacity 38144",
     "CHORD_W4A16_ENGINE=wgmma needs sm_90a; this GPU is sm_89", true},
    {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_STAGES=3", "--arch sm_90a --mode indexed --n 7168 --k 2048 --experts 48 --rows 32 --block-size 192",
     "engine=wgmma block_m=64 block_n=128 block_k=64 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_STAGES=3", "--arch sm_90a --mode contiguous --n 1664 --k 2048 --experts 48 --rows 11 --weight nf4",
     "engine=wgmma block_m=128 block_n=128 block_k=64 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_STAGES=3", "--arch sm_90a --mode indexed --n 1536 --k 512 --experts 128 --rows 256 --a-rows 32768 --block-size 32 --capacity 36864",
     "CHORD_W4A16_* force BLOCK_M = 64, which does not divide the routing block_size 32", true},
    {"CHORD_W4A16_ENGINE=wgmma_ws CHORD_W4A16_STAGES=4", "--arch sm_90a --mode offsets --n 2048 --k 7168 --experts 128 --rows 169 --a-rows 21632",
     "engine=wgmma_ws block_m=128 block_n=256 block_k=64 stages=4 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma_ws CHORD_W4A16_STAGES=4", "--arch sm_90a --mode offsets --n 7168 --k 512 --experts 48 --rows 4 --a-rows 24",
     "engine=wgmma_ws block_m=128 block_n=256 block_k=64 stages=4 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma_ws CHORD_W4A16_STAGES=4", "--arch sm_90a --mode indexed --n 4096 --k 7168 --experts 384 --rows 16 --sms 78 --a-rows 6144 --block-size 48 --capacity 24576",
     "CHORD_W4A16_* force BLOCK_M = 128, which does not divide the routing block_size 48", true},
    {"CHORD_W4A16_ENGINE=wgmma_ws CHORD_W4A16_BN=128", "--arch sm_90a --mode indexed --n 4096 --k 7168 --experts 48 --rows 65536 --weight nf4-fp16 --a-rows 393216 --block-size 128 --capacity 399360",
     "engine=wgmma_ws block_m=128 block_n=128 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma_ws CHORD_W4A16_BN=128", "--arch sm_90a --mode indexed --n 7168 --k 256 --experts 128 --rows 2047 --weight nf4 --a-rows 262016 --block-size 256 --capacity 294784",
     "engine=wgmma_ws block_m=128 block_n=128 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma_ws CHORD_W4A16_BN=128", "--arch sm_120a --mode offsets --n 1664 --k 512 --experts 128 --rows 21 --weight nf4 --a-rows 2688",
     "CHORD_W4A16_ENGINE=wgmma_ws needs sm_90a; this GPU is sm_120a", true},
    {"CHORD_W4A16_ENGINE=mma_sync CHORD_W4A16_BM=16 CHORD_W4A16_BN=128 CHORD_W4A16_BK=128 CHORD_W4A16_STAGES=3 CHORD_W4A16_WARPS_N=4", "--arch sm_90a --mode indexed --n 1536 --k 512 --experts 48 --rows 8 --weight nf4-fp16 --block-size 256",
     "engine=mma_sync block_m=16 block_n=128 block_k=128 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=mma_sync CHORD_W4A16_BM=16 CHORD_W4A16_BN=128 CHORD_W4A16_BK=128 CHORD_W4A16_STAGES=3 CHORD_W4A16_WARPS_N=4", "--arch sm_89 --mode masked --n 256 --k 2048 --experts 128 --rows 4 --weight nf4 --a-rows 512 --groups 128 --max-m 7",
     "engine=mma_sync block_m=16 block_n=128 block_k=128 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=mma_sync CHORD_W4A16_BM=16 CHORD_W4A16_BN=128 CHORD_W4A16_BK=128 CHORD_W4A16_STAGES=3 CHORD_W4A16_WARPS_N=4", "--arch sm_90a --mode indexed --n 48 --k 768 --experts 384 --rows 42 --weight nf4 --sms 78 --a-rows 16128 --block-size 48 --capacity 34560",
     "CHORD_W4A16_BN/BK = 128/128 do not fit N = 48, K = 768: N must be a positive multiple of BLOCK_N", true},
    {"CHORD_W4A16_BN=64 CHORD_W4A16_WARPS_N=2", "--arch sm_90a --mode indexed --n 256 --k 512 --experts 384 --rows 511 --weight nf4-fp16 --sms 78 --a-rows 196224 --block-size 256 --capacity 294528",
     "engine=mma_sync block_m=128 block_n=64 block_k=64 stages=4 warps_m=2 warps_n=2 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_BN=64 CHORD_W4A16_WARPS_N=2", "--arch sm_89 --mode indexed --n 2048 --k 7168 --experts 128 --rows 511 --a-rows 65408 --block-size 64 --capacity 73600",
     "engine=mma_sync block_m=64 block_n=64 block_k=64 stages=4 warps_m=2 warps_n=2 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_BN=64 CHORD_W4A16_WARPS_N=2", "--arch sm_90a --mode indexed --n 48 --k 7168 --experts 48 --rows 256 --a-rows 1536 --block-size 192 --capacity 10752",
     "CHORD_W4A16_BN/BK = 64/64 do not fit N = 48, K = 7168: N must be a positive multiple of BLOCK_N", true},
    {"CHORD_W4A16_STAGES=2", "--arch sm_120a --mode indexed --n 256 --k 512 --experts 128 --rows 43 --weight nf4-fp16 --a-rows 5504 --block-size 64 --capacity 13696",
     "engine=mma_sync block_m=64 block_n=128 block_k=64 stages=2 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_STAGES=2", "--arch sm_90a --mode indexed --n 1536 --k 64 --experts 128 --rows 11 --weight nf4-fp16 --a-rows 1408 --block-size 64 --capacity 9600",
     "engine=mma_sync block_m=16 block_n=128 block_k=64 stages=2 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_WARPS_N=2", "--arch sm_90a --mode offsets --n 2048 --k 256 --experts 384 --rows 65536 --sms 78 --a-rows 25165824",
     "CHORD_W4A16_WARPS_N=2 applies to the mma.sync kernel, not to wgmma", true},
    {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_SPLIT_K=2", "--arch sm_90a --mode indexed --n 4096 --k 256 --experts 128 --rows 3 --weight nf4 --a-rows 384 --block-size 128 --capacity 16768",
     "engine=wgmma block_m=128 block_n=128 block_k=64 stages=4 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_SPLIT_K=2", "--arch sm_90a --mode masked --n 4096 --k 7168 --experts 128 --rows 64 --weight nf4 --a-rows 8192 --groups 128 --max-m 97",
     "engine=wgmma block_m=128 block_n=128 block_k=64 stages=4 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_ENGINE=wgmma CHORD_W4A16_SPLIT_K=2", "--arch sm_89 --mode indexed --n 7168 --k 2048 --experts 128 --rows 8 --a-rows 1024 --block-size 32 --capacity 5120",
     "CHORD_W4A16_ENGINE=wgmma needs sm_90a; this GPU is sm_89", true},
    {"CHORD_W4A16_BM=8 CHORD_W4A16_SPLIT_K=2", "--arch sm_90a --mode indexed --n 1536 --k 768 --experts 128 --rows 6 --weight nf4-fp16 --a-rows 768 --block-size 32 --capacity 4864",
     "engine=mma_sync block_m=8 block_n=64 block_k=256 stages=2 warps_m=1 warps_n=4 warpgroups=2 split_k=2", false},
    {"CHORD_W4A16_BM=8 CHORD_W4A16_SPLIT_K=2", "--arch sm_100a --mode indexed --n 256 --k 7168 --experts 128 --rows 1000000001 --weight nf4-fp16 --a-rows 1073741823 --block-size 64 --capacity 1073741823",
     "engine=mma_sync block_m=8 block_n=128 block_k=64 stages=4 warps_m=1 warps_n=4 warpgroups=2 split_k=2", false},
    {"CHORD_W4A16_BM=8 CHORD_W4A16_SPLIT_K=2", "--arch sm_80 --mode indexed --n 512 --k 7168 --experts 128 --rows 6 --a-rows 768 --block-size 128 --capacity 17152",
     "CHORD_W4A16_SPLIT_K=2 needs sm_90+ (thread block clusters); this GPU is sm_80", true},
    {"CHORD_SM90_DECODE=0 CHORD_W4A16_PROFILE=tp8", "--arch sm_90a --mode indexed --n 1664 --k 256 --experts 48 --rows 5 --weight nf4 --block-size 96",
     "engine=mma_sync block_m=8 block_n=128 block_k=128 stages=3 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_SM90_DECODE=0 CHORD_W4A16_PROFILE=tp8", "--arch sm_90a --mode indexed --n 4096 --k 2048 --experts 384 --rows 8 --sms 78 --a-rows 3072 --block-size 128 --capacity 52224",
     "engine=wgmma block_m=128 block_n=128 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_SM90_DECODE=0 CHORD_W4A16_PROFILE=tp8", "--arch sm_100a --mode contiguous --n 256 --k 7168 --experts 128 --rows 0 --weight nf4",
     "CHORD_W4A16_PROFILE='tp8' names no tuning table for sm_100a (see tuning_tables/)", true},
    {"CHORD_SM90_DECODE=0 CHORD_W4A16_PROFILE=qwen3", "--arch sm_90a --mode masked --n 1536 --k 64 --experts 384 --rows 5 --sms 78 --a-rows 1920 --groups 384 --max-m 8",
     "engine=wgmma block_m=128 block_n=128 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_SM90_DECODE=0 CHORD_W4A16_PROFILE=qwen3", "--arch sm_90a --mode indexed --n 4096 --k 512 --experts 48 --rows 8 --weight nf4 --block-size 32",
     "engine=mma_sync block_m=16 block_n=256 block_k=128 stages=3 warps_m=1 warps_n=8 warpgroups=2 split_k=1", false},
    {"CHORD_SM90_DECODE=0 CHORD_W4A16_PROFILE=qwen3", "--arch sm_120a --mode indexed --n 128 --k 2048 --experts 128 --rows 1 --weight nf4 --a-rows 128 --block-size 48 --capacity 6272",
     "CHORD_W4A16_PROFILE='qwen3' names no tuning table for sm_120a (see tuning_tables/)", true},
    {"CHORD_SM90_DECODE=1 CHORD_W4A16_PROFILE=ep8", "--arch sm_90a --mode indexed --n 256 --k 256 --experts 128 --rows 256 --a-rows 32768 --block-size 256 --capacity 65536",
     "engine=mma_sync block_m=128 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_SM90_DECODE=1 CHORD_W4A16_PROFILE=ep8", "--arch sm_90a --mode indexed --n 7168 --k 7168 --experts 384 --rows 511 --weight nf4 --sms 78 --a-rows 196224 --block-size 256 --capacity 294528",
     "engine=mma_sync block_m=128 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_SM90_DECODE=1 CHORD_W4A16_PROFILE=ep8", "--arch sm_89 --mode contiguous --n 128 --k 2048 --experts 128 --rows 1000000001 --weight nf4 --a-rows 1073741823",
     "CHORD_W4A16_PROFILE='ep8' names no tuning table for sm_89 (see tuning_tables/)", true},
    {"CHORD_SM90_DECODE=1 CHORD_W4A16_ENGINE=wgmma", "--arch sm_90a --mode indexed --n 4096 --k 256 --experts 48 --rows 8 --weight nf4 --block-size 192",
     "engine=wgmma block_m=64 block_n=128 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_SM90_DECODE=1 CHORD_W4A16_ENGINE=wgmma", "--arch sm_90a --mode indexed --n 256 --k 64 --experts 384 --rows 11 --sms 78 --a-rows 4224 --block-size 256 --capacity 102528",
     "engine=wgmma block_m=128 block_n=128 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_SM90_DECODE=1 CHORD_W4A16_ENGINE=wgmma", "--arch sm_120a --mode masked --n 7168 --k 512 --experts 128 --rows 4 --a-rows 512 --groups 128 --max-m 7",
     "CHORD_W4A16_ENGINE=wgmma needs sm_90a; this GPU is sm_120a", true},
    {"CHORD_SM90_DECODE=0 CHORD_W4A16_ENGINE=mma_sync", "--arch sm_90a --mode masked --n 256 --k 64 --experts 48 --rows 169 --weight nf4 --a-rows 1014 --groups 48 --max-m 254",
     "engine=mma_sync block_m=128 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_SM90_DECODE=0 CHORD_W4A16_ENGINE=mma_sync", "--arch sm_90a --mode indexed --n 1536 --k 768 --experts 48 --rows 511 --weight nf4-fp16 --a-rows 3066 --block-size 128 --capacity 9210",
     "engine=mma_sync block_m=128 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PORTABLE=1 CHORD_W4A16_ENGINE=wgmma", "--arch sm_90a --mode contiguous --n 1664 --k 768 --experts 384 --rows 3 --weight nf4 --sms 78 --a-rows 1152",
     "engine=wgmma block_m=128 block_n=128 block_k=64 stages=4 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PORTABLE=1 CHORD_W4A16_ENGINE=wgmma", "--arch sm_90a --mode offsets --n 256 --k 2048 --experts 48 --rows 10 --weight nf4",
     "engine=wgmma block_m=128 block_n=128 block_k=64 stages=4 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PORTABLE=1 CHORD_W4A16_ENGINE=wgmma", "--arch sm_90a --mode indexed --n 48 --k 64 --experts 48 --rows 10 --weight nf4-fp16 --block-size 256",
     "CHORD_W4A16_BN/BK = 128/64 do not fit N = 48, K = 64: N must be a positive multiple of BLOCK_N", true},
    {"CHORD_W4A16_PORTABLE=1 CHORD_SM90_DECODE=0", "--arch sm_90a --mode indexed --n 2048 --k 2048 --experts 48 --rows 512 --weight nf4-fp16 --a-rows 3072 --block-size 64 --capacity 6144",
     "engine=mma_sync block_m=64 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PORTABLE=1 CHORD_SM90_DECODE=0", "--arch sm_90a --mode indexed --n 4096 --k 2048 --experts 128 --rows 43 --weight nf4-fp16 --a-rows 5504 --block-size 192 --capacity 30080",
     "engine=mma_sync block_m=64 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=ep8 CHORD_W4A16_ENGINE=wgmma_ws", "--arch sm_90a --mode indexed --n 7168 --k 7168 --experts 48 --rows 52 --a-rows 312 --block-size 128 --capacity 6456",
     "engine=wgmma_ws block_m=128 block_n=256 block_k=64 stages=6 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=ep8 CHORD_W4A16_ENGINE=wgmma_ws", "--arch sm_90a --mode offsets --n 7168 --k 512 --experts 48 --rows 10",
     "engine=wgmma_ws block_m=128 block_n=256 block_k=64 stages=6 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=ep8 CHORD_W4A16_ENGINE=wgmma_ws", "--arch sm_90a --mode indexed --n 2048 --k 7168 --experts 384 --rows 11 --weight nf4 --sms 78 --a-rows 4224 --block-size 96 --capacity 41088",
     "CHORD_W4A16_* force BLOCK_M = 128, which does not divide the routing block_size 96", true},
    {"CHORD_W4A16_PROFILE=tp8 CHORD_W4A16_ENGINE=wgmma", "--arch sm_90a --mode offsets --n 1536 --k 768 --experts 48 --rows 0 --weight nf4",
     "engine=wgmma block_m=128 block_n=128 block_k=64 stages=4 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=tp8 CHORD_W4A16_ENGINE=wgmma", "--arch sm_90a --mode indexed --n 128 --k 7168 --experts 128 --rows 0 --block-size 192",
     "engine=wgmma block_m=64 block_n=128 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=tp8 CHORD_W4A16_ENGINE=wgmma", "--arch sm_90a --mode indexed --n 48 --k 64 --experts 384 --rows 42 --sms 78 --a-rows 16128 --block-size 64 --capacity 40704",
     "CHORD_W4A16_BN/BK = 128/64 do not fit N = 48, K = 64: N must be a positive multiple of BLOCK_N", true},
    {"CHORD_W4A16_PROFILE=qwen3 CHORD_W4A16_ENGINE=mma_sync", "--arch sm_90a --mode indexed --n 1664 --k 512 --experts 48 --rows 65536 --a-rows 393216 --block-size 128 --capacity 399360",
     "engine=mma_sync block_m=128 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=qwen3 CHORD_W4A16_ENGINE=mma_sync", "--arch sm_90a --mode masked --n 1664 --k 768 --experts 128 --rows 42 --a-rows 5376 --groups 128 --max-m 64",
     "engine=mma_sync block_m=64 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=qwen3 CHORD_W4A16_ENGINE=mma_sync", "--arch sm_80 --mode indexed --n 256 --k 2048 --experts 128 --rows 32 --weight nf4-fp16 --a-rows 4096 --block-size 96 --capacity 16384",
     "CHORD_W4A16_PROFILE='qwen3' names no tuning table for sm_80 (see tuning_tables/)", true},
    {"CHORD_W4A16_PROFILE=heuristic CHORD_SM90_DECODE=0", "--arch sm_90a --mode indexed --n 128 --k 7168 --experts 48 --rows 10 --weight nf4-fp16 --block-size 64",
     "engine=wgmma block_m=64 block_n=128 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=heuristic CHORD_SM90_DECODE=0", "--arch sm_90a --mode masked --n 7168 --k 2048 --experts 48 --rows 0",
     "engine=wgmma block_m=128 block_n=128 block_k=64 stages=5 warps_m=1 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=tp8 CHORD_W4A16_BM=128", "--arch sm_90a --mode indexed --n 1664 --k 2048 --experts 48 --rows 4 --a-rows 24 --block-size 128 --capacity 6168",
     "engine=mma_sync block_m=128 block_n=128 block_k=128 stages=3 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=tp8 CHORD_W4A16_BM=128", "--arch sm_90a --mode masked --n 1664 --k 64 --experts 384 --rows 43 --weight nf4 --sms 78 --a-rows 16512 --groups 384 --max-m 65",
     "engine=mma_sync block_m=128 block_n=128 block_k=64 stages=4 warps_m=2 warps_n=4 warpgroups=2 split_k=1", false},
    {"CHORD_W4A16_PROFILE=tp8 CHORD_W4A16_BM=128", "--arch sm_120a --mode masked --n 1664 --k 256 --experts 128 --rows 3 --a-rows 384 --groups 128 --max-m 5",
     "CHORD_W4A16_PROFILE='tp8' names no tuning table for sm_120a (see tuning_tables/)", true},
};

}  // namespace

TEST_CASE("config pins: the resolver picks the pinned config for every sampled problem", "[tuning]") {
  std::istringstream in(kPinned);
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    char arch[16];
    int n, k, mode, weight, experts, a_rows, block, sms, used = 0;
    int64_t rows;
    REQUIRE(std::sscanf(line.c_str(), "%15s n%d k%d r%" SCNd64 " m%d w%d E%d a%d b%d s%d: %n", arch, &n, &k, &rows,
                        &mode, &weight, &experts, &a_rows, &block, &sms, &used) == 10);
    chord::W4A16Problem p;
    p.arch = chord::parse_arch(arch);
    p.n = n;
    p.k = k;
    p.rows_per_expert = rows;
    p.mode = static_cast<chord::W4A16Mode>(mode);
    p.weight = static_cast<chord::W4A16WeightKind>(weight);
    p.experts = experts;
    p.a_rows = a_rows;
    p.block_size = block;
    p.sm_count = sms;
    if (a_rows > 0 && p.mode == chord::kW4A16Masked) {
      p.num_groups = experts;
      p.max_m = static_cast<int>(std::min<int64_t>(1 << 20, rows + rows / 2 + 1));
    }
    if (a_rows > 0 && p.mode == chord::kW4A16Indexed) {
      p.capacity = static_cast<int>(std::min<int64_t>(1 << 30, int64_t{a_rows} + int64_t{experts} * block));
    }
    INFO(line);
    CHECK(config_line(chord::resolve_w4a16_config(p)) == line.substr(used));
    ++checked;
  }
  CHECK(checked > 300);
}

TEST_CASE("config pins: chord config picks the pinned config under CHORD_W4A16_* overrides", "[tuning][cli]") {
  for (const auto& pin : kEnvPins) {
    int code = -1;
    const std::string command = std::string(pin.env) + " " + CHORD_CLI_PATH + " config " + pin.args;
    const std::string out = chord::test::run_command(command, &code);
    INFO(command << " -> " << out);
    CHECK(code == (pin.error ? 1 : 0));
    CHECK(out.find(pin.expected) != std::string::npos);
  }
}
