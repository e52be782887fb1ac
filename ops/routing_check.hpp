// Optional device-side routing validation (CHORD_VALIDATE_ROUTING=1; chord.h).
#pragma once
#include <cuda.h>

#include "chord/chord.h"
#include "kernels_src/w4a16_args.cuh"

namespace chord {

// Enqueues the check of args' routing tensors on `stream` (no host sync).
void enqueue_routing_check(const W4A16Args& args, CUstream stream);

// Synchronizes the current context; fills *report and clears the flag. Throws
// Error(CHORD_ERROR_INVALID_ARGUMENT) describing a recorded violation.
void routing_check_report(chord_routing_report_t* report);

}  // namespace chord
