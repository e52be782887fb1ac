// Reads what a cubin says about itself, on the host, without a GPU: the target arch and
// the kernel metadata that every generated source exports as
//   extern "C" __constant__ unsigned int chord_kernel_meta[4] = {threads, smem, cluster, 0};
// so that a cubin loaded from disk needs no side table.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace chord {

struct KernelMeta {
  uint32_t threads = 0;        // block size
  uint32_t shared_bytes = 0;   // dynamic shared memory
  uint32_t cluster_size = 1;   // CTAs per cluster (1 = no cluster)
};

struct CubinInfo {
  int sm = 0;                  // from the ELF header flags, e.g. 90
  std::string arch;            // from the toolkit note, e.g. "sm_90a" (empty if absent)
  KernelMeta meta;
  bool has_meta = false;
  int registers = 0;           // per thread, most of any kernel in the cubin (0: not recorded)
};

// Throws Error(CHORD_ERROR_INTERNAL) naming `origin` (e.g. the cache entry the bytes came
// from) when the bytes are not a well-formed CUDA ELF; never reads outside them.
CubinInfo read_cubin_info(const std::vector<char>& cubin, const std::string& origin = "cubin");

}  // namespace chord
