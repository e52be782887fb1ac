#include "jit/cubin_info.hpp"

#include <algorithm>
#include <cstring>
#include <elf.h>

#include "jit/error.hpp"

namespace chord {
namespace {

constexpr const char* kMetaSymbol = "chord_kernel_meta";

template <typename T>
T read_at(const std::vector<char>& bytes, uint64_t offset) {
  if (offset > bytes.size() || sizeof(T) > bytes.size() - offset) {
    fail(CHORD_ERROR_INTERNAL, "cubin is truncated (offset {})", offset);
  }
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

// ".nv.info" holds attribute records {u8 format, u8 attribute, u16 size, payload}; formats
// 1-3 carry no payload beyond the u16, format 4 (a sized value) carries `size` bytes. The
// register count of a kernel is attribute 0x2f: {u32 symbol index, u32 registers}.
constexpr uint8_t kNvInfoSizedValue = 0x04;
constexpr uint8_t kNvInfoRegCount = 0x2f;

// [offset, offset + size) lies inside the bytes (no overflow for any field values).
bool within(const std::vector<char>& bytes, uint64_t offset, uint64_t size) {
  return size <= bytes.size() && offset <= bytes.size() - size;
}

int max_register_count(const std::vector<char>& cubin, const Elf64_Shdr& s) {
  int most = 0;
  uint64_t at = s.sh_offset;
  const uint64_t end = s.sh_offset + s.sh_size;
  while (at + 4 <= end) {
    const auto format = read_at<uint8_t>(cubin, at);
    const auto attribute = read_at<uint8_t>(cubin, at + 1);
    if (format != kNvInfoSizedValue) {
      at += 4;
      continue;
    }
    const uint64_t size = read_at<uint16_t>(cubin, at + 2);
    if (attribute == kNvInfoRegCount && size >= 8 && at + 12 <= end) {
      const auto registers = read_at<uint32_t>(cubin, at + 8);
      if (registers <= 255 && static_cast<int>(registers) > most) most = static_cast<int>(registers);
    }
    at += 4 + size;
  }
  return most;
}

}  // namespace

CubinInfo read_cubin_info(const std::vector<char>& cubin) {
  auto header = read_at<Elf64_Ehdr>(cubin, 0);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_machine != EM_CUDA) {
    fail(CHORD_ERROR_INTERNAL, "bytes are not a 64-bit CUDA ELF cubin");
  }
  CubinInfo info;
  info.sm = static_cast<int>((header.e_flags >> 8) & 0xff);

  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (int i = 0; i < header.e_shnum; ++i) {
    sections[i] = read_at<Elf64_Shdr>(cubin, header.e_shoff + static_cast<uint64_t>(i) * header.e_shentsize);
  }
  const Elf64_Shdr* names = header.e_shstrndx < sections.size() ? &sections[header.e_shstrndx] : nullptr;
  for (const auto& s : sections) {
    if (names != nullptr && s.sh_name < names->sh_size && within(cubin, s.sh_offset, s.sh_size) &&
        within(cubin, names->sh_offset, names->sh_size)) {
      const char* name = cubin.data() + names->sh_offset + s.sh_name;
      const size_t room = names->sh_size - s.sh_name;
      if (strnlen(name, room) == 8 && std::memcmp(name, ".nv.info", 8) == 0) {
        info.registers = std::max(info.registers, max_register_count(cubin, s));
      }
    }
    // The toolkit note records the ptxas command line, e.g. "-arch sm_90a -m 64".
    if (s.sh_type == SHT_NOTE && s.sh_offset + s.sh_size <= cubin.size()) {
      std::string text(cubin.data() + s.sh_offset, s.sh_size);
      size_t at = text.find("-arch ");
      if (at != std::string::npos) {
        size_t end = text.find_first_of(" \0", at + 6, 2);
        info.arch = text.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6);
      }
    }
    if (s.sh_type != SHT_SYMTAB) continue;
    const Elf64_Shdr& strtab = sections.at(s.sh_link);
    for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= s.sh_size; off += sizeof(Elf64_Sym)) {
      auto sym = read_at<Elf64_Sym>(cubin, s.sh_offset + off);
      if (sym.st_name >= strtab.sh_size || sym.st_shndx >= sections.size()) continue;
      const char* name = cubin.data() + strtab.sh_offset + sym.st_name;
      if (std::strncmp(name, kMetaSymbol, strtab.sh_size - sym.st_name) != 0) continue;
      const Elf64_Shdr& data = sections[sym.st_shndx];
      if (data.sh_type != SHT_PROGBITS || sym.st_size < 3 * sizeof(uint32_t)) continue;
      uint64_t at = data.sh_offset + sym.st_value;
      info.meta.threads = read_at<uint32_t>(cubin, at);
      info.meta.shared_bytes = read_at<uint32_t>(cubin, at + 4);
      info.meta.cluster_size = read_at<uint32_t>(cubin, at + 8);
      info.has_meta = true;
    }
  }
  return info;
}

}  // namespace chord
