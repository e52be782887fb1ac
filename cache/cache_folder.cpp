#include "cache/cache_folder.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/safe_file.hpp"

namespace chord {
namespace {

// Creates the missing folders of `path` with exactly `mode` (chmod after mkdir: the umask
// could make a shared folder unreadable to the others it is built for).
bool make_dirs(const std::string& path, mode_t mode) {
  size_t pos = 0;
  for (;;) {
    pos = path.find('/', pos + 1);
    const std::string part = path.substr(0, pos);
    if (::mkdir(part.c_str(), mode) == 0) {
      ::chmod(part.c_str(), mode);
    } else if (errno != EEXIST) {
      return false;
    }
    if (pos == std::string::npos) return true;
  }
}

// Why a folder with this owner and mode must not be used for the role ("" when it may).
std::string untrusted(const std::string& path, const struct stat& st, FolderRole role) {
  const uid_t me = ::geteuid();
  const bool read_only = role == FolderRole::kReadOnly;
  const char* other_choice = read_only                        ? "or remove it from CHORD_CACHE_READONLY_DIRS"
                             : role == FolderRole::kShared ? "or choose another --out folder"
                                                           : "or set CHORD_CACHE_DIR to a folder of your own";
  const char* good_mode = role == FolderRole::kPrivate ? "0700 is best" : "0755 is fine";
  if (st.st_uid != me && !(read_only && st.st_uid == 0)) {
    return fmt::format("{} belongs to uid {}, not to you (uid {}){}, so its kernels cannot be trusted; remove it, {}",
                       path, st.st_uid, me, read_only ? " or root" : "", other_choice);
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return fmt::format("{} is writable by group or others (mode {:04o}), so anyone among them could plant kernels "
                       "there; check its contents and run `chmod go-w {}` ({}), {}",
                       path, st.st_mode & 07777, path, good_mode, other_choice);
  }
  return "";
}

// Opens a folder (following a symlink the user made to it) and checks it for the role.
int open_trusted(int at_fd, const std::string& name, const std::string& path, FolderRole role, std::string* problem) {
  int fd = ::openat(at_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    *problem = fmt::format("cannot open {}: {}", path, std::strerror(errno));
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    *problem = fmt::format("cannot examine {}: {}", path, std::strerror(errno));
  } else {
    *problem = untrusted(path, st, role);
  }
  if (problem->empty()) return fd;
  ::close(fd);
  return -1;
}

}  // namespace

CacheFolder open_cache_folder(const std::string& dir, FolderRole role) {
  CacheFolder folder;
  // A link another user planted where the folder would be could point the cache at a folder of
  // theirs, or at one of ours.
  uid_t link_owner = 0;
  if (symlink_by_another_user(dir, &link_owner)) {
    folder.problem = fmt::format("{} is a symlink made by uid {}, not by you or root; remove it, or use another folder",
                                 dir, link_owner);
    return folder;
  }
  const mode_t mode = role == FolderRole::kShared ? 0755 : 0700;
  const std::string kernels = dir + "/kernels";
  // An existing folder is judged before anything is created in it.
  struct stat existing;
  if (role != FolderRole::kReadOnly && ::stat(dir.c_str(), &existing) == 0 && S_ISDIR(existing.st_mode)) {
    folder.problem = untrusted(dir, existing, role);
    if (!folder.problem.empty()) return folder;
  }
  if (role != FolderRole::kReadOnly && !make_dirs(kernels, mode)) {
    folder.problem = fmt::format("cannot create {}: {}", kernels, std::strerror(errno));
    return folder;
  }
  const int dir_fd = open_trusted(AT_FDCWD, dir, dir, role, &folder.problem);
  if (dir_fd < 0) return folder;
  folder.kernels_fd = open_trusted(dir_fd, "kernels", kernels, role, &folder.problem);
  ::close(dir_fd);
  if (folder.kernels_fd >= 0 && role != FolderRole::kReadOnly) {
    folder.writable = ::faccessat(AT_FDCWD, kernels.c_str(), W_OK, AT_EACCESS) == 0;
    if (!folder.writable) folder.problem = fmt::format("cannot write {}: {}", kernels, std::strerror(errno));
  }
  return folder;
}

}  // namespace chord
