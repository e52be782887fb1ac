#include "jit/compiler.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>

#include <nvrtc.h>

#include "core/embedded_headers.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/safe_file.hpp"
#include "jit/cuda_headers.hpp"

namespace chord {
namespace {

std::atomic<uint64_t> g_compiles{0};

void check_nvrtc(nvrtcResult result, const char* what) {
  if (result != NVRTC_SUCCESS) {
    fail(CHORD_ERROR_COMPILE, "NVRTC {} failed: {}", what, nvrtcGetErrorString(result));
  }
}

// A fresh file (O_EXCL, 0600) in the caller's folder or a new private one: a file or symlink
// planted under a predictable name cannot redirect the write.
std::string dump_source(const CompileRequest& request, const std::string& dump_dir) {
  const std::string dir = dump_dir.empty() ? make_private_temp_dir("chord-dump") : dump_dir;
  const std::string path = dir.empty() ? "" : write_private_file(dir, request.name, ".cu", request.source);
  return path.empty() ? fmt::format("(could not write the source into {})", dir.empty() ? "a temp folder" : dir)
                      : path;
}

// Owns an nvrtcProgram so every exit path destroys it.
struct Program {
  nvrtcProgram handle = nullptr;
  ~Program() {
    if (handle != nullptr) nvrtcDestroyProgram(&handle);
  }
};

}  // namespace

std::vector<std::string> nvrtc_options(const CompileRequest& request) {
  std::vector<std::string> options = {"-std=c++17", "--gpu-architecture=" + request.arch.name(),
                                      "-default-device", "-DCHORD_JIT=1"};
  if (env().jit_debug) options.push_back("-lineinfo");
  options.insert(options.end(), request.options.begin(), request.options.end());
  return options;
}

// The CUDA include folder is passed to NVRTC but kept out of nvrtc_options (and so out of
// the kernel key): chord's kernels include only the embedded headers, so where the toolkit
// is installed cannot change a cubin, and kernels built on one machine (the wheel's) stay
// cache hits on another.
static std::vector<std::string> nvrtc_compile_options(const CompileRequest& request) {
  std::vector<std::string> options = nvrtc_options(request);
  const CudaHeaders& headers = cuda_headers();
  if (!headers.include_dir.empty()) options.push_back("--include-path=" + headers.include_dir);
  return options;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check_nvrtc(nvrtcVersion(&major, &minor), "version query");
  return fmt::format("{}.{}", major, minor);
}

std::vector<char> compile_to_cubin(const CompileRequest& request, const std::string& dump_dir, std::string* log_out) {
  const auto& headers = embedded_headers();
  std::vector<std::string> header_names, header_contents;
  for (const auto& h : headers) {
    header_names.emplace_back(h.name);
    header_contents.emplace_back(h.contents);
  }
  std::vector<const char*> name_ptrs, content_ptrs;
  for (size_t i = 0; i < headers.size(); ++i) {
    name_ptrs.push_back(header_names[i].c_str());
    content_ptrs.push_back(header_contents[i].c_str());
  }
  std::vector<std::string> options = nvrtc_compile_options(request);
  std::vector<const char*> option_ptrs;
  for (const auto& o : options) option_ptrs.push_back(o.c_str());

  auto start = std::chrono::steady_clock::now();
  Program program;
  check_nvrtc(nvrtcCreateProgram(&program.handle, request.source.c_str(), (request.name + ".cu").c_str(),
                                 static_cast<int>(headers.size()), content_ptrs.data(), name_ptrs.data()),
              "create program");
  g_compiles.fetch_add(1);
  nvrtcResult result = nvrtcCompileProgram(program.handle, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(program.handle, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 1) nvrtcGetProgramLog(program.handle, log.data());
  log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
  if (result != NVRTC_SUCCESS) {
    std::string path = dump_source(request, dump_dir);
    fail(CHORD_ERROR_COMPILE, "NVRTC could not compile {} for {}: {}\n{}\ngenerated source: {}", request.name,
         request.arch.name(), nvrtcGetErrorString(result), log, path);
  }
  size_t cubin_size = 0;
  check_nvrtc(nvrtcGetCUBINSize(program.handle, &cubin_size), "cubin size query");
  std::vector<char> cubin(cubin_size);
  check_nvrtc(nvrtcGetCUBIN(program.handle, cubin.data()), "cubin query");
  if (env().jit_debug) {
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "chord: compiled %s for %s in %.0f ms (%zu bytes; CUDA headers: %s)\n%s",
                 request.name.c_str(), request.arch.name().c_str(), ms, cubin_size,
                 cuda_headers().origin.c_str(), log.c_str());
  }
  if (log_out != nullptr) *log_out = log;
  return cubin;
}

uint64_t nvrtc_compile_count() { return g_compiles.load(); }

}  // namespace chord
