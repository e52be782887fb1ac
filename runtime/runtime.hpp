// The JIT runtime: descriptor -> compiled cubin (memo, disk cache, NVRTC) -> kernel
// loaded in a context (memo). The launch path is `kernel()`: one shared-lock lookup.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <cuda.h>

#include "cache/disk_cache.hpp"
#include "cache/kernel_key.hpp"
#include "core/cubin_info.hpp"
#include "jit/kernel_descriptor.hpp"
#include "launcher/kernel_module.hpp"

namespace chord {

struct CompiledKernel {
  KernelKey key;
  std::vector<char> cubin;
  CubinInfo info;
  std::string entry_path;  // the cache entry it was loaded from ("" if compiled here)
};

struct JitStats {
  uint64_t disk_hits = 0;
  uint64_t disk_rebuilds = 0;
  uint64_t memory_hits = 0;
};

class JitRuntime {
 public:
  explicit JitRuntime(const std::string& cache_dir, const std::vector<std::string>& readonly_dirs = {},
                      FolderRole role = FolderRole::kPrivate);

  // The process-wide runtime, caching in CHORD_CACHE_DIR over CHORD_CACHE_READONLY_DIRS.
  static JitRuntime& global();

  // Needs no GPU: memo, then disk cache, then NVRTC (publishing the result to disk). A miss
  // takes the key's inter-process lock, so processes missing one key compile it once.
  std::shared_ptr<const CompiledKernel> compile(const KernelDescriptor& descriptor);

  // The launch path: the kernel loaded in `context`, compiled and loaded on first use.
  const LoadedKernel& kernel(const KernelDescriptor& descriptor, CUcontext context);

  // Compiles (or loads) the descriptor and hands it to `load`. A cubin from the disk cache
  // that `load` refuses with a CUDA error is treated like a corrupt entry: dropped, rebuilt
  // with NVRTC and handed over once more. (kernel() loads into a context this way; tests
  // pass a fake loader.)
  std::unique_ptr<LoadedKernel> load_with_rebuild(
      const KernelDescriptor& descriptor,
      const std::function<std::unique_ptr<LoadedKernel>(const CompiledKernel&)>& load);

  DiskCache& disk_cache() { return disk_; }
  JitStats stats() const;

 private:
  struct CompileSlot {
    std::mutex mutex;
    std::shared_ptr<const CompiledKernel> kernel;
  };
  struct LoadedKey {
    KernelDescriptor descriptor;
    CUcontext context;
    bool operator==(const LoadedKey& o) const { return descriptor == o.descriptor && context == o.context; }
  };
  struct LoadedKeyHash {
    size_t operator()(const LoadedKey& k) const {
      return KernelDescriptorHash()(k.descriptor) ^ (reinterpret_cast<size_t>(k.context) * 0x9e3779b97f4a7c15ull);
    }
  };

  std::shared_ptr<CompileSlot> slot(const KernelDescriptor& descriptor);
  // use_disk = false: compile with NVRTC even if an entry exists (it was found unusable).
  std::shared_ptr<const CompiledKernel> build(const KernelDescriptor& descriptor, bool use_disk);

  DiskCache disk_;
  std::mutex slots_mutex_;
  std::unordered_map<KernelDescriptor, std::shared_ptr<CompileSlot>, KernelDescriptorHash> slots_;
  mutable std::shared_mutex loaded_mutex_;
  std::unordered_map<LoadedKey, std::unique_ptr<LoadedKernel>, LoadedKeyHash> loaded_;
  std::atomic<uint64_t> disk_hits_{0};
  std::atomic<uint64_t> memory_hits_{0};
};

}  // namespace chord
