// The `chord` command line: precompile kernels into the disk cache, describe the install, show
// the config the resolver picks for a GEMM shape.
#include <chrono>
#include <climits>
#include <memory>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "chord/chord.h"
#include "jit/arch.hpp"
#include "jit/compiler.hpp"
#include "jit/cuda_headers.hpp"
#include "jit/env.hpp"
#include "jit/error.hpp"
#include "jit/kernel_source.hpp"
#include "jit/profiles.hpp"
#include "jit/runtime.hpp"
#include "launcher/driver_api.hpp"
#include "tuning_tables/w4a16_resolver.hpp"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: chord precompile --arch ARCH --profile NAME [--out DIR]\n"
               "                                                     compile a profile's kernels into the cache, or\n"
               "                                                     into DIR: a folder for others to read through\n"
               "                                                     CHORD_CACHE_READONLY_DIRS (0755, entries 0644)\n"
               "       chord info                                    versions, cache, visible GPUs\n"
               "       chord config --arch ARCH --mode MODE --n N --k K --experts E --rows R [--weight W]\n"
               "                    [--a-rows S] [--groups G --max-m M] [--capacity C] [--block-size B] [--sms SMS]\n"
               "                    [--cubin FILE]\n"
               "                                                     the W4A16 config and kernel the resolver picks;\n"
               "                                                     --cubin: compile it (no cache), write the cubin\n"
               "                                                     (for nvdisasm), print ptxas's report\n"
               "         MODE: contiguous | masked | offsets | indexed; W: int4 (default) | nf4 | nf4-fp16\n"
               "         R: expected rows per expert as the operator derives it (contiguous m / E, offsets\n"
               "            S / E, masked expected_m or max_m, indexed M * top_k / E); S, G / M, C: the\n"
               "            call's rows (split-K needs them), B: indexed routing block, SMS: default 132\n");
  return 2;
}

void progress(size_t done, size_t total, const std::string& what) {
  const int width = 30;
  int filled = total == 0 ? width : static_cast<int>(width * done / total);
  std::fprintf(stderr, "\r[%s%s] %zu/%zu %-48.48s", std::string(filled, '#').c_str(),
               std::string(width - filled, ' ').c_str(), done, total, what.c_str());
  if (done == total) std::fprintf(stderr, "\n");
}

int precompile(int argc, char** argv) {
  std::string arch_name, profile, out_dir;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--arch") == 0 && i + 1 < argc) {
      arch_name = argv[++i];
    } else if (std::strcmp(argv[i], "--profile") == 0 && i + 1 < argc) {
      profile = argv[++i];
    } else if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc && argv[i + 1][0] != '\0') {
      out_dir = argv[++i];
    } else {
      std::fprintf(stderr, "chord precompile: unexpected argument '%s'\n", argv[i]);
      return usage();
    }
  }
  if (arch_name.empty() || profile.empty()) return usage();
  chord::Arch arch = chord::parse_arch(arch_name);
  auto descriptors = chord::profile_descriptors(profile, arch);
  // --out builds a layer of its own: no read-only layers under it, nothing from the user's cache.
  std::unique_ptr<chord::JitRuntime> shared;
  if (!out_dir.empty()) shared = std::make_unique<chord::JitRuntime>(out_dir, std::vector<std::string>{},
                                                                      chord::FolderRole::kShared);
  auto& runtime = shared ? *shared : chord::JitRuntime::global();
  auto start = std::chrono::steady_clock::now();
  uint64_t compiles_before = chord::nvrtc_compile_count();
  for (size_t i = 0; i < descriptors.size(); ++i) {
    std::string name = chord::generate_kernel_source(descriptors[i]).name;
    progress(i, descriptors.size(), name);
    runtime.compile(descriptors[i]);
  }
  progress(descriptors.size(), descriptors.size(), "done");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("precompiled %zu kernels of profile '%s' for %s in %.1f s (%llu compiled, %llu from cache) into %s%s\n",
              descriptors.size(), profile.c_str(), arch.name().c_str(), seconds,
              static_cast<unsigned long long>(chord::nvrtc_compile_count() - compiles_before),
              static_cast<unsigned long long>(runtime.stats().disk_hits), runtime.disk_cache().dir().c_str(),
              runtime.disk_cache().memory_only() ? " (memory only: the cache dir is unusable)" : "");
  return 0;
}

