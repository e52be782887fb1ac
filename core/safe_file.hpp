// File access that a file planted in a folder cannot subvert: reads never follow a symlink,
// never block on a FIFO, accept only regular files of a bounded size that another user
// cannot write; writes never go through an existing file or symlink (O_EXCL).
#pragma once
#include <string>
#include <sys/types.h>
#include <vector>

namespace chord {

struct FileRead {
  enum Status { kOk, kAbsent, kRejected } status = kAbsent;
  std::vector<char> bytes;  // kOk: the contents
  std::string why;          // kRejected: what is wrong with the file
};

// Reads `name` in the folder `dir_fd` if it is a regular file of at most `max_bytes`, owned
// by this user or root and not writable by group or others.
FileRead read_regular_file(int dir_fd, const std::string& name, size_t max_bytes);

// Creates `name` in `dir_fd` with exactly `mode` (failing if anything exists under that
// name), writes the bytes and fsyncs them. Returns 0 or the errno of the failing step; a failed write removes the file.
int write_new_file(int dir_fd, const std::string& name, const std::vector<char>& bytes, mode_t mode);

// A fresh folder "<$TMPDIR or /tmp>/<prefix>-XXXXXX", mode 0700 (mkdtemp); "" on failure.
std::string make_private_temp_dir(const std::string& prefix);

// Writes `text` to a fresh file "<dir>/<stem>-XXXXXX<suffix>" (mkstemps: O_EXCL, mode 0600).
// Returns its path, or "" when it cannot be written.
std::string write_private_file(const std::string& dir, const std::string& stem, const std::string& suffix,
                               const std::string& text);

// Whether `path` is a symlink made by a user other than this one or root, and by whom. Such a
// link is not followed (the rule of Linux's protected_symlinks, which not every host turns on):
// one planted where a folder or an output file would be could redirect it.
bool symlink_by_another_user(const std::string& path, uid_t* owner);

// write() until done, retrying EINTR.
bool write_all(int fd, const char* data, size_t size);

}  // namespace chord
