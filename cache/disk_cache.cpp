#include "cache/disk_cache.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <xxhash.h>

#include "jit/error.hpp"

namespace chord {
namespace {

constexpr char kMagic[8] = {'C', 'H', 'O', 'R', 'D', 'C', 'B', '1'};

struct EntryHeader {
  char magic[8];
  uint64_t payload_size;
  uint64_t checksum;  // XXH3-64 of the payload
  uint64_t key_high;
  uint64_t key_low;
};

bool make_dirs(const std::string& path) {
  if (path.empty()) return false;
  size_t pos = 0;
  while ((pos = path.find('/', pos + 1)) != std::string::npos) {
    std::string part = path.substr(0, pos);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return mkdir(path.c_str(), 0755) == 0 || errno == EEXIST;
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

std::optional<std::vector<char>> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::vector<char> bytes;
  char buffer[1 << 16];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return std::nullopt;
    }
    bytes.insert(bytes.end(), buffer, buffer + n);
  }
  ::close(fd);
  return bytes;
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

DiskCache::DiskCache(std::string dir) : dir_(std::move(dir)), kernels_dir_(dir_ + "/kernels") {
  if (!make_dirs(kernels_dir_) || access(kernels_dir_.c_str(), W_OK) != 0) {
    degrade(fmt::format("cannot create or write {}: {}", kernels_dir_, std::strerror(errno)));
  }
}

void DiskCache::degrade(const std::string& why) {
  if (!memory_only_.exchange(true)) {
    warn(fmt::format("kernel cache at {} is unusable ({}); compiled kernels are kept in memory only", dir_, why));
  }
}

std::string DiskCache::entry_path(const KernelKey& key) const {
  return kernels_dir_ + "/" + key.hex() + ".cubin";
}

std::optional<std::vector<char>> DiskCache::load(const KernelKey& key) {
  if (memory_only()) return std::nullopt;
  std::string path = entry_path(key);
  auto bytes = read_file(path);
  if (!bytes) return std::nullopt;
  EntryHeader header;
  bool valid = bytes->size() >= sizeof header;
  if (valid) {
    std::memcpy(&header, bytes->data(), sizeof header);
    const char* payload = bytes->data() + sizeof header;
    valid = std::memcmp(header.magic, kMagic, sizeof kMagic) == 0 &&
            header.payload_size == bytes->size() - sizeof header && header.key_high == key.high &&
            header.key_low == key.low && XXH3_64bits(payload, header.payload_size) == header.checksum;
  }
  if (!valid) {
    rebuilds_.fetch_add(1);
    warn(fmt::format("kernel cache entry {} is corrupt or truncated; rebuilding it", path));
    ::unlink(path.c_str());
    return std::nullopt;
  }
  return std::vector<char>(bytes->begin() + sizeof header, bytes->end());
}

void DiskCache::store(const KernelKey& key, const std::vector<char>& cubin) {
  if (memory_only()) return;
  static std::atomic<uint64_t> counter{0};
  std::string path = entry_path(key);
  std::string temp = fmt::format("{}/.{}.{}.{}.tmp", kernels_dir_, key.hex(), getpid(), counter.fetch_add(1));
  std::vector<char> bytes = encode_cache_entry(key, cubin);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return degrade(fmt::format("cannot create {}: {}", temp, std::strerror(errno)));
  bool ok = write_all(fd, bytes.data(), bytes.size()) && ::fsync(fd) == 0;
  int saved_errno = errno;
  ok = (::close(fd) == 0) && ok;
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    if (ok) saved_errno = errno;
    ::unlink(temp.c_str());
    return degrade(fmt::format("cannot write {}: {}", path, std::strerror(saved_errno)));
  }
  // Make the rename itself durable.
  int dir_fd = ::open(kernels_dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace chord
