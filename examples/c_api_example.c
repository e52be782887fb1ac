/* A plain C program against chord.h: proves the header is C-compatible and shows the
 * error contract. With a GPU it also dequantizes a small INT4 weight.
 * Built by CMake as chord_c_example; run: build/chord_c_example */
#include <stdio.h>
#include <string.h>

#include "chord/chord.h"

int main(void) {
  chord_status_t status;
  chord_w4a16_weight_t weight;
  if (chord_api_version() != CHORD_API_VERSION) {
    fprintf(stderr, "header/library version mismatch\n");
    return 1;
  }
  printf("chord %s, C API %d\n", chord_version(), chord_api_version());

  /* A bad argument: the status says what kind, chord_last_error() names the argument. */
  status = chord_int4_dequantize_codes(NULL, NULL, NULL, 1, 64, 48, NULL);
  printf("K = 48: %s: %s\n", chord_status_string(status), chord_last_error());
  if (status != CHORD_ERROR_INVALID_ARGUMENT || strstr(chord_last_error(), "'K'") == NULL) return 1;

  /* A packed weight whose tag is wrong is refused before anything is launched. */
  memset(&weight, 0, sizeof weight);
  status = chord_w4a16_offsets(NULL, 8, &weight, NULL, NULL, NULL);
  printf("zeroed weight tag: %s: %s\n", chord_status_string(status), chord_last_error());
  if (status != CHORD_ERROR_INVALID_ARGUMENT || strstr(chord_last_error(), "weight") == NULL) return 1;
  return 0;
}
