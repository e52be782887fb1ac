// Seeds for the fuzz target's cubin and cache-entry targets:
//   chord_fuzz_seeds OUT_DIR [ENTRY.cubin ...]
// ENTRY files are cache entries (<key>.cubin, e.g. from `chord precompile --out`); each one's
// cubin becomes a cubin seed and a cache-entry seed. The minimal crafted cubin and every
// damage of tests/crafted_elf.hpp (applied to it and to the smallest real cubin) become
// cubin seeds too, so the fuzzer starts from well-formed ELFs and from each way the reader
// must refuse one. Nothing here is committed: CI writes the seeds from a fresh build.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../tests/crafted_elf.hpp"
#include "cache/disk_cache.hpp"
#include "fuzz_targets.hpp"

namespace {

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_seed(const std::string& path, std::vector<char> bytes, std::initializer_list<uint8_t> tail) {
  for (uint8_t b : tail) bytes.push_back(static_cast<char>(b));
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The cubin inside an entry file named <32 hex digits>.cubin, checked by re-encoding it.
bool entry_payload(const std::string& path, std::vector<char>* cubin) {
  const std::string name = path.substr(path.rfind('/') + 1);
  if (name.size() != 38 || name.substr(32) != ".cubin") return false;
  const chord::KernelKey key{std::stoull(name.substr(0, 16), nullptr, 16), std::stoull(name.substr(16, 16), nullptr, 16)};
  const std::vector<char> entry = read_file(path);
  const size_t header = chord::encode_cache_entry(key, {}).size();
  if (entry.size() < header) return false;
  cubin->assign(entry.begin() + static_cast<long>(header), entry.end());
  return chord::encode_cache_entry(key, *cubin) == entry;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: chord_fuzz_seeds OUT_DIR [ENTRY.cubin ...]\n");
    return 2;
  }
  const std::string out = argv[1];
  std::vector<std::vector<char>> cubins;
  for (int i = 2; i < argc; ++i) {
    std::vector<char> cubin;
    if (!entry_payload(argv[i], &cubin)) {
      std::fprintf(stderr, "chord_fuzz_seeds: %s is not a valid cache entry\n", argv[i]);
      return 1;
    }
    cubins.push_back(std::move(cubin));
  }
  std::sort(cubins.begin(), cubins.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
  using namespace chord::fuzz;
  size_t seeds = 0;
  for (size_t i = 0; i < cubins.size(); ++i) {
    write_seed(out + "/cubin-" + std::to_string(i), cubins[i], {kCubin});
    write_seed(out + "/entry-" + std::to_string(i), chord::encode_cache_entry(kEntryKey, cubins[i]), {0, kCacheEntry});
    seeds += 2;
  }
  std::vector<std::vector<char>> bases = {chord::test::minimal_cubin()};
  if (!cubins.empty()) bases.push_back(cubins.front());
  for (size_t b = 0; b < bases.size(); ++b) {
    write_seed(out + "/crafted-" + std::to_string(b), bases[b], {kCubin});
    ++seeds;
    const auto damages = chord::test::elf_damages();
    for (size_t d = 0; d < damages.size(); ++d) {
      std::vector<char> bytes = bases[b];
      if (!damages[d].apply(bytes)) continue;
      write_seed(out + "/crafted-" + std::to_string(b) + "-" + std::to_string(d), bytes, {kCubin});
      ++seeds;
    }
  }
  std::printf("%zu seeds (%zu real cubins) in %s\n", seeds, cubins.size(), out.c_str());
  return 0;
}
