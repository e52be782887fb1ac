// The JIT runtime: descriptor -> compiled cubin (memo, disk cache, NVRTC) -> kernel
// loaded in a context (memo). The launch path is `kernel()`: one shared-lock lookup.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <cuda.h>

#include "cache/disk_cache.hpp"
#include "jit/cubin_info.hpp"
#include "jit/kernel_descriptor.hpp"
#include "jit/kernel_key.hpp"
#include "launcher/kernel_module.hpp"

namespace chord {

struct CompiledKernel {
  KernelKey key;
  std::vector<char> cubin;
  CubinInfo info;
};

struct JitStats {
  uint64_t disk_hits = 0;
  uint64_t disk_rebuilds = 0;
  uint64_t memory_hits = 0;
};

class JitRuntime {
 public:
  explicit JitRuntime(const std::string& cache_dir);

  // The process-wide runtime, caching in CHORD_CACHE_DIR.
  static JitRuntime& global();

  // Needs no GPU: memo, then disk cache, then NVRTC (publishing the result to disk).
  std::shared_ptr<const CompiledKernel> compile(const KernelDescriptor& descriptor);

  // The launch path: the kernel loaded in `context`, compiled and loaded on first use.
  const LoadedKernel& kernel(const KernelDescriptor& descriptor, CUcontext context);

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

  std::shared_ptr<const CompiledKernel> build(const KernelDescriptor& descriptor);

  DiskCache disk_;
  std::mutex slots_mutex_;
  std::unordered_map<KernelDescriptor, std::shared_ptr<CompileSlot>, KernelDescriptorHash> slots_;
  mutable std::shared_mutex loaded_mutex_;
  std::unordered_map<LoadedKey, std::unique_ptr<LoadedKernel>, LoadedKeyHash> loaded_;
  std::atomic<uint64_t> disk_hits_{0};
  std::atomic<uint64_t> memory_hits_{0};
};

}  // namespace chord
