// A per-key inter-process lock: flock on "<key>.lock" beside the entry. Processes missing
// the same key take it in turn, so the first compiles and publishes the entry and the
// others find it when they get the lock. The kernel drops a flock when its holder exits or
// is killed, so a crash never leaves a key locked; lock files stay (empty, one per key):
// removing one while another process waits on it would let two holders in.
#pragma once
#include <chrono>
#include <string>
#include <sys/types.h>

namespace chord {

class EntryLock {
 public:
  EntryLock() = default;  // holds nothing (memory-only cache)
  // Waits up to `patience` for the lock; past it (a holder stopped, not dead) or where the
  // filesystem has no flock, goes on unlocked with a warning: at worst a key compiles twice.
  EntryLock(int dir_fd, const std::string& name, mode_t mode, std::chrono::milliseconds patience);
  ~EntryLock();
  EntryLock(EntryLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  EntryLock& operator=(EntryLock&&) = delete;
  EntryLock(const EntryLock&) = delete;

  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace chord
