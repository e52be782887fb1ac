// NVRTC wrapper: one generated source + the embedded headers -> cubin for one arch.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/arch.hpp"

namespace chord {

struct CompileRequest {
  std::string name;                  // for logs and dumps, e.g. "int4_dequant_codes"
  std::string source;                // generated instantiation text
  Arch arch;
  std::vector<std::string> options;  // extra NVRTC options (arch and standard are added)
};

// The options that identify a compile, part of the kernel key. NVRTC also receives the
// CUDA include folder (see compiler.cpp), which is kept out of the key.
std::vector<std::string> nvrtc_options(const CompileRequest& request);

// "13.0"
std::string nvrtc_version();

// Compiles to a cubin. On failure throws Error(CHORD_ERROR_COMPILE) with the NVRTC log and
// the path where the generated source was dumped: a new file in `dump_dir` (a private
// folder), or with dump_dir "" in a new private folder under $TMPDIR or /tmp. `log`, if
// given, receives the NVRTC log of a successful compile (ptxas notes such as wgmma
// serialization, C7510-C7520, land there).
std::vector<char> compile_to_cubin(const CompileRequest& request, const std::string& dump_dir,
                                   std::string* log = nullptr);

// NVRTC invocations in this process (tests count them to prove cache hits).
uint64_t nvrtc_compile_count();

}  // namespace chord
