#include "core/cubin_info.hpp"

#include <algorithm>
#include <cstring>
#include <elf.h>
#include <optional>
#include <string_view>

#include "core/error.hpp"

namespace chord {
namespace {

constexpr std::string_view kMetaSymbol = "chord_kernel_meta";

// ".nv.info" holds attribute records {u8 format, u8 attribute, u16 size, payload}; formats
// 1-3 carry no payload beyond the u16, format 4 (a sized value) carries `size` bytes. The
// register count of a kernel is attribute 0x2f: {u32 symbol index, u32 registers}.
constexpr uint8_t kNvInfoSizedValue = 0x04;
constexpr uint8_t kNvInfoRegCount = 0x2f;

// The cubin bytes with checked access. The bytes come from disk (a cache entry anyone with
// write access to the folder could have crafted), so every offset, size and index is
// checked before use, in forms that cannot wrap (`size <= n && offset <= n - size`, never
// `offset + size <= n`), and every failure is an Error naming the cubin.
class Elf {
 public:
  Elf(const std::vector<char>& bytes, const std::string& origin) : bytes_(bytes), origin_(origin) {}

  template <typename... Args>
  [[noreturn]] void bad(fmt::format_string<Args...> format, Args&&... args) const {
    fail(CHORD_ERROR_INTERNAL, "{} is not a usable cubin: {}", origin_,
         fmt::format(format, std::forward<Args>(args)...));
  }

  bool within(uint64_t offset, uint64_t size) const {
    return size <= bytes_.size() && offset <= bytes_.size() - size;
  }

  template <typename T>
  T read(uint64_t offset, const char* what) const {
    if (!within(offset, sizeof(T))) bad("{} at offset {} lies outside the {}-byte file", what, offset, bytes_.size());
    T value;
    std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;
  }

  // The bytes of section `index` (empty for sections that occupy no file space).
  std::string_view contents(const std::vector<Elf64_Shdr>& sections, uint64_t index) const {
    const Elf64_Shdr& s = sections[index];
    if (s.sh_type == SHT_NULL || s.sh_type == SHT_NOBITS) return {};
    if (!within(s.sh_offset, s.sh_size)) {
      bad("section {} ({} bytes at offset {}) lies outside the {}-byte file", index, s.sh_size, s.sh_offset,
          bytes_.size());
    }
    return std::string_view(bytes_.data() + s.sh_offset, s.sh_size);
  }

  // The NUL-terminated string at `offset` of a string table.
  std::string_view string_at(std::string_view table, uint64_t offset, const char* what, uint64_t which) const {
    if (offset >= table.size()) {
      bad("name of {} {} (offset {}) lies outside its {}-byte string table", what, which, offset, table.size());
    }
    const size_t end = table.find('\0', offset);
    if (end == std::string_view::npos) bad("name of {} {} (offset {}) is not NUL-terminated", what, which, offset);
    return table.substr(offset, end - offset);
  }

