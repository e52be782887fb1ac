// The cache's trust model (docs/security.md): which folders are used, how entries are
// opened, where dumps go. Each case plants what an attacker on the same host, or an
// accident, could leave in a cache folder, and checks that nothing of it loads as a hit,
// hangs, exhausts memory, or writes through a planted link.
#include <catch2/catch.hpp>

#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/disk_cache.hpp"
#include "core/error.hpp"
#include "jit/compiler.hpp"
#include "jit/families/int4_dequant.hpp"
#include "runtime/runtime.hpp"
#include "test_support.hpp"

using chord::test::CaptureStderr;
using chord::test::TempDir;

namespace {

chord::KernelDescriptor dequant_descriptor() {
  return chord::Int4DequantConfig{}.descriptor(chord::parse_arch("sm_90a"));
}

// The dequant kernel's key and a valid entry for it: what a planted entry would hold.
struct Planted {
  chord::KernelKey key;
  std::vector<char> entry;
};
const Planted& valid_entry() {
  static const Planted planted = [] {
    TempDir dir;
    chord::JitRuntime runtime(dir.path());
    auto kernel = runtime.compile(dequant_descriptor());
    return Planted{kernel->key, chord::encode_cache_entry(kernel->key, kernel->cubin)};
  }();
  return planted;
}

std::string entry_file(const std::string& cache) { return cache + "/kernels/" + valid_entry().key.hex() + ".cubin"; }

bool write_file(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return out.good();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

mode_t mode_of(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 ? st.st_mode : 0;
}

// A cache folder with a valid entry for the dequant kernel in it.
void plant_cache(const std::string& cache, mode_t mode) {
  mkdir(cache.c_str(), mode);
  mkdir((cache + "/kernels").c_str(), mode);
  chmod(cache.c_str(), mode);  // whatever the umask
  chmod((cache + "/kernels").c_str(), mode);
  write_file(entry_file(cache), valid_entry().entry);
}

// Compiles the dequant kernel with a runtime on `cache`; true if that took NVRTC (no hit).
bool compiled_afresh(const std::string& cache, bool* memory_only = nullptr) {
  chord::JitRuntime runtime(cache);
  const uint64_t before = chord::nvrtc_compile_count();
  CHECK(runtime.compile(dequant_descriptor())->info.has_meta);
  if (memory_only != nullptr) *memory_only = runtime.disk_cache().memory_only();
  return chord::nvrtc_compile_count() == before + 1 && runtime.stats().disk_hits == 0;
}

// compiled_afresh into a cache the library must refuse (memory-only from then on): what it
// warned.
std::string refused_cache_warning(const std::string& cache) {
  CaptureStderr err;
  bool memory_only = false;
  CHECK(compiled_afresh(cache, &memory_only));
  CHECK(memory_only);
  return err.text();
}

// Runs body() in a child process that an alarm and an address-space limit keep from
// hanging or eating the machine; returns its status (128 + signal if killed).
int bounded_child(const std::function<int()>& body) {
  return chord::test::run_in_child([&body] {
    alarm(60);
    rlimit limit{size_t{8} << 30, size_t{8} << 30};
    setrlimit(RLIMIT_AS, &limit);
    return body();
  });
}

}  // namespace

TEST_CASE("cache trust: new cache folders are 0700 and entries 0600", "[cache_trust]") {
  TempDir dir;
  const std::string cache = dir.path() + "/home/.cache/chord";
  chord::JitRuntime runtime(cache);
  runtime.compile(dequant_descriptor());
  for (const std::string& folder : {dir.path() + "/home", dir.path() + "/home/.cache", cache, cache + "/kernels"}) {
    INFO(folder);
    CHECK((mode_of(folder) & 07777) == 0700);
  }
  CHECK((mode_of(entry_file(cache)) & 07777) == 0600);
}

TEST_CASE("cache trust: a cache folder writable by group or others is refused, its entries unused", "[cache_trust]") {
  for (mode_t mode : {0777, 0770, 0702}) {
    for (const char* which : {"", "/kernels"}) {
      TempDir dir;
      const std::string cache = dir.path() + "/cache";
      plant_cache(cache, 0700);
      const std::string loose = cache + which;
      chmod(loose.c_str(), mode);
      INFO(loose << " mode " << std::oct << mode);
      const std::string warning = refused_cache_warning(cache);
      INFO(warning);
      CHECK(warning.find(loose + " is writable by group or others") != std::string::npos);
      CHECK(warning.find("chmod go-w " + loose) != std::string::npos);
    }
  }
}

TEST_CASE("cache trust: a cache folder another user made (0777, entry planted) is refused", "[cache_trust]") {
  TempDir dir;
  chmod(dir.path().c_str(), 01777);  // a shared parent, as /tmp is
  const std::string cache = dir.path() + "/victim-cache";
  const std::vector<char> entry = valid_entry().entry;
  const int planted = chord::test::run_as_other_user([&] {
    plant_cache(cache, 0777);
    return mode_of(entry_file(cache)) != 0 ? 0 : 1;
  });
  if (planted < 0) {
    WARN("skipped: switching to a second uid needs root (or CAP_SETUID); this process has neither");
    return;
  }
  REQUIRE(planted == 0);
  {
    CaptureStderr err;
    CHECK(compiled_afresh(cache));
    const std::string warning = err.text();
    INFO(warning);
    CHECK(warning.find(cache + " belongs to uid " + std::to_string(chord::test::kOtherUid)) != std::string::npos);
  }
  // Closed to everyone but its owner, it is still not ours: refused as well.
  chmod(cache.c_str(), 0755);
  chmod((cache + "/kernels").c_str(), 0755);
  CHECK(compiled_afresh(cache));
}

TEST_CASE("cache trust: a symlinked entry is not followed but replaced, and its target left alone", "[cache_trust]") {
  TempDir dir;
  const std::string cache = dir.path() + "/cache", target = dir.path() + "/elsewhere.cubin";
  plant_cache(cache, 0700);
  REQUIRE(write_file(target, valid_entry().entry));  // a valid entry, so following the link would be a hit
  unlink(entry_file(cache).c_str());
  REQUIRE(symlink(target.c_str(), entry_file(cache).c_str()) == 0);
  CaptureStderr err;
  CHECK(compiled_afresh(cache));
  CHECK(err.text().find(entry_file(cache) + " is a symbolic link; rebuilding it") != std::string::npos);
  CHECK(S_ISREG(mode_of(entry_file(cache))));  // the link was replaced by the rebuilt entry
  CHECK(read_text(target) == std::string(valid_entry().entry.begin(), valid_entry().entry.end()));
}

TEST_CASE("cache trust: a FIFO in an entry's place neither hangs the run nor stops the cache", "[cache_trust]") {
  TempDir dir;
  const std::string cache = dir.path() + "/cache";
  plant_cache(cache, 0700);
  unlink(entry_file(cache).c_str());
  REQUIRE(mkfifo(entry_file(cache).c_str(), 0600) == 0);
  CHECK(bounded_child([&] {
          bool memory_only = true;
          return compiled_afresh(cache, &memory_only) && !memory_only ? 0 : 4;
        }) == 0);
  CHECK(S_ISREG(mode_of(entry_file(cache))));
}

TEST_CASE("cache trust: an entry linked to /dev/zero, or too large, is refused without reading it", "[cache_trust]") {
  TempDir dir;
  const std::string cache = dir.path() + "/cache";
  plant_cache(cache, 0700);
  unlink(entry_file(cache).c_str());
  REQUIRE(symlink("/dev/zero", entry_file(cache).c_str()) == 0);
  CHECK(bounded_child([&] { return compiled_afresh(cache) ? 0 : 4; }) == 0);
  // A regular file past the size cap (sparse: no disk used) is refused by its size.
  unlink(entry_file(cache).c_str());
  int fd = open(entry_file(cache).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, static_cast<off_t>(chord::DiskCache::kMaxEntryBytes) + 4096) == 0);
  close(fd);
  CaptureStderr err;
  CHECK(bounded_child([&] { return compiled_afresh(cache) ? 0 : 4; }) == 0);
  CHECK(err.text().find("more than the") != std::string::npos);
}

