#include "cache/kernel_key.hpp"

#include <fmt/format.h>
#include <xxhash.h>

namespace chord {
namespace {

// Length-prefixed fields, so ("ab","c") and ("a","bc") hash differently.
void update(XXH3_state_t* state, std::string_view field) {
  uint64_t size = field.size();
  XXH3_128bits_update(state, &size, sizeof size);
  XXH3_128bits_update(state, field.data(), field.size());
}

}  // namespace

std::string KernelKey::hex() const { return fmt::format("{:016x}{:016x}", high, low); }

KernelKey make_kernel_key(const std::string& source, const std::vector<EmbeddedHeader>& headers,
                          const std::string& nvrtc_version, const std::vector<std::string>& options) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  update(state, "chord-kernel-key-v1");
  update(state, source);
  for (const auto& h : headers) {
    update(state, h.name);
    update(state, h.contents);
  }
  update(state, nvrtc_version);
  for (const auto& o : options) update(state, o);
  XXH128_hash_t hash = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  return KernelKey{hash.high64, hash.low64};
}

}  // namespace chord