// Compiles `source` without the cache, with ptxas's verbose report (registers, spills, stack,
// wgmma serialization notes), writes the cubin to `path` and prints the report.
int write_cubin(const chord::KernelSource& source, const chord::Arch& arch, const std::string& path) {
  std::vector<std::string> options = source.options;
  options.push_back("--ptxas-options=-v");
  std::string log;
  const std::vector<char> cubin =
      chord::compile_to_cubin(chord::CompileRequest{source.name, source.text, arch, options}, "", &log);
  FILE* f = std::fopen(path.c_str(), "wb");
  bool written = f != nullptr && std::fwrite(cubin.data(), 1, cubin.size(), f) == cubin.size();
  if (f != nullptr && std::fclose(f) != 0) written = false;
  if (!written) {
    std::fprintf(stderr, "chord config: cannot write '%s'\n", path.c_str());
    return 1;
  }
  std::printf("%s", log.c_str());
  std::printf("cubin: %s (%zu bytes)\n", path.c_str(), cubin.size());
  return 0;
}

// The W4A16 config for a shape, as the operators would resolve it (CHORD_W4A16_* included).
int config(int argc, char** argv) {
  chord::W4A16Problem p;
  std::string arch_name, mode, weight = "int4", cubin_path;
  p.sm_count = 132;
  // Digits only, within [0, most]: a value past the field's type is an error, not wrapped.
  auto number = [&](int& i, long long most = INT32_MAX) -> long long {
    if (i + 1 >= argc) throw chord::Error(CHORD_ERROR_INVALID_ARGUMENT, std::string(argv[i]) + " needs a value");
    const std::string text = argv[++i];
    const bool digits = !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
    const long long v = digits ? std::stoll(text) : -1;
    if (v < 0 || v > most) {
      chord::fail(CHORD_ERROR_INVALID_ARGUMENT, "{} needs an integer in [0, {}], not '{}'", argv[i - 1], most, text);
    }
    return v;
  };
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--arch" && i + 1 < argc) arch_name = argv[++i];
    else if (a == "--mode" && i + 1 < argc) mode = argv[++i];
    else if (a == "--weight" && i + 1 < argc) weight = argv[++i];
    else if (a == "--n") p.n = static_cast<int>(number(i));
    else if (a == "--k") p.k = static_cast<int>(number(i));
    else if (a == "--experts") p.experts = static_cast<int>(number(i));
    else if (a == "--rows") p.rows_per_expert = number(i, int64_t{1} << 40);
    else if (a == "--a-rows") p.a_rows = static_cast<int>(number(i));
    else if (a == "--groups") p.num_groups = static_cast<int>(number(i));
    else if (a == "--max-m") p.max_m = static_cast<int>(number(i));
    else if (a == "--capacity") p.capacity = static_cast<int>(number(i));
    else if (a == "--block-size") p.block_size = static_cast<int>(number(i));
    else if (a == "--sms") p.sm_count = static_cast<int>(number(i));
    else if (a == "--cubin" && i + 1 < argc) cubin_path = argv[++i];
    else {
      std::fprintf(stderr, "chord config: unexpected argument '%s'\n", argv[i]);
      return usage();
    }
  }
  const std::pair<const char*, chord::W4A16WeightKind> weights[] = {{"int4", chord::kW4A16WeightInt4},
                                                                    {"nf4", chord::kW4A16WeightNF4},
                                                                    {"nf4-fp16", chord::kW4A16WeightNF4Fp16}};
  bool mode_ok = false, weight_ok = false;
  for (auto m : {chord::kW4A16Contiguous, chord::kW4A16Masked, chord::kW4A16Offsets, chord::kW4A16Indexed}) {
    if (mode == chord::w4a16_mode_name(m)) {
      p.mode = m;
      mode_ok = true;
    }
  }
  for (const auto& [name, w] : weights) {
    if (weight == name) {
      p.weight = w;
      weight_ok = true;
    }
  }
  if (arch_name.empty() || !mode_ok || !weight_ok || p.experts <= 0) {
    std::fprintf(stderr, "chord config: needs --arch, --mode (contiguous, masked, offsets, indexed), --n, --k, --experts "
                         "> 0, --rows; --weight is int4, nf4 or nf4-fp16\n");
    return usage();
  }
  if (p.mode == chord::kW4A16Indexed && p.block_size <= 0) p.block_size = 128;
  p.arch = chord::parse_arch(arch_name);
  const chord::W4A16GemmConfig c = chord::resolve_w4a16_config(p);
  const char* engine = chord::w4a16_engine_name(c.engine);
  std::printf("engine=%s block_m=%d block_n=%d block_k=%d stages=%d warps_m=%d warps_n=%d warpgroups=%d split_k=%d "
              "threads=%d smem=%d kernel=%s\n",
              engine, c.block_m, c.block_n, c.block_k, c.stages, c.warps_m, c.warps_n, c.warpgroups, c.split_k,
              c.threads(), c.smem_bytes(), c.source().name.c_str());
  if (!cubin_path.empty()) return write_cubin(c.source(), p.arch, cubin_path);
  return 0;
}

