// The disk cache: hits without NVRTC, corruption (of the entry or of the cubin in it), truncation,
// races, one compile per key across processes, orphaned temp files, unusable folders.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../crafted_elf.hpp"
#include "cache/disk_cache.hpp"
#include "core/error.hpp"
#include "jit/compiler.hpp"
#include "jit/families/int4_dequant.hpp"
#include "jit/families/w4a16.hpp"
#include "precompile/kernel_sets.hpp"
#include "runtime/runtime.hpp"
#include "test_support.hpp"

using chord::test::TempDir;

namespace {

chord::KernelDescriptor dequant_descriptor() {
  return chord::Int4DequantConfig{}.descriptor(chord::parse_arch("sm_90a"));
}

std::vector<std::string> cubin_entries(const std::string& dir) { return chord::test::cache_files(dir, ".cubin"); }
std::vector<std::string> temp_files(const std::string& dir) { return chord::test::cache_files(dir, ".tmp"); }

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}


// Forks `processes` children that start together (they block on a pipe the parent closes)
// and run body(i), whose int is the child's exit status; every child must exit 0.
template <typename Body>
void race(int processes, Body body) {
  int gate[2];
  REQUIRE(pipe(gate) == 0);
  std::vector<pid_t> children;
  for (int i = 0; i < processes; ++i) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(gate[1]);
      char c;
      while (read(gate[0], &c, 1) > 0) {
      }
      int status = 4;
      try {
        status = body(i);
      } catch (...) {
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  close(gate[0]);
  close(gate[1]);
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}
}  // namespace

TEST_CASE("disk cache: a hit returns identical bytes with zero NVRTC calls", "[cache]") {
  TempDir dir;
  std::vector<char> first;
  {
    chord::JitRuntime runtime(dir.path());
    first = runtime.compile(dequant_descriptor())->cubin;
  }
  REQUIRE(cubin_entries(dir.path()).size() == 1);
  chord::JitRuntime fresh(dir.path());  // a new runtime, as in a new process
  uint64_t before = chord::nvrtc_compile_count();
  auto again = fresh.compile(dequant_descriptor());
  CHECK(chord::nvrtc_compile_count() == before);
  CHECK(again->cubin == first);
  CHECK(fresh.stats().disk_hits == 1);
  fresh.compile(dequant_descriptor());  // the memo answers now
  CHECK(fresh.stats().disk_hits == 1);
  CHECK(chord::nvrtc_compile_count() == before);
}

TEST_CASE("disk cache: a corrupt entry is rebuilt", "[cache]") {
  TempDir dir;
  std::vector<char> good;
  {
    chord::JitRuntime runtime(dir.path());
    good = runtime.compile(dequant_descriptor())->cubin;
  }
  std::string path = dir.path() + "/kernels/" + cubin_entries(dir.path()).at(0);
  auto bytes = read_bytes(path);
  bytes[bytes.size() / 2] ^= 0x5a;  // flip bits in the payload
  write_bytes(path, bytes);
  chord::JitRuntime runtime(dir.path());
  uint64_t before = chord::nvrtc_compile_count();
  auto rebuilt = runtime.compile(dequant_descriptor());
  CHECK(chord::nvrtc_compile_count() == before + 1);
  CHECK(runtime.stats().disk_rebuilds == 1);
  CHECK(rebuilt->cubin == good);
  CHECK(read_bytes(path) == chord::encode_cache_entry(rebuilt->key, good));  // republished, valid
}

TEST_CASE("disk cache: truncated entries are rebuilt", "[cache]") {
  TempDir dir;
  std::vector<char> good;
  {
    chord::JitRuntime runtime(dir.path());
    good = runtime.compile(dequant_descriptor())->cubin;
  }
  std::string path = dir.path() + "/kernels/" + cubin_entries(dir.path()).at(0);
  auto bytes = read_bytes(path);
  for (size_t keep : {bytes.size() - 1, size_t{20}, size_t{0}}) {
    write_bytes(path, std::vector<char>(bytes.begin(), bytes.begin() + static_cast<long>(keep)));
    chord::JitRuntime runtime(dir.path());
    uint64_t before = chord::nvrtc_compile_count();
    CHECK(runtime.compile(dequant_descriptor())->cubin == good);
    CHECK(chord::nvrtc_compile_count() == before + 1);
    CHECK(runtime.stats().disk_rebuilds == 1);
  }
}

