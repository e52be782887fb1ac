#include "core/safe_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

namespace chord {
namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Closes a descriptor at scope exit.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

bool symlink_by_another_user(const std::string& path, uid_t* owner) {
  // "dir/" or "dir/." would make lstat follow the link at "dir": judge the name without them.
  std::string name = path;
  while (name.size() > 1) {
    if (name.back() == '/') {
      name.pop_back();
    } else if (name.size() > 2 && name.compare(name.size() - 2, 2, "/.") == 0) {
      name.resize(name.size() - 2);
    } else {
      break;
    }
  }
  struct stat link{};
  if (::lstat(name.c_str(), &link) != 0 || !S_ISLNK(link.st_mode) || link.st_uid == ::geteuid() || link.st_uid == 0) {
    return false;
  }
  *owner = link.st_uid;
  return true;
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

FileRead read_regular_file(int dir_fd, const std::string& name, size_t max_bytes) {
  FileRead result;
  // O_NONBLOCK: opening a FIFO returns at once (fstat then rejects it) instead of waiting
  // for a writer; O_NOFOLLOW: a symlink (e.g. to /dev/zero) fails with ELOOP.
  Fd file{::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (file.fd < 0) {
    if (errno == ENOENT) return result;
    result.status = FileRead::kRejected;
    result.why = errno == ELOOP ? "is a symbolic link" : fmt::format("cannot be opened ({})", std::strerror(errno));
    return result;
  }
  result.status = FileRead::kRejected;
  struct stat st;
  if (::fstat(file.fd, &st) != 0) {
    result.why = fmt::format("cannot be examined ({})", std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    result.why = fmt::format("is {}", file_kind(st.st_mode));
  } else if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    result.why = fmt::format("belongs to uid {}, neither you (uid {}) nor root", st.st_uid, ::geteuid());
  } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    result.why = fmt::format("is writable by group or others (mode {:04o})", st.st_mode & 07777);
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    result.why = fmt::format("has {} bytes, more than the {} an entry may have", st.st_size, max_bytes);
  }
  if (!result.why.empty()) return result;
  // Read at most max_bytes + 1 whatever fstat said, so a file that grows cannot exhaust memory.
  result.bytes.resize(static_cast<size_t>(st.st_size));
  size_t have = 0;
  for (;;) {
    if (have == result.bytes.size()) {
      if (have > max_bytes) break;
      result.bytes.resize(std::min(max_bytes + 1, have + 65536));
    }
    ssize_t n = ::read(file.fd, result.bytes.data() + have, result.bytes.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      result.why = fmt::format("cannot be read ({})", std::strerror(errno));
      return result;
    }
    if (n == 0) break;
    have += static_cast<size_t>(n);
  }
  if (have > max_bytes) {
    result.why = fmt::format("has more than the {} bytes an entry may have", max_bytes);
    return result;
  }
  result.bytes.resize(have);
  result.status = FileRead::kOk;
  return result;
}

int write_new_file(int dir_fd, const std::string& name, const std::vector<char>& bytes, mode_t mode) {
  int fd = ::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return errno;
  // Exactly `mode`, whatever the umask (entries of a shared folder must be readable by others).
  bool ok = ::fchmod(fd, mode) == 0 && write_all(fd, bytes.data(), bytes.size()) && ::fsync(fd) == 0;
  int saved_errno = ok ? 0 : errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    saved_errno = errno;
  }
  if (!ok) ::unlinkat(dir_fd, name.c_str(), 0);
  return saved_errno;
}

std::string make_private_temp_dir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp";
  std::string pattern = base + "/" + prefix + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

std::string write_private_file(const std::string& dir, const std::string& stem, const std::string& suffix,
                               const std::string& text) {
  std::string path = dir + "/" + stem + "-XXXXXX" + suffix;
  int fd = ::mkstemps(path.data(), static_cast<int>(suffix.size()));
  if (fd < 0) return "";
  bool ok = write_all(fd, text.data(), text.size());
  ok = ::close(fd) == 0 && ok;
  if (!ok) {
    ::unlink(path.c_str());
    return "";
  }
  return path;
}

}  // namespace chord
