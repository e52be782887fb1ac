// On-disk cubin store: <dir>/kernels/<key>.cubin, each entry a checked header + cubin.
// Publishing is atomic (temp file, fsync, rename), so concurrent writers of one key all
// succeed and a reader never sees a partial entry. A corrupt or truncated entry is
// removed and reported as a miss; an unusable directory degrades to memory-only.
#pragma once
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "jit/kernel_key.hpp"

namespace chord {

class DiskCache {
 public:
  explicit DiskCache(std::string dir);

  std::optional<std::vector<char>> load(const KernelKey& key);
  void store(const KernelKey& key, const std::vector<char>& cubin);

  // Where a key's entry lives (whether or not it exists).
  std::string entry_path(const KernelKey& key) const;
  const std::string& dir() const { return dir_; }
  bool memory_only() const { return memory_only_.load(); }
  uint64_t rebuilds() const { return rebuilds_.load(); }

 private:
  void degrade(const std::string& why);

  std::string dir_;
  std::string kernels_dir_;
  std::atomic<bool> memory_only_{false};
  std::atomic<uint64_t> rebuilds_{0};
};

// Bytes of an entry file for a payload (exposed for tests that forge entries).
std::vector<char> encode_cache_entry(const KernelKey& key, const std::vector<char>& cubin);

}  // namespace chord