TEST_CASE("cache trust: a directory in an entry's place costs that entry only, not the disk cache", "[cache_trust]") {
  for (bool empty : {true, false}) {
    TempDir dir;
    const std::string cache = dir.path() + "/cache";
    plant_cache(cache, 0700);
    unlink(entry_file(cache).c_str());
    REQUIRE(mkdir(entry_file(cache).c_str(), 0700) == 0);
    if (!empty) write_file(entry_file(cache) + "/inside", {'x'});
    INFO((empty ? "empty" : "non-empty") << " directory");
    CaptureStderr err;
    bool memory_only = true;
    CHECK(compiled_afresh(cache, &memory_only));
    CHECK_FALSE(memory_only);
    CHECK(err.text().find(entry_file(cache) + " is a directory") != std::string::npos);
    // An empty one is removed and the entry published; a full one stays and the entry is not cached.
    CHECK(S_ISREG(mode_of(entry_file(cache))) == empty);
  }
}

TEST_CASE("cache trust: with no usable home the cache is memory-only, never a shared /tmp folder", "[cache_trust]") {
  CaptureStderr err;
  chord::DiskCache cache("");
  CHECK(cache.memory_only());
  CHECK(err.text().find("set CHORD_CACHE_DIR") != std::string::npos);
  cache.store(chord::KernelKey{1, 1}, {'x'});
  CHECK_FALSE(cache.load(chord::KernelKey{1, 1}).has_value());
}

