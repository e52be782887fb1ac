/* chord's C API from plain C99: the error contract (no GPU needed), then, on a GPU, an INT4
 * weight packed, dequantized and multiplied by the grouped GEMM (offsets mode), each result
 * checked against the same computation on the CPU. Device memory comes from the CUDA runtime.
 *
 * Build outside CMake, from the repository root after scripts/setup.sh (the line README.md
 * gives and CI runs):
 *   cc examples/c_api_example.c -std=c99 -I include -I /usr/local/cuda/include -o build/c_api_example \
 *     -L build -lchord -L /usr/local/cuda/lib64 -lcudart -Wl,-rpath,"$PWD/build:/usr/local/cuda/lib64"
 *   build/c_api_example
 * CMake builds it too (build/chord_c_example, run by ctest). Exit status: 0 checked on the GPU;
 * 77 no GPU (after the checks that need none); 1 a check failed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "chord/chord.h"

enum { E = 2, N = 64, K = 128, S = 5 }; /* 2 experts of [N, K]; 5 rows: 3 for expert 0, 2 for 1 */

static uint16_t float_to_bf16(float f) { /* round to nearest even; the inputs below are finite */
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

static float bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* Stops with a message naming the failed call. */
static void check_cuda(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    fprintf(stderr, "c_api_example: %s: %s\n", what, cudaGetErrorString(error));
    exit(1);
  }
}

static void check_chord(chord_status_t status, const char* what) {
  if (status != CHORD_SUCCESS) {
    fprintf(stderr, "c_api_example: %s: %s: %s\n", what, chord_status_string(status), chord_last_error());
    exit(1);
  }
}

