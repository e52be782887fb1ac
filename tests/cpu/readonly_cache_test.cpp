// Read-only cache layers: `chord precompile --out DIR` builds one, CHORD_CACHE_READONLY_DIRS
// (or a user cache chord cannot write) serves hits from it, nothing ever writes to it, and
// only a folder owned by root or the user and closed to writes by others is used.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cache/disk_cache.hpp"
#include "jit/compiler.hpp"
#include "precompile/kernel_sets.hpp"
#include "runtime/runtime.hpp"
#include "test_support.hpp"

using chord::test::cache_files;
using chord::test::CaptureStderr;
using chord::test::TempDir;

namespace {

struct Run {
  int exit_code;
  std::string output;
};

Run run(const std::string& command) {
  Run r{-1, ""};
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer;
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) r.output += buffer.data();
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Every file under a layer with its size and modification time: equal snapshots mean
// nothing was written, added or removed.
std::map<std::string, std::pair<off_t, long>> snapshot(const std::string& dir) {
  std::map<std::string, std::pair<off_t, long>> files;
  for (const std::string& sub : {std::string(""), std::string("/kernels")}) {
    for (const auto& name : chord::test::list_dir(dir + sub)) {
      struct stat st;
      if (lstat((dir + sub + "/" + name).c_str(), &st) == 0) {
        files[sub + "/" + name] = {st.st_size, st.st_mtim.tv_sec * 1000000000L + st.st_mtim.tv_nsec};
      }
    }
  }
  return files;
}

std::vector<chord::KernelDescriptor> dequant_kernels() {
  return chord::kernel_set_descriptors("dequant", chord::parse_arch("sm_90a"));
}

// Compiles the dequant profile on a runtime over `cache` and the read-only `layers`; returns
// the NVRTC calls that took.
uint64_t compiles_with(const std::string& cache, const std::vector<std::string>& layers) {
  chord::JitRuntime runtime(cache, layers);
  const uint64_t before = chord::nvrtc_compile_count();
  for (const auto& d : dequant_kernels()) runtime.compile(d);
  return chord::nvrtc_compile_count() - before;
}

mode_t mode_of(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

}  // namespace

TEST_CASE("read-only cache: precompile --out builds a layer that gives hits and is never written", "[readonly]") {
  TempDir dir;
  const std::string layer = dir.path() + "/layer", cache = dir.path() + "/cache";
  // Under a umask of 077 too: the layer is for others to read.
  Run built = run("umask 077 && " + std::string(CHORD_CLI_PATH) + " precompile --arch sm_90a --profile dequant --out " +
                  layer);
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  CHECK(built.output.find("(2 compiled, 0 from cache) into " + layer) != std::string::npos);
  CHECK(cache_files(layer, ".cubin").size() == 2);
  CHECK(mode_of(layer) == 0755);  // for others to read
  CHECK(mode_of(layer + "/kernels") == 0755);
  for (const auto& name : cache_files(layer, ".cubin")) CHECK(mode_of(layer + "/kernels/" + name) == 0644);
  const auto before = snapshot(layer);

  Run used = run("CHORD_CACHE_DIR=" + cache + " CHORD_CACHE_READONLY_DIRS=/nonexistent:" + layer + " " +
                 CHORD_CLI_PATH + " precompile --arch sm_90a --profile dequant");
  INFO(used.output);
  CHECK(used.exit_code == 0);
  CHECK(used.output.find("(0 compiled, 2 from cache)") != std::string::npos);
  CHECK(used.output.find("read-only kernel cache /nonexistent is not used") != std::string::npos);
  CHECK(cache_files(cache, ".cubin").empty());  // hits are not copied into the user's cache
  CHECK(snapshot(layer) == before);
}

TEST_CASE("read-only cache: precompile --out of a relative folder names it absolute, as the variable takes it",
          "[readonly]") {
  TempDir dir;
  const std::string physical = std::filesystem::canonical(dir.path()).string();  // what the shell's cd leads to
  Run built =
      run("cd " + dir.path() + " && " + CHORD_CLI_PATH + " precompile --arch sm_90a --profile dequant --out ./layer/");
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  const std::string layer = physical + "/layer";
  CHECK(built.output.find("(2 compiled, 0 from cache) into " + layer + "\n") != std::string::npos);
  CHECK(cache_files(layer, ".cubin").size() == 2);
  // The printed folder, pasted into CHORD_CACHE_READONLY_DIRS (absolute paths only), serves hits.
  Run used = run("CHORD_CACHE_DIR=" + dir.path() + "/cache CHORD_CACHE_READONLY_DIRS=" + layer + " " + CHORD_CLI_PATH +
                 " precompile --arch sm_90a --profile dequant");
  INFO(used.output);
  CHECK(used.exit_code == 0);
  CHECK(used.output.find("(0 compiled, 2 from cache)") != std::string::npos);
  CHECK(used.output.find("not used") == std::string::npos);
}

TEST_CASE("read-only cache: the user's cache is searched first, and a bad layer entry is left alone", "[readonly]") {
  TempDir dir;
  const std::string layer = dir.path() + "/layer", cache = dir.path() + "/cache";
  { chord::JitRuntime(layer, {}, chord::FolderRole::kShared).compile(dequant_kernels()[0]); }
  // Damage the layer's entry (it stays a regular file of the right owner and mode).
  const std::string entry = layer + "/kernels/" + cache_files(layer, ".cubin").at(0);
  {
    std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a');
  }
  const auto before = snapshot(layer);
  CaptureStderr err;
  CHECK(compiles_with(cache, {layer}) == 2);  // the damaged one is compiled, into the user's cache
  CHECK(err.text().find(entry + " is corrupt or truncated; ignoring it (read-only cache)") != std::string::npos);
  CHECK(snapshot(layer) == before);
  CHECK(cache_files(cache, ".cubin").size() == 2);
  // Now the user's cache holds both kernels: it answers first, the layer's bad entry is not read.
  chord::JitRuntime runtime(cache, {layer});
  CHECK(runtime.compile(dequant_kernels()[0])->entry_path.rfind(cache + "/kernels/", 0) == 0);
  CHECK(runtime.stats().disk_rebuilds == 0);
}

TEST_CASE("read-only cache: a layer writable by group or others, or owned by another user, is not used",
          "[readonly]") {
  TempDir dir;
  const std::string layer = dir.path() + "/layer", cache = dir.path() + "/cache";
  {
    chord::JitRuntime built(layer, {}, chord::FolderRole::kShared);
    for (const auto& d : dequant_kernels()) built.compile(d);
  }
  for (const std::string& loose : {layer, layer + "/kernels"}) {
    chmod(loose.c_str(), 0777);
    CaptureStderr err;
    CHECK(compiles_with(cache + loose.substr(layer.size()), {layer}) == 2);
    CHECK(err.text().find(loose + " is writable by group or others") != std::string::npos);
    chmod(loose.c_str(), 0755);
  }
  // An entry others may write, in a sound folder, is skipped too.
  const std::string entry = layer + "/kernels/" + cache_files(layer, ".cubin").at(0);
  chmod(entry.c_str(), 0666);
  CHECK(compiles_with(cache + "-entry", {layer}) == 1);
  chmod(entry.c_str(), 0644);
  CHECK(compiles_with(cache + "-sound", {layer}) == 0);
  if (geteuid() != 0) {
    WARN("skipped the other-owner case: changing a folder's owner needs root");
    return;
  }
  REQUIRE(chown(layer.c_str(), chord::test::kOtherUid, chord::test::kOtherUid) == 0);
  CaptureStderr err;
  CHECK(compiles_with(cache + "-owner", {layer}) == 2);
  CHECK(err.text().find(layer + " belongs to uid " + std::to_string(chord::test::kOtherUid) +
                        ", not to you (uid 0) or root") != std::string::npos);
}

TEST_CASE("read-only cache: a user cache chord cannot write still gives hits", "[readonly]") {
  // Permission bits do not stop root: the case runs as a second user when this is root.
  TempDir dir;
  chmod(dir.path().c_str(), 01777);
  const std::string cache = dir.path() + "/installed";
  auto body = [&cache] {
    if (compiles_with(cache, {}) != 2) return 3;
    for (const std::string& folder : {cache + "/kernels", cache}) chmod(folder.c_str(), 0555);
    chord::JitRuntime runtime(cache);
    const uint64_t before = chord::nvrtc_compile_count();
    for (const auto& d : dequant_kernels()) runtime.compile(d);
    const bool ok = chord::nvrtc_compile_count() == before && runtime.stats().disk_hits == 2 &&
                    runtime.disk_cache().memory_only();
    chmod(cache.c_str(), 0755);
    chmod((cache + "/kernels").c_str(), 0755);
    return ok ? 0 : 4;
  };
  const int status = geteuid() == 0 ? chord::test::run_as_other_user(body) : chord::test::run_in_child(body);
  if (status < 0) {
    WARN("skipped: as root this case needs a second uid, and switching to one is not permitted here");
    return;
  }
  CHECK(status == 0);
}
