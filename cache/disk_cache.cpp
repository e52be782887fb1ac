#include "cache/disk_cache.hpp"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <xxhash.h>

#include "core/error.hpp"
#include "core/safe_file.hpp"

namespace chord {
namespace {

constexpr char kMagic[8] = {'C', 'H', 'O', 'R', 'D', 'C', 'B', '1'};

struct EntryHeader {
  char magic[8];
  uint64_t payload_size;
  uint64_t checksum;  // XXH3-64 of the payload: catches damage, not forgery (folder trust does that)
  uint64_t key_high;
  uint64_t key_low;
};

// The payload of a well-formed entry for `key`.
std::optional<std::vector<char>> decode_entry(const KernelKey& key, const std::vector<char>& bytes) {
  EntryHeader header;
  if (bytes.size() < sizeof header) return std::nullopt;
  std::memcpy(&header, bytes.data(), sizeof header);
  const char* payload = bytes.data() + sizeof header;
  if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0 || header.payload_size != bytes.size() - sizeof header ||
      header.key_high != key.high || header.key_low != key.low ||
      XXH3_64bits(payload, header.payload_size) != header.checksum) {
    return std::nullopt;
  }
  return std::vector<char>(payload, payload + header.payload_size);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<char> encode_cache_entry(const KernelKey& key, const std::vector<char>& cubin) {
  EntryHeader header;
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.payload_size = cubin.size();
  header.checksum = XXH3_64bits(cubin.data(), cubin.size());
  header.key_high = key.high;
  header.key_low = key.low;
  std::vector<char> bytes(sizeof header + cubin.size());
  std::memcpy(bytes.data(), &header, sizeof header);
  std::memcpy(bytes.data() + sizeof header, cubin.data(), cubin.size());
  return bytes;
}

DiskCache::DiskCache(std::string dir, std::vector<std::string> readonly_dirs, FolderRole role)
    : dir_(std::move(dir)), role_(role) {
  if (dir_.empty()) {
    degrade("no per-user cache folder: XDG_CACHE_HOME and HOME are unset and the user has no home directory; set "
            "CHORD_CACHE_DIR to a private folder");
  } else {
    CacheFolder folder = open_cache_folder(dir_, role_);
    if (folder.kernels_fd >= 0) layers_.push_back(Layer{dir_ + "/kernels", folder.kernels_fd, folder.writable});
    if (folder.writable) {
      remove_orphans(layers_.back());
    } else {
      degrade(folder.kernels_fd >= 0 ? folder.problem + "; its entries are still read" : folder.problem);
    }
  }
  for (const std::string& readonly : readonly_dirs) {
    CacheFolder folder = open_cache_folder(readonly, FolderRole::kReadOnly);
    if (folder.kernels_fd < 0) {
      warn(fmt::format("read-only kernel cache {} is not used: {}", readonly, folder.problem));
    } else {
      layers_.push_back(Layer{readonly + "/kernels", folder.kernels_fd, false});
    }
  }
}

DiskCache::~DiskCache() {
  for (const Layer& layer : layers_) ::close(layer.fd);
}

void DiskCache::degrade(const std::string& why) {
  if (!memory_only_.exchange(true)) {
    warn(fmt::format("kernel cache at {} is unusable ({}); compiled kernels are kept in memory only",
                     dir_.empty() ? "(none)" : dir_, why));
  }
}

const DiskCache::Layer* DiskCache::writable_layer() const {
  if (memory_only() || layers_.empty() || !layers_[0].writable) return nullptr;
  return &layers_[0];
}

bool DiskCache::reads_layer(const std::string& dir) const {
  for (const Layer& layer : layers_) {
    if (!layer.writable && layer.kernels_dir == dir + "/kernels") return true;
  }
  return false;
}

std::string DiskCache::entry_path(const KernelKey& key) const {
  return dir_ + "/kernels/" + key.hex() + ".cubin";
}

void DiskCache::remove_orphans(const Layer& layer) {
  int fd = ::dup(layer.fd);
  DIR* d = fd < 0 ? nullptr : ::fdopendir(fd);
  if (d == nullptr) {
    if (fd >= 0) ::close(fd);
    return;
  }
  const auto now = std::chrono::system_clock::now();
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    struct stat st;
    if (name[0] != '.' || !ends_with(name, ".tmp") ||
        ::fstatat(layer.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    if (now - std::chrono::system_clock::from_time_t(st.st_mtime) > kOrphanAge) ::unlinkat(layer.fd, name.c_str(), 0);
  }
  ::closedir(d);
}

void DiskCache::reject(const Layer& layer, const std::string& name, const std::string& message) {
  rebuilds_.fetch_add(1);
  if (!layer.writable) {
    warn(message + "; ignoring it (read-only cache)");
    return;
  }
  warn(message + "; rebuilding it");
  if (::unlinkat(layer.fd, name.c_str(), 0) != 0 && (errno == EISDIR || errno == EPERM)) {
    ::unlinkat(layer.fd, name.c_str(), AT_REMOVEDIR);  // an empty directory planted as an entry
  }
}

std::optional<std::vector<char>> DiskCache::load(const KernelKey& key, const Check& check, std::string* found_at,
                                                 bool writable_only) {
  const std::string name = key.hex() + ".cubin";
  for (const Layer& layer : layers_) {
    if (layer.writable ? &layer != writable_layer() : writable_only) continue;
    const std::string path = layer.kernels_dir + "/" + name;
    FileRead file = read_regular_file(layer.fd, name, kMaxEntryBytes + sizeof(EntryHeader));
    if (file.status == FileRead::kAbsent) continue;
    if (file.status == FileRead::kRejected) {
      reject(layer, name, fmt::format("kernel cache entry {} {}", path, file.why));
      continue;
    }
    auto payload = decode_entry(key, file.bytes);
    if (!payload) {
      reject(layer, name, fmt::format("kernel cache entry {} is corrupt or truncated", path));
      continue;
    }
    if (check) {
      try {
        check(*payload, path);
      } catch (const Error& e) {
        reject(layer, name, e.what());
        continue;
      }
    }
    if (found_at != nullptr) *found_at = path;
    return payload;
  }
  return std::nullopt;
}

void DiskCache::discard(const std::string& entry_path, const std::string& why) {
  for (const Layer& layer : layers_) {
    const std::string prefix = layer.kernels_dir + "/";
    if (entry_path.compare(0, prefix.size(), prefix) == 0) {
      reject(layer, entry_path.substr(prefix.size()), fmt::format("kernel cache entry {} {}", entry_path, why));
      return;
    }
  }
}

EntryLock DiskCache::lock(const KernelKey& key) const {
  const Layer* layer = writable_layer();
  if (layer == nullptr) return EntryLock();
  return EntryLock(layer->fd, key.hex() + ".lock", role_ == FolderRole::kShared ? 0644 : 0600, kLockPatience);
}

void DiskCache::store(const KernelKey& key, const std::vector<char>& cubin) {
  const Layer* layer = writable_layer();
  if (layer == nullptr) return;
  static std::atomic<uint64_t> counter{0};
  // A random part per process besides the pid: a store killed mid-write leaves its temp file
  // for a day, and a restarted container (or one beside it on a shared folder) often has the
  // same pid and makes its stores in the same order, so pid and counter alone would collide.
  static const uint64_t process_tag = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  const std::string name = key.hex() + ".cubin";
  const std::string temp =
      fmt::format(".{}.{}.{:016x}.{}.tmp", key.hex(), getpid(), process_tag, counter.fetch_add(1));
  const int error = write_new_file(layer->fd, temp, encode_cache_entry(key, cubin),
                                   role_ == FolderRole::kShared ? 0644 : 0600);
  if (error != 0) {
    return degrade(fmt::format("cannot write {}/{}: {}", layer->kernels_dir, temp, std::strerror(error)));
  }
  if (::renameat(layer->fd, temp.c_str(), layer->fd, name.c_str()) != 0) {
    // Something other than a file holds the entry's name (e.g. a directory): this entry
    // is not cached, the folder still is.
    warn(fmt::format("cannot publish kernel cache entry {}/{}: {}", layer->kernels_dir, name, std::strerror(errno)));
    ::unlinkat(layer->fd, temp.c_str(), 0);
    return;
  }
  ::fsync(layer->fd);  // make the rename itself durable
}

void DiskCache::write_beside(const KernelKey& key, const std::string& suffix, const std::string& text) {
  const Layer* layer = writable_layer();
  if (layer == nullptr) return;
  const std::string name = key.hex() + ".cubin" + suffix;
  const std::string temp = fmt::format(".{}.{}.tmp", name, getpid());
  ::unlinkat(layer->fd, temp.c_str(), 0);
  if (write_new_file(layer->fd, temp, std::vector<char>(text.begin(), text.end()), 0600) != 0 ||
      ::renameat(layer->fd, temp.c_str(), layer->fd, name.c_str()) != 0) {
    ::unlinkat(layer->fd, temp.c_str(), 0);
    warn(fmt::format("cannot write {}/{}", layer->kernels_dir, name));
  }
}

}  // namespace chord