 private:
  const std::vector<char>& bytes_;
  const std::string& origin_;
};

template <typename T>
T load(std::string_view bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

int max_register_count(const Elf& elf, std::string_view info) {
  int most = 0;
  size_t at = 0;
  while (info.size() - at >= 4) {
    const auto format = static_cast<uint8_t>(info[at]);
    const auto attribute = static_cast<uint8_t>(info[at + 1]);
    if (format != kNvInfoSizedValue) {
      at += 4;
      continue;
    }
    const uint16_t size = load<uint16_t>(info, at + 2);
    if (size > info.size() - at - 4) {
      elf.bad(".nv.info record at offset {} holds {} bytes; its section has {} left", at, size, info.size() - at - 4);
    }
    if (attribute == kNvInfoRegCount && size >= 8) {
      const auto registers = load<uint32_t>(info, at + 8);
      if (registers > 255) elf.bad(".nv.info records {} registers per thread (at most 255 exist)", registers);
      most = std::max(most, static_cast<int>(registers));
    }
    at += 4 + size;
  }
  if (at != info.size()) elf.bad(".nv.info ends with a partial record ({} bytes)", info.size() - at);
  return most;
}

// The toolkit note records the ptxas command line, e.g. "-arch sm_90a -m 64".
void read_arch_note(std::string_view note, CubinInfo& info) {
  const size_t at = note.find("-arch ");
  if (at == std::string_view::npos) return;
  const size_t end = note.find_first_of(std::string_view(" \0", 2), at + 6);
  info.arch = std::string(note.substr(at + 6, end == std::string_view::npos ? std::string_view::npos : end - at - 6));
}

void read_meta_symbols(const Elf& elf, const std::vector<Elf64_Shdr>& sections, uint64_t index, CubinInfo& info) {
  const Elf64_Shdr& symtab = sections[index];
  if (symtab.sh_entsize < sizeof(Elf64_Sym)) {
    elf.bad("symbol table (section {}) has entries of {} bytes, fewer than {}", index, symtab.sh_entsize,
            sizeof(Elf64_Sym));
  }
  if (symtab.sh_link >= sections.size() || sections[symtab.sh_link].sh_type != SHT_STRTAB) {
    elf.bad("symbol table (section {}) names section {} as its string table, which is not one of the {} string "
            "table sections", index, symtab.sh_link, sections.size());
  }
  const std::string_view strings = elf.contents(sections, symtab.sh_link);
  const std::string_view table = elf.contents(sections, index);
  const uint64_t count = table.size() / symtab.sh_entsize;  // i * sh_entsize <= table.size(): no wrap
  for (uint64_t i = 0; i < count; ++i) {
    const auto sym = load<Elf64_Sym>(table, i * symtab.sh_entsize);
    if (elf.string_at(strings, sym.st_name, "symbol", i) != kMetaSymbol) continue;
    if (info.has_meta) elf.bad("symbol {} defines {} a second time", i, kMetaSymbol);
    if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= sections.size()) {
      elf.bad("{} lies in section {}, which does not exist ({} sections)", kMetaSymbol, sym.st_shndx, sections.size());
    }
    if (sections[sym.st_shndx].sh_type != SHT_PROGBITS) {
      elf.bad("{} lies in section {}, which holds no data", kMetaSymbol, sym.st_shndx);
    }
    constexpr uint64_t kMetaBytes = 3 * sizeof(uint32_t);
    if (sym.st_size < kMetaBytes) elf.bad("{} has {} bytes, fewer than {}", kMetaSymbol, sym.st_size, kMetaBytes);
    const std::string_view data = elf.contents(sections, sym.st_shndx);
    if (kMetaBytes > data.size() || sym.st_value > data.size() - kMetaBytes) {
      elf.bad("{} at offset {} of section {} lies outside its {} bytes", kMetaSymbol, sym.st_value, sym.st_shndx,
              data.size());
    }
    info.meta.threads = load<uint32_t>(data, sym.st_value);
    info.meta.shared_bytes = load<uint32_t>(data, sym.st_value + 4);
    info.meta.cluster_size = load<uint32_t>(data, sym.st_value + 8);
    info.has_meta = true;
  }
}

}  // namespace

CubinInfo read_cubin_info(const std::vector<char>& cubin, const std::string& origin) {
  const Elf elf(cubin, origin);
  const auto header = elf.read<Elf64_Ehdr>(0, "the ELF header");
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != ELFDATA2LSB || header.e_machine != EM_CUDA) {
    elf.bad("not a 64-bit little-endian CUDA ELF");
  }
  CubinInfo info;
  info.sm = static_cast<int>((header.e_flags >> 8) & 0xff);

  if (header.e_shnum > 0 && header.e_shentsize < sizeof(Elf64_Shdr)) {
    elf.bad("section headers of {} bytes, fewer than {}", header.e_shentsize, sizeof(Elf64_Shdr));
  }
  const uint64_t table_bytes = uint64_t{header.e_shnum} * header.e_shentsize;  // < 2^32
  if (!elf.within(header.e_shoff, table_bytes)) {
    elf.bad("section header table ({} x {} bytes at offset {}) lies outside the {}-byte file", header.e_shnum,
            header.e_shentsize, header.e_shoff, cubin.size());
  }
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (uint64_t i = 0; i < sections.size(); ++i) {
    sections[i] = elf.read<Elf64_Shdr>(header.e_shoff + i * header.e_shentsize, "a section header");
    elf.contents(sections, i);  // every section's bytes lie inside the file
  }
  std::optional<std::string_view> names;  // SHN_UNDEF: sections have no names
  if (header.e_shstrndx != SHN_UNDEF) {
    if (header.e_shstrndx >= sections.size() || sections[header.e_shstrndx].sh_type != SHT_STRTAB) {
      elf.bad("section-name table index {} is not one of the {} sections, or not a string table", header.e_shstrndx,
              sections.size());
    }
    names = elf.contents(sections, header.e_shstrndx);
  }
  for (uint64_t i = 0; i < sections.size(); ++i) {
    const Elf64_Shdr& s = sections[i];
    if (names && elf.string_at(*names, s.sh_name, "section", i) == ".nv.info") {
      info.registers = std::max(info.registers, max_register_count(elf, elf.contents(sections, i)));
    }
    if (s.sh_type == SHT_NOTE) read_arch_note(elf.contents(sections, i), info);
    if (s.sh_type == SHT_SYMTAB) read_meta_symbols(elf, sections, i, info);
  }
  return info;
}

}  // namespace chord
