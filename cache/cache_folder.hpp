// Which cache folders chord trusts (docs/security.md). A folder holds kernels that run with
// the process's rights on its GPU, so anyone who can write to it can run code there: a
// folder chord writes must belong to this user, a read-only one to this user or root, and
// neither may be writable by group or others. Checked on the open folder (fstat), so the
// answer holds for the descriptor chord keeps using.
#pragma once
#include <string>

namespace chord {

enum class FolderRole {
  kPrivate,   // the user's cache: created 0700, written by this process
  kShared,    // `chord precompile --out`: created 0755 (entries 0644), for others to read
  kReadOnly,  // a CHORD_CACHE_READONLY_DIRS folder: never created, never written
};

struct CacheFolder {
  int kernels_fd = -1;    // <dir>/kernels, open; -1 when the folder is unusable
  bool writable = false;  // a writable role's folder this process can write
  std::string problem;    // why it is unusable or not writable, with the fix
};

// Opens <dir>/kernels for the role, creating what is missing for the writable roles. A
// trusted folder of a writable role that this process cannot write is still opened (its
// entries can be read), with writable = false.
CacheFolder open_cache_folder(const std::string& dir, FolderRole role);

}  // namespace chord
