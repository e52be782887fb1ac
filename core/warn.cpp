#include <cstdio>
#include <mutex>
#include <set>

#include "core/error.hpp"

namespace chord {

void warn(const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mutex);
  if (seen.insert(message).second) std::fprintf(stderr, "chord: warning: %s\n", message.c_str());
}

}  // namespace chord