TEST_CASE("cache trust: a compile-error dump never writes through a file planted at a predictable name",
          "[cache_trust]") {
  TempDir dir;
  const std::string victim = dir.path() + "/victim.txt";
  std::ofstream(victim) << "precious";
  chord::CompileRequest broken{"broken_kernel", "extern \"C\" __global__ void chord_entry() { undeclared_thing(); }",
                               chord::parse_arch("sm_90a"), {}};
  // The names dumps had: <dir>/<name>-<pid>.cu, in /tmp when there was no cache folder.
  const std::string predictable = "/" + broken.name + "-" + std::to_string(getpid()) + ".cu";
  for (const std::string& dump_dir : {std::string(""), dir.path()}) {
    const std::string planted = (dump_dir.empty() ? "/tmp" : dump_dir) + predictable;
    unlink(planted.c_str());
    REQUIRE(symlink(victim.c_str(), planted.c_str()) == 0);
    std::string message;
    try {
      chord::compile_to_cubin(broken, dump_dir);
    } catch (const chord::Error& e) {
      message = e.what();
    }
    unlink(planted.c_str());
    INFO(message);
    const auto at = message.find("generated source: ");
    REQUIRE(at != std::string::npos);
    const std::string dumped = message.substr(at + 18);
    CHECK(dumped != planted);
    CHECK(read_text(dumped) == broken.source);
    CHECK((mode_of(dumped) & 07777) == 0600);
    const std::string folder = dumped.substr(0, dumped.rfind('/'));
    if (dump_dir.empty()) CHECK((mode_of(folder) & 07777) == 0700);  // a fresh private folder
    unlink(dumped.c_str());
    if (dump_dir.empty()) rmdir(folder.c_str());
  }
  CHECK(read_text(victim) == "precious");
}

TEST_CASE("cache trust: CHORD_JIT_DUMP_SOURCE replaces a symlink planted beside an entry, never writes through it",
          "[cache_trust]") {
  TempDir dir;
  const std::string cache = dir.path() + "/cache", victim = dir.path() + "/victim.txt";
  const std::string cli =
      "CHORD_CACHE_DIR=" + cache + " " + CHORD_CLI_PATH + " precompile --arch sm_90a --profile dequant";
  REQUIRE(std::system((cli + " > /dev/null 2>&1").c_str()) == 0);
  std::ofstream(victim) << "precious";
  const auto entries = chord::test::cache_files(cache, ".cubin");
  REQUIRE(entries.size() == 2);
  for (const auto& name : entries) REQUIRE(symlink(victim.c_str(), (cache + "/kernels/" + name + ".cu").c_str()) == 0);
  REQUIRE(std::system(("CHORD_JIT_DUMP_SOURCE=1 " + cli + " > /dev/null 2>&1").c_str()) == 0);
  CHECK(read_text(victim) == "precious");
  for (const auto& name : entries) {
    const std::string dumped = cache + "/kernels/" + name + ".cu";
    CHECK(S_ISREG(mode_of(dumped)));
    CHECK(read_text(dumped).find("chord_entry") != std::string::npos);
  }
}

TEST_CASE("cache trust: a symlink another user made where the cache folder would be is not followed", "[cache_trust]") {
  TempDir dir;
  chmod(dir.path().c_str(), 01777);  // a shared parent, as /tmp is
  const std::string ours = dir.path() + "/ours", link = dir.path() + "/cache";
  REQUIRE(mkdir(ours.c_str(), 0700) == 0);
  const int planted = chord::test::run_as_other_user([&] { return symlink(ours.c_str(), link.c_str()) == 0 ? 0 : 1; });
  if (planted < 0) {
    WARN("skipped: switching to a second uid needs root (or CAP_SETUID); this process has neither");
    return;
  }
  REQUIRE(planted == 0);
  const std::string warning = refused_cache_warning(link);
  INFO(warning);
  CHECK(warning.find(link + " is a symlink made by uid " + std::to_string(chord::test::kOtherUid)) !=
        std::string::npos);
  CHECK(chord::test::list_dir(ours).empty());  // nothing was made where the link points
  // Named with a trailing slash (which makes lstat follow the link), refused all the same.
  for (const std::string& spelt : {link + "//", link + "/.", link + "/./"}) {
    const std::string slashed = refused_cache_warning(spelt);
    INFO(slashed);
    CHECK(slashed.find("is a symlink made by uid " + std::to_string(chord::test::kOtherUid)) != std::string::npos);
    CHECK(chord::test::list_dir(ours).empty());
  }
  // A link of our own is followed as before.
  const std::string own = dir.path() + "/own-link";
  REQUIRE(symlink(ours.c_str(), own.c_str()) == 0);
  bool memory_only = true;
  CHECK(compiled_afresh(own, &memory_only));
  CHECK_FALSE(memory_only);
}