TEST_CASE("disk cache: an entry stored under another key is rejected", "[cache]") {
  TempDir dir;
  chord::DiskCache cache(dir.path());
  chord::KernelKey a{1, 2}, b{3, 4};
  std::vector<char> payload = {'c', 'u', 'b', 'i', 'n'};
  cache.store(a, payload);
  REQUIRE(cache.load(a) == payload);
  write_bytes(cache.entry_path(b), read_bytes(cache.entry_path(a)));  // misplaced copy
  CHECK_FALSE(cache.load(b).has_value());
  CHECK(cache.rebuilds() == 1);
}

TEST_CASE("disk cache: 8 processes racing on one key all succeed and leave one valid entry", "[cache]") {
  TempDir dir;
  race(8, [&dir](int) {
    chord::JitRuntime runtime(dir.path());
    return runtime.compile(dequant_descriptor())->info.has_meta ? 0 : 3;
  });
  CHECK(cubin_entries(dir.path()).size() == 1);
  CHECK(temp_files(dir.path()).empty());
  chord::JitRuntime runtime(dir.path());
  uint64_t before = chord::nvrtc_compile_count();
  CHECK(runtime.compile(dequant_descriptor())->info.has_meta);
  CHECK(chord::nvrtc_compile_count() == before);
  CHECK(runtime.stats().disk_hits == 1);
}

TEST_CASE("disk cache: a process killed while compiling leaves no visible entry", "[cache]") {
  TempDir dir;
  // A GEMM variant: its NVRTC compile takes several hundred ms, so the kill lands inside it.
  const chord::KernelDescriptor slow = chord::W4A16GemmConfig{}.descriptor(chord::parse_arch("sm_90a"));
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    chord::JitRuntime runtime(dir.path());
    runtime.compile(slow);
    _exit(0);
  }
  usleep(150 * 1000);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  // Whatever the kill interrupted, no partial entry may be visible: an entry is either
  // absent or complete (loading it needs no rebuild).
  CHECK(cubin_entries(dir.path()).size() <= 1);
  chord::JitRuntime runtime(dir.path());
  CHECK(runtime.compile(slow)->info.has_meta);
  CHECK(runtime.stats().disk_rebuilds == 0);
}

TEST_CASE("disk cache: an unwritable folder degrades to memory-only", "[cache]") {
  TempDir dir;
  std::string locked = dir.path() + "/locked";
  REQUIRE(mkdir(locked.c_str(), 0500) == 0);
  bool root = geteuid() == 0;  // root ignores permissions; use a path under a file instead
  std::string target = root ? dir.path() + "/file/cache" : locked + "/cache";
  if (root) std::ofstream(dir.path() + "/file") << "x";
  chord::JitRuntime runtime(target);
  CHECK(runtime.disk_cache().memory_only());
  uint64_t before = chord::nvrtc_compile_count();
  auto kernel = runtime.compile(dequant_descriptor());
  CHECK(kernel->info.has_meta);
  CHECK(chord::nvrtc_compile_count() == before + 1);
  runtime.compile(dequant_descriptor());
  CHECK(chord::nvrtc_compile_count() == before + 1);  // the memo still works
}

TEST_CASE("disk cache: a full disk degrades to memory-only", "[cache]") {
  // A folder that stops accepting writes after start-up takes the same path as ENOSPC
  // (creating or writing the temp file fails): the store degrades instead of throwing.
  TempDir dir;
  chord::DiskCache cache(dir.path());
  REQUIRE_FALSE(cache.memory_only());
  if (geteuid() == 0) {
    // root can write anywhere: replace the kernels folder by a file so creating fails.
    std::system(("rm -rf '" + dir.path() + "/kernels' && touch '" + dir.path() + "/kernels'").c_str());
  } else {
    chmod((dir.path() + "/kernels").c_str(), 0500);
  }
  cache.store(chord::KernelKey{7, 7}, {'x'});
  CHECK(cache.memory_only());
  CHECK_FALSE(cache.load(chord::KernelKey{7, 7}).has_value());
}

TEST_CASE("disk cache: 16 processes racing on the same keys all succeed and leave one valid entry each", "[cache]") {
  TempDir dir;
  // Two keys (both source formats of the dequant kernel); half the children take them in
  // each order, so writers of both keys overlap.
  chord::Int4DequantConfig codes_config, compressed_config;
  codes_config.format = chord::kInt4Codes;
  compressed_config.format = chord::kInt4Compressed;
  const chord::Arch arch = chord::parse_arch("sm_90a");
  const chord::KernelDescriptor keys[2] = {codes_config.descriptor(arch), compressed_config.descriptor(arch)};
  std::vector<char> expected[2];
  {
    TempDir reference_dir;  // the bytes each key must end up with
    chord::JitRuntime reference(reference_dir.path());
    for (int i = 0; i < 2; ++i) expected[i] = reference.compile(keys[i])->cubin;
  }
  race(16, [&](int i) {
    chord::JitRuntime runtime(dir.path());
    for (int j = 0; j < 2; ++j) {
      int key = (i + j) % 2;  // half the processes take the keys in the other order
      if (runtime.compile(keys[key])->cubin != expected[key]) return 3;
    }
    return runtime.disk_cache().memory_only() ? 5 : 0;
  });
  CHECK(cubin_entries(dir.path()).size() == 2);
  CHECK(temp_files(dir.path()).empty());
  chord::JitRuntime runtime(dir.path());
  uint64_t before = chord::nvrtc_compile_count();
  for (int i = 0; i < 2; ++i) CHECK(runtime.compile(keys[i])->cubin == expected[i]);
  CHECK(chord::nvrtc_compile_count() == before);
  CHECK(runtime.stats().disk_hits == 2);
  CHECK(runtime.stats().disk_rebuilds == 0);
}

