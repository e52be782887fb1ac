// On-disk cubin store: <dir>/kernels/<key>.cubin, each entry a checked header + cubin, in
// one writable folder (the user's cache) searched first, then in read-only folders (a
// CHORD_CACHE_READONLY_DIRS layer, e.g. built by `chord precompile --out`) that are never
// written. Folders are used only if trusted (cache/cache_folder.hpp); entries are read
// through core/safe_file.hpp. Publishing is atomic (temp file, fsync, rename), so
// concurrent writers of one key all succeed and a reader never sees a partial entry. An
// entry that is corrupt, truncated, not a regular file, or that the caller's check refuses
// is removed (read-only layers: skipped) and reported as a miss, with one warning. A
// writable folder that cannot be used degrades to memory-only; one that is trusted but not
// writable (e.g. installed read-only) is still read.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_folder.hpp"
#include "cache/entry_lock.hpp"
#include "cache/kernel_key.hpp"

namespace chord {

class DiskCache {
 public:
  // `check` is what the caller requires of a payload beyond its checksum (e.g. that it
  // parses as a cubin); it throws Error to refuse one, naming the entry it is given.
  using Check = std::function<void(const std::vector<char>& payload, const std::string& entry_path)>;

  // An entry's size limit: cubins are a few hundred KiB at most.
  static constexpr size_t kMaxEntryBytes = size_t{64} << 20;

  // role: kPrivate (the user's cache) or kShared (a folder built for others to read).
  explicit DiskCache(std::string dir, std::vector<std::string> readonly_dirs = {},
                     FolderRole role = FolderRole::kPrivate);
  ~DiskCache();
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  // The writable folder's entry, else the first read-only folder's that passes `check`.
  // `found_at`, if given, receives the entry's path. `writable_only`: skip read-only folders.
  std::optional<std::vector<char>> load(const KernelKey& key, const Check& check = {}, std::string* found_at = nullptr,
                                        bool writable_only = false);
  void store(const KernelKey& key, const std::vector<char>& cubin);
  // An entry load() returned that turned out unusable (e.g. the driver refused it): removed
  // if it is in the writable folder, warned about, counted as a rebuild.
  void discard(const std::string& entry_path, const std::string& why);
  // The inter-process lock of a key (holds nothing when memory-only).
  EntryLock lock(const KernelKey& key) const;
  // Writes text beside the key's entry as <key>.cubin<suffix> (replacing, never following,
  // whatever is there); nothing when memory-only.
  void write_beside(const KernelKey& key, const std::string& suffix, const std::string& text);

  // Where a key's entry lives in the writable folder (whether or not it exists).
  std::string entry_path(const KernelKey& key) const;
  const std::string& dir() const { return dir_; }
  bool memory_only() const { return memory_only_.load(); }
  // Whether the read-only folder `dir` passed its checks and is searched.
  bool reads_layer(const std::string& dir) const;
  uint64_t rebuilds() const { return rebuilds_.load(); }

  // How long lock() waits for another process's compile of the same key.
  static constexpr std::chrono::milliseconds kLockPatience{120'000};
  // Temp files older than this (left by a process killed mid-store) are removed on open.
  static constexpr std::chrono::hours kOrphanAge{24};

 private:
  struct Layer {
    std::string kernels_dir;
    int fd = -1;
    bool writable = false;
  };
  void degrade(const std::string& why);
  void reject(const Layer& layer, const std::string& name, const std::string& message);
  void remove_orphans(const Layer& layer);
  const Layer* writable_layer() const;

  std::string dir_;
  FolderRole role_;
  std::vector<Layer> layers_;  // the user's folder first (absent when unusable), then the read-only ones
  std::atomic<bool> memory_only_{false};
  std::atomic<uint64_t> rebuilds_{0};
};

// Bytes of an entry file for a payload (exposed for tests that forge entries).
std::vector<char> encode_cache_entry(const KernelKey& key, const std::vector<char>& cubin);

}  // namespace chord
