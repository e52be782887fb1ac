#include "cache/entry_lock.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.hpp"

namespace chord {

EntryLock::EntryLock(int dir_fd, const std::string& name, mode_t mode, std::chrono::milliseconds patience) {
  // O_NONBLOCK: something planted under the lock's name (a FIFO) must not block the open.
  int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, mode);
  if (fd < 0) {
    warn(fmt::format("cannot open the kernel cache lock {}: {}; compiling without it", name, std::strerror(errno)));
    return;
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    warn(fmt::format("kernel cache lock {} is not a regular file; compiling without it", name));
    ::close(fd);
    return;
  }
  // Polled rather than blocking so that a holder that never finishes cannot hang this
  // process; the poll interval grows to 20 ms, small beside any compile.
  const auto deadline = std::chrono::steady_clock::now() + patience;
  auto pause = std::chrono::milliseconds(1);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      warn(fmt::format("cannot lock the kernel cache lock {}: {}; compiling without it", name, std::strerror(errno)));
      ::close(fd);
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      warn(fmt::format("kernel cache lock {} is still held after {} s; compiling without it", name,
                       std::chrono::duration_cast<std::chrono::seconds>(patience).count()));
      ::close(fd);
      return;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
  fd_ = fd;
}

EntryLock::~EntryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor drops the flock
}

}  // namespace chord
