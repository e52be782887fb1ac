#include "jit/runtime.hpp"

#include <cstdio>
#include <fstream>

#include "jit/compiler.hpp"
#include "jit/embedded_headers.hpp"
#include "jit/env.hpp"
#include "jit/error.hpp"
#include "jit/kernel_source.hpp"

namespace chord {

JitRuntime::JitRuntime(const std::string& cache_dir) : disk_(cache_dir) {}

JitRuntime& JitRuntime::global() {
  static JitRuntime runtime(env().cache_dir);
  return runtime;
}

JitStats JitRuntime::stats() const {
  return JitStats{disk_hits_.load(), disk_.rebuilds(), memory_hits_.load()};
}

std::shared_ptr<const CompiledKernel> JitRuntime::compile(const KernelDescriptor& descriptor) {
  std::shared_ptr<CompileSlot> slot;
  {
    std::lock_guard<std::mutex> lock(slots_mutex_);
    auto& entry = slots_[descriptor];
    if (!entry) entry = std::make_shared<CompileSlot>();
    slot = entry;
  }
  // One builder per descriptor; other descriptors compile concurrently.
  std::lock_guard<std::mutex> lock(slot->mutex);
  if (!slot->kernel) slot->kernel = build(descriptor);
  return slot->kernel;
}

std::shared_ptr<const CompiledKernel> JitRuntime::build(const KernelDescriptor& descriptor) {
  KernelSource source = generate_kernel_source(descriptor);
  CompileRequest request{source.name, source.text, descriptor.arch, source.options};
  auto compiled = std::make_shared<CompiledKernel>();
  compiled->key = make_kernel_key(source.text, embedded_headers(), nvrtc_version(), nvrtc_options(request));
  const bool debug = env().jit_debug;
  if (env().dump_source && !disk_.memory_only()) {
    std::ofstream(disk_.entry_path(compiled->key) + ".cu") << source.text;
  }
  if (auto cached = disk_.load(compiled->key)) {
    compiled->cubin = std::move(*cached);
    disk_hits_.fetch_add(1);
    if (debug) std::fprintf(stderr, "chord: disk cache hit %s (%s)\n", compiled->key.hex().c_str(), source.name.c_str());
  } else {
    compiled->cubin = compile_to_cubin(request, disk_.memory_only() ? "" : disk_.dir());
    disk_.store(compiled->key, compiled->cubin);
  }
  compiled->info = read_cubin_info(compiled->cubin);
  if (!compiled->info.has_meta) {
    fail(CHORD_ERROR_INTERNAL, "cubin of {} has no chord_kernel_meta symbol", source.name);
  }
  return compiled;
}

const LoadedKernel& JitRuntime::kernel(const KernelDescriptor& descriptor, CUcontext context) {
  LoadedKey key{descriptor, context};
  {
    std::shared_lock<std::shared_mutex> lock(loaded_mutex_);
    auto it = loaded_.find(key);
    if (it != loaded_.end()) {
      memory_hits_.fetch_add(1, std::memory_order_relaxed);
      return *it->second;
    }
  }
  auto compiled = compile(descriptor);
  auto loaded = std::make_unique<LoadedKernel>(compiled->cubin, compiled->info.meta, context);
  std::unique_lock<std::shared_mutex> lock(loaded_mutex_);
  auto& slot = loaded_[key];
  if (!slot) slot = std::move(loaded);  // a racing loader may have won; keep its module
  return *slot;
}

}  // namespace chord