TEST_CASE("disk cache: a write failing midway (as on a full disk) leaves no temp file and degrades", "[cache]") {
  // ENOSPC cannot be provoked without a small filesystem; RLIMIT_FSIZE makes write() fail
  // the same way partway through the entry (EFBIG after the first bytes), so the partial
  // temp file, its cleanup and the degrade path are the ones a full disk takes.
  TempDir dir;
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);  // get EFBIG from write() instead of the signal
    chord::DiskCache cache(dir.path());
    if (cache.memory_only()) _exit(2);
    rlimit limit{4096, 4096};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(3);
    cache.store(chord::KernelKey{9, 9}, std::vector<char>(64 * 1024, 'c'));
    if (!cache.memory_only()) _exit(4);
    if (cache.load(chord::KernelKey{9, 9}).has_value()) _exit(5);
    try {  // a runtime whose first store fails the same way still returns the kernel
      chord::JitRuntime runtime(dir.path());
      auto kernel = runtime.compile(dequant_descriptor());
      if (!kernel->info.has_meta || kernel->cubin.size() <= 4096) _exit(6);
      if (!runtime.disk_cache().memory_only()) _exit(7);
    } catch (...) {
      _exit(8);
    }
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(cubin_entries(dir.path()).empty());  // neither the entry nor the partial temp file
  CHECK(temp_files(dir.path()).empty());
}

TEST_CASE("disk cache: an entry whose checksum is valid but whose cubin is crafted is dropped and rebuilt",
          "[cache]") {
  TempDir dir;
  std::shared_ptr<const chord::CompiledKernel> good;
  {
    chord::JitRuntime runtime(dir.path());
    good = runtime.compile(dequant_descriptor());
  }
  const std::string path = dir.path() + "/kernels/" + good->key.hex() + ".cubin";
  for (const chord::test::ElfDamage& damage : chord::test::elf_damages()) {
    INFO(damage.name);
    std::vector<char> crafted = good->cubin;
    REQUIRE(damage.apply(crafted));
    write_bytes(path, chord::encode_cache_entry(good->key, crafted));
    chord::test::CaptureStderr err;
    chord::JitRuntime runtime(dir.path());
    const uint64_t before = chord::nvrtc_compile_count();
    CHECK(runtime.compile(dequant_descriptor())->cubin == good->cubin);
    CHECK(chord::nvrtc_compile_count() == before + 1);
    CHECK(runtime.stats().disk_rebuilds == 1);
    const std::string warning = err.text();
    INFO(warning);
    CHECK(warning.find("kernel cache entry " + path + " is not a usable cubin") != std::string::npos);
    CHECK(warning.find("rebuilding it") != std::string::npos);
    CHECK(read_bytes(path) == chord::encode_cache_entry(good->key, good->cubin));  // republished
  }
}

TEST_CASE("disk cache: an entry the driver refuses to load is dropped, rebuilt and loaded again", "[cache]") {
  TempDir dir;
  { chord::JitRuntime(dir.path()).compile(dequant_descriptor()); }
  chord::JitRuntime runtime(dir.path());
  const uint64_t before = chord::nvrtc_compile_count();
  std::vector<std::string> offered;  // where each cubin handed to the loader came from
  auto loader = [&offered](const chord::CompiledKernel& kernel) -> std::unique_ptr<chord::LoadedKernel> {
    offered.push_back(kernel.entry_path.empty() ? "nvrtc" : "disk");
    if (!kernel.entry_path.empty()) throw chord::Error(CHORD_ERROR_CUDA, "cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE");
    return nullptr;  // a real loader returns the module; the test needs none
  };
  runtime.load_with_rebuild(dequant_descriptor(), loader);
  CHECK(offered == std::vector<std::string>{"disk", "nvrtc"});
  CHECK(chord::nvrtc_compile_count() == before + 1);
  CHECK(runtime.stats().disk_rebuilds == 1);
  CHECK(runtime.compile(dequant_descriptor())->entry_path.empty());  // the memo holds the rebuilt kernel
  // Other failures (no driver, a bad argument) say nothing about the entry: it stays.
  chord::JitRuntime fresh(dir.path());
  auto no_driver = [](const chord::CompiledKernel&) -> std::unique_ptr<chord::LoadedKernel> {
    throw chord::Error(CHORD_ERROR_NO_DRIVER, "libcuda.so.1 missing");
  };
  CHECK_THROWS_AS(fresh.load_with_rebuild(dequant_descriptor(), no_driver), chord::Error);
  CHECK(fresh.stats().disk_rebuilds == 0);
  CHECK(fresh.stats().disk_hits == 1);
}