// Bytes and number of the entries (<key>.cubin) in a kernels folder.
uint64_t directory_bytes(const std::string& dir, size_t* files) {
  uint64_t total = 0;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return 0;
  while (dirent* entry = readdir(d)) {
    struct stat st;
    const std::string name = entry->d_name;
    const std::string path = dir + "/" + name;
    if (name[0] != '.' && name.size() > 6 && name.compare(name.size() - 6, 6, ".cubin") == 0 &&
        lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      total += static_cast<uint64_t>(st.st_size);
      ++*files;
    }
  }
  closedir(d);
  return total;
}

int info() {
  std::printf("chord %s (C API %d)\n", chord_version(), chord_api_version());
  std::printf("NVRTC %s\n", chord::nvrtc_version().c_str());
  const auto& headers = chord::cuda_headers();
  std::printf("CUDA headers: %s%s%s\n", headers.origin.c_str(), headers.include_dir.empty() ? "" : " at ",
              headers.include_dir.c_str());
  const auto& environment = chord::env();
  const auto& cache = chord::JitRuntime::global().disk_cache();  // warns about folders it refuses
  auto folder = [](const char* label, const std::string& dir, const char* note) {
    size_t files = 0;
    const uint64_t bytes = directory_bytes(dir + "/kernels", &files);
    std::printf("%s: %s (%zu entries, %.1f MiB)%s\n", label, dir.empty() ? "(none)" : dir.c_str(), files,
                bytes / 1048576.0, note);
  };
  folder("cache", environment.cache_dir, cache.memory_only() ? " (not written: memory only)" : "");
  for (const std::string& dir : environment.cache_readonly_dirs) folder("read-only cache", dir, "");
  std::string why;
  if (!chord::driver_available(&why)) {
    std::printf("GPUs: none (%s)\n", why.c_str());
    return 0;
  }
  const auto& d = chord::driver();
  int driver_version = 0, count = 0;
  d.cuDriverGetVersion(&driver_version);
  d.cuDeviceGetCount(&count);
  std::printf("driver: CUDA %d.%d\nGPUs: %s\n", driver_version / 1000, (driver_version % 1000) / 10,
              count == 0 ? "none" : "");
  for (int i = 0; i < count; ++i) {
    CUdevice device;
    char name[256] = {0};
    int major = 0, minor = 0, sms = 0;
    d.cuDeviceGet(&device, i);
    d.cuDeviceGetName(name, sizeof name, device);
    d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    d.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
    std::printf("  %d: %s, compute capability %d.%d, %d SMs\n", i, name, major, minor, sms);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  try {
    std::string command = argv[1];
    if (command == "precompile") return precompile(argc - 2, argv + 2);
    if (command == "info") return info();
    if (command == "config") return config(argc - 2, argv + 2);
    std::fprintf(stderr, "chord: unknown command '%s'\n", command.c_str());
    return usage();
  } catch (const chord::Error& e) {
    std::fprintf(stderr, "chord: error: %s\n", e.what());
    return 1;
  }
}