static void* to_device(const void* host, size_t bytes) {
  void* dev = NULL;
  check_cuda(cudaMalloc(&dev, bytes), "cudaMalloc");
  if (host != NULL) check_cuda(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the GPU");
  return dev;
}

/* The checks that need no GPU: bad arguments are refused by name before anything runs. */
static int error_contract(void) {
  chord_status_t status;
  chord_w4a16_weight_t weight;
  status = chord_int4_dequantize_codes(NULL, NULL, NULL, 1, 64, 48, NULL);
  printf("K = 48: %s: %s\n", chord_status_string(status), chord_last_error());
  if (status != CHORD_ERROR_INVALID_ARGUMENT || strstr(chord_last_error(), "'K'") == NULL) return 0;
  memset(&weight, 0, sizeof weight); /* a packed weight whose tag is wrong */
  status = chord_w4a16_offsets(NULL, 8, &weight, NULL, NULL, NULL);
  printf("zeroed weight tag: %s: %s\n", chord_status_string(status), chord_last_error());
  return status == CHORD_ERROR_INVALID_ARGUMENT && strstr(chord_last_error(), "weight") != NULL;
}

int main(void) {
  static uint8_t codes[E * N * K];
  static uint16_t scales[E * N * (K / 32)], x[S * K], out[S * N], dequantized[E * N * K];
  static float w[E * N * K]; /* the logical weight, (code - 8) * scale */
  const int32_t offsets[E] = {3, S};
  int devices = 0, e, n, k, s, g, bad = 0;
  double worst = 0.0;
  cudaError_t found;
  chord_w4a16_weight_t weight;
  void *codes_dev, *scales_dev, *weight_dev, *packed_scales_dev, *x_dev, *offsets_dev, *out_dev, *dequantized_dev;

  setvbuf(stdout, NULL, _IOLBF, BUFSIZ); /* lines in order with stderr's, also through a pipe */
  if (chord_api_version() != CHORD_API_VERSION) {
    fprintf(stderr, "c_api_example: chord.h is API %d, the library %d\n", CHORD_API_VERSION, chord_api_version());
    return 1;
  }
  printf("chord %s, C API %d\n", chord_version(), chord_api_version());
  if (!error_contract()) {
    fprintf(stderr, "c_api_example: FAILED: a bad argument was not refused as documented\n");
    return 1;
  }
  found = cudaGetDeviceCount(&devices);
  if (found != cudaSuccess || devices == 0) {
    fprintf(stderr, "c_api_example: no CUDA GPU to run on (cudaGetDeviceCount: %s); the checks that need none "
            "passed\n", found != cudaSuccess ? cudaGetErrorString(found) : "no device is visible");
    return 77;
  }
  check_cuda(cudaSetDevice(0), "cudaSetDevice"); /* chord launches in the current context */

  /* Weights and inputs chosen exact in BF16, so the CPU reference differs from the GPU only
   * in the order of the FP32 sums and the final rounding. */
  for (e = 0; e < E; ++e) {
    for (n = 0; n < N; ++n) {
      for (g = 0; g < K / 32; ++g) {
        scales[(e * N + n) * (K / 32) + g] = float_to_bf16((float)(1 + (n + g + e) % 4) / 64.0f);
      }
      for (k = 0; k < K; ++k) {
        const int i = (e * N + n) * K + k;
        codes[i] = (uint8_t)((e * 7 + n * 3 + k * 5) % 16);
        w[i] = (float)(codes[i] - 8) * bf16_to_float(scales[(e * N + n) * (K / 32) + k / 32]);
      }
    }
  }
  for (s = 0; s < S * K; ++s) x[s] = float_to_bf16((float)(s % 7 - 3) / 4.0f);

  codes_dev = to_device(codes, sizeof codes);
  scales_dev = to_device(scales, sizeof scales);
  weight_dev = to_device(NULL, (size_t)chord_w4a16_weight_bytes(E, N, K));
  packed_scales_dev = to_device(NULL, (size_t)chord_w4a16_scale_bytes(E, N, K));
  x_dev = to_device(x, sizeof x);
  offsets_dev = to_device(offsets, sizeof offsets);
  out_dev = to_device(NULL, sizeof out);
  dequantized_dev = to_device(NULL, sizeof dequantized);

  /* Pack once (on the GPU, on the default stream), then run; the first call of each kernel
   * compiles it with NVRTC and keeps the cubin in the cache. */
  check_chord(chord_w4a16_pack(codes_dev, 0, scales_dev, E, N, K, weight_dev, packed_scales_dev, &weight, NULL),
              "chord_w4a16_pack");
  check_chord(chord_w4a16_dequantize(&weight, dequantized_dev, NULL), "chord_w4a16_dequantize");
  check_chord(chord_w4a16_offsets(x_dev, S, &weight, (const int32_t*)offsets_dev, out_dev, NULL),
              "chord_w4a16_offsets");
  check_cuda(cudaMemcpy(dequantized, dequantized_dev, sizeof dequantized, cudaMemcpyDeviceToHost), "cudaMemcpy back");
  check_cuda(cudaMemcpy(out, out_dev, sizeof out, cudaMemcpyDeviceToHost), "cudaMemcpy back");

  for (k = 0; k < E * N * K; ++k) bad += dequantized[k] != float_to_bf16(w[k]);
  printf("dequantize: %d of %d weights differ from the CPU's (expected 0)\n", bad, E * N * K);
  for (s = 0; s < S; ++s) { /* out[s] = x[s] @ W[expert of s]^T */
    e = s < offsets[0] ? 0 : 1;
    for (n = 0; n < N; ++n) {
      float ref = 0.0f;
      double error;
      for (k = 0; k < K; ++k) ref += bf16_to_float(x[s * K + k]) * w[(e * N + n) * K + k];
      error = fabs(bf16_to_float(out[s * N + n]) - ref) / (fabs(ref) + 1.0);
      if (error > worst) worst = error;
    }
  }
  printf("grouped GEMM (offsets), %d rows x %d experts of [%d, %d]: largest error %.2e (limit 1e-2)\n", S, E, N, K,
         worst);

  cudaFree(codes_dev);
  cudaFree(scales_dev);
  cudaFree(weight_dev);
  cudaFree(packed_scales_dev);
  cudaFree(x_dev);
  cudaFree(offsets_dev);
  cudaFree(out_dev);
  cudaFree(dequantized_dev);
  if (bad != 0 || !(worst <= 1e-2)) {
    fprintf(stderr, "c_api_example: FAILED\n");
    return 1;
  }
  printf("OK\n");
  return 0;
}