TEST_CASE("disk cache: 8 processes missing the same kernels compile each once", "[cache]") {
  TempDir dir;
  const chord::Arch arch = chord::parse_arch("sm_90a");
  std::vector<chord::KernelDescriptor> kernels = chord::kernel_set_descriptors("dequant", arch);
  for (bool unpack : {false, true}) {
    chord::W4A16PackConfig pack;
    pack.unpack = unpack;
    kernels.push_back(pack.descriptor(arch));
  }
  // NVRTC calls summed over the processes, in memory they share.
  auto* compiles = static_cast<std::atomic<uint64_t>*>(
      mmap(nullptr, sizeof(std::atomic<uint64_t>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  REQUIRE(compiles != MAP_FAILED);
  new (compiles) std::atomic<uint64_t>(0);
  race(8, [&](int i) {
    chord::JitRuntime runtime(dir.path());
    const uint64_t before = chord::nvrtc_compile_count();
    for (size_t j = 0; j < kernels.size(); ++j) {
      if (!runtime.compile(kernels[(i + j) % kernels.size()])->info.has_meta) return 3;
    }
    compiles->fetch_add(chord::nvrtc_compile_count() - before);
    return runtime.disk_cache().memory_only() ? 5 : 0;
  });
  CHECK(compiles->load() == kernels.size());
  munmap(compiles, sizeof(std::atomic<uint64_t>));
  CHECK(cubin_entries(dir.path()).size() == kernels.size());
  CHECK(temp_files(dir.path()).empty());
}

TEST_CASE("disk cache: temp files a killed store left behind are removed on open once a day old", "[cache]") {
  TempDir dir;
  { chord::DiskCache cache(dir.path()); }
  const std::string kernels = dir.path() + "/kernels/";
  for (const char* name : {".old.123.0.tmp", ".new.123.1.tmp", "old-but-not-ours.tmp"}) {
    write_bytes(kernels + name, {'x'});
  }
  const timespec two_days_ago[2] = {{time(nullptr) - 2 * 86400, 0}, {time(nullptr) - 2 * 86400, 0}};
  REQUIRE(utimensat(AT_FDCWD, (kernels + ".old.123.0.tmp").c_str(), two_days_ago, 0) == 0);
  REQUIRE(utimensat(AT_FDCWD, (kernels + "old-but-not-ours.tmp").c_str(), two_days_ago, 0) == 0);
  chord::DiskCache cache(dir.path());
  auto left = chord::test::list_dir(dir.path() + "/kernels");
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{".new.123.1.tmp", "old-but-not-ours.tmp"});
}

// A cache folder whose dequantize entry was stored and then removed: (kernels folder, key hex).
std::pair<std::string, std::string> stored_then_removed(const TempDir& dir) {
  { chord::JitRuntime(dir.path()).compile(dequant_descriptor()); }
  const std::string entry = cubin_entries(dir.path()).at(0);
  const std::string kernels = dir.path() + "/kernels/";
  REQUIRE(unlink((kernels + entry).c_str()) == 0);
  return {kernels, entry.substr(0, entry.size() - std::string(".cubin").size())};
}

TEST_CASE("disk cache: a FIFO planted under an entry's lock name neither hangs nor stops the compile", "[cache]") {
  TempDir dir;
  const auto [kernels, hex] = stored_then_removed(dir);
  unlink((kernels + hex + ".lock").c_str());
  REQUIRE(mkfifo((kernels + hex + ".lock").c_str(), 0600) == 0);
  const int status = chord::test::run_in_child([&] {
    alarm(20);  // a hang fails the test instead of the suite
    return chord::JitRuntime(dir.path()).compile(dequant_descriptor())->cubin.empty() ? 1 : 0;
  });
  CHECK(status == 0);
  CHECK(cubin_entries(dir.path()).size() == 1);  // stored without the lock
}
