#include "runtime/runtime.hpp"

#include <cstdio>

#include "core/embedded_headers.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "jit/compiler.hpp"
#include "jit/kernel_source.hpp"
#include "launcher/driver_api.hpp"

namespace chord {
namespace {

// The cubin's facts; a cubin without chord's metadata cannot be launched.
CubinInfo read_usable_cubin(const std::vector<char>& cubin, const std::string& origin) {
  CubinInfo info = read_cubin_info(cubin, origin);
  if (!info.has_meta) fail(CHORD_ERROR_INTERNAL, "{} has no chord_kernel_meta symbol", origin);
  return info;
}

}  // namespace

JitRuntime::JitRuntime(const std::string& cache_dir, const std::vector<std::string>& readonly_dirs, FolderRole role)
    : disk_(cache_dir, readonly_dirs, role) {}

JitRuntime& JitRuntime::global() {
  static JitRuntime runtime(env().cache_dir, env().cache_readonly_dirs);
  return runtime;
}

JitStats JitRuntime::stats() const {
  return JitStats{disk_hits_.load(), disk_.rebuilds(), memory_hits_.load()};
}

std::shared_ptr<JitRuntime::CompileSlot> JitRuntime::slot(const KernelDescriptor& descriptor) {
  std::lock_guard<std::mutex> lock(slots_mutex_);
  auto& entry = slots_[descriptor];
  if (!entry) entry = std::make_shared<CompileSlot>();
  return entry;
}

std::shared_ptr<const CompiledKernel> JitRuntime::compile(const KernelDescriptor& descriptor) {
  std::shared_ptr<CompileSlot> s = slot(descriptor);
  // One builder per descriptor; other descriptors compile concurrently.
  std::lock_guard<std::mutex> lock(s->mutex);
  if (!s->kernel) s->kernel = build(descriptor, true);
  return s->kernel;
}

std::shared_ptr<const CompiledKernel> JitRuntime::build(const KernelDescriptor& descriptor, bool use_disk) {
  KernelSource source = generate_kernel_source(descriptor);
  CompileRequest request{source.name, source.text, descriptor.arch, source.options};
  auto compiled = std::make_shared<CompiledKernel>();
  compiled->key = make_kernel_key(source.text, embedded_headers(), nvrtc_version(), nvrtc_options(request));
  if (env().dump_source) disk_.write_beside(compiled->key, ".cu", source.text);
  // An entry is a hit only if its payload parses as a launchable cubin; one that does not
  // is dropped and rebuilt like a corrupt one.
  const DiskCache::Check check = [&compiled](const std::vector<char>& payload, const std::string& path) {
    compiled->info = read_usable_cubin(payload, "kernel cache entry " + path);
  };
  std::optional<std::vector<char>> cached;
  if (use_disk) cached = disk_.load(compiled->key, check, &compiled->entry_path);
  if (!cached) {
    // Another process may be compiling this key: wait for it, then look again.
    EntryLock lock = disk_.lock(compiled->key);
    if (use_disk && lock.held()) cached = disk_.load(compiled->key, check, &compiled->entry_path, true);
    if (!cached) {
      compiled->cubin = compile_to_cubin(request, disk_.memory_only() ? "" : disk_.dir());
      compiled->info = read_usable_cubin(compiled->cubin, "the cubin NVRTC made of " + source.name);
      disk_.store(compiled->key, compiled->cubin);
      return compiled;
    }
  }
  compiled->cubin = std::move(*cached);
  disk_hits_.fetch_add(1);
  if (env().jit_debug) {
    std::fprintf(stderr, "chord: disk cache hit %s (%s)\n", compiled->entry_path.c_str(), source.name.c_str());
  }
  return compiled;
}

std::unique_ptr<LoadedKernel> JitRuntime::load_with_rebuild(
    const KernelDescriptor& descriptor,
    const std::function<std::unique_ptr<LoadedKernel>(const CompiledKernel&)>& load) {
  std::shared_ptr<const CompiledKernel> compiled = compile(descriptor);
  try {
    return load(*compiled);
  } catch (const Error& e) {
    if (compiled->entry_path.empty() || e.status() != CHORD_ERROR_CUDA || !cuda_error_blames_image(e.cuda_result())) {
      throw;
    }
    disk_.discard(compiled->entry_path, fmt::format("could not be loaded ({})", e.what()));
    std::shared_ptr<CompileSlot> s = slot(descriptor);
    std::lock_guard<std::mutex> lock(s->mutex);
    if (s->kernel == compiled) s->kernel = build(descriptor, false);
    compiled = s->kernel;
  }
  return load(*compiled);
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
  auto loaded = load_with_rebuild(descriptor, [context](const CompiledKernel& compiled) {
    return std::make_unique<LoadedKernel>(compiled.cubin, compiled.info.meta, context);
  });
  std::unique_lock<std::shared_mutex> lock(loaded_mutex_);
  auto& slot = loaded_[key];
  if (!slot) slot = std::move(loaded);  // a racing loader may have won; keep its module
  return *slot;
}

}  // namespace chord
