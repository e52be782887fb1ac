// Crafted CUDA ELFs for the cubin reader (core/cubin_info.cpp): a minimal well-formed cubin,
// and damages that each break one field the reader must check. A damage applies to any
// well-formed cubin, the minimal one or a real NVRTC output, so the unit tests
// (tests/cpu/cubin_reader_test.cpp) and the fuzz corpus (fuzz/write_seeds.cpp) share them.
#pragma once
#include <elf.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace chord::test {

// What minimal_cubin() declares about itself.
struct MinimalCubinFacts {
  static constexpr uint32_t threads = 128, shared_bytes = 4096, cluster = 2, registers = 40, sm = 90;
  static constexpr const char* arch = "sm_90a";
};

// Field access of an ELF held in a byte vector (no checks: the input is well-formed).
class ElfEditor {
 public:
  explicit ElfEditor(std::vector<char>& bytes) : b_(bytes) {}

  template <typename T>
  T get(uint64_t offset) const {
    T value;
    std::memcpy(&value, b_.data() + offset, sizeof(T));
    return value;
  }
  template <typename T>
  void set(uint64_t offset, const T& value) {
    std::memcpy(b_.data() + offset, &value, sizeof(T));
  }

  Elf64_Ehdr header() const { return get<Elf64_Ehdr>(0); }
  void set_header(const Elf64_Ehdr& h) { set(0, h); }
  int sections() const { return header().e_shnum; }
  uint64_t section_offset(int i) const { return header().e_shoff + uint64_t(i) * header().e_shentsize; }
  Elf64_Shdr section(int i) const { return get<Elf64_Shdr>(section_offset(i)); }
  void set_section(int i, const Elf64_Shdr& s) { set(section_offset(i), s); }

  std::string section_name(int i) const {
    const Elf64_Shdr names = section(header().e_shstrndx);
    return std::string(b_.data() + names.sh_offset + section(i).sh_name);
  }
  int find(const std::string& name) const {
    for (int i = 0; i < sections(); ++i) {
      if (section_name(i) == name) return i;
    }
    return -1;
  }
  int find_type(uint32_t type) const {
    for (int i = 0; i < sections(); ++i) {
      if (section(i).sh_type == type) return i;
    }
    return -1;
  }
  // File offset of the chord_kernel_meta symbol's Elf64_Sym (0 if there is none).
  uint64_t meta_symbol_offset() const {
    const int symtab = find_type(SHT_SYMTAB);
    if (symtab < 0) return 0;
    const Elf64_Shdr s = section(symtab);
    const Elf64_Shdr strings = section(static_cast<int>(s.sh_link));
    for (uint64_t at = 0; at + sizeof(Elf64_Sym) <= s.sh_size; at += s.sh_entsize) {
      const auto sym = get<Elf64_Sym>(s.sh_offset + at);
      if (std::string(b_.data() + strings.sh_offset + sym.st_name) == "chord_kernel_meta") return s.sh_offset + at;
    }
    return 0;
  }

 private:
  std::vector<char>& b_;
};

// Sections: null, .shstrtab, .strtab, .symtab, .nv.info, .nv.constant3 (the metadata),
// .note.nv.tkinfo (the ptxas command line), then the section header table.
inline std::vector<char> minimal_cubin() {
  using F = MinimalCubinFacts;
  std::vector<char> out(sizeof(Elf64_Ehdr), '\0');
  std::string shstrtab(1, '\0');
  std::vector<Elf64_Shdr> headers(1, Elf64_Shdr{});
  auto add = [&](const std::string& name, uint32_t type, const std::string& bytes, uint32_t link, uint64_t entsize) {
    while (out.size() % 8 != 0) out.push_back('\0');
    Elf64_Shdr s{};
    s.sh_name = static_cast<uint32_t>(shstrtab.size());
    shstrtab += name + '\0';
    s.sh_type = type;
    s.sh_offset = out.size();
    s.sh_size = bytes.size();
    s.sh_link = link;
    s.sh_entsize = entsize;
    out.insert(out.end(), bytes.begin(), bytes.end());
    headers.push_back(s);
  };
  auto raw = [](const auto& value) { return std::string(reinterpret_cast<const char*>(&value), sizeof value); };

  const std::string strtab = std::string("\0chord_kernel_meta\0", 19);
  Elf64_Sym meta{};
  meta.st_name = 1;
  meta.st_info = ELF64_ST_INFO(STB_LOCAL, STT_OBJECT);
  meta.st_shndx = 5;
  meta.st_size = 16;
  const uint32_t meta_words[4] = {F::threads, F::shared_bytes, F::cluster, 0};
  const uint32_t reg_record[3] = {0x00082f04u, 1u, F::registers};  // {sized, 0x2f, 8}, symbol 1, registers
  const uint32_t other_records[2] = {0x00000a01u, 0x00ff1b03u};     // a no-value and a u16-value record
  const std::string note = std::string("\0\0\0\0nvidia\0", 11) + "-arch " + F::arch + std::string(" -m 64\0\0", 8);

  headers.reserve(8);
  const std::string shstrtab_name = ".shstrtab";
  headers.push_back(Elf64_Shdr{});  // .shstrtab, filled in last (its bytes are the names)
  shstrtab += shstrtab_name + '\0';
  headers[1].sh_name = 1;
  add(".strtab", SHT_STRTAB, strtab, 0, 0);
  add(".symtab", SHT_SYMTAB, raw(Elf64_Sym{}) + raw(meta), 2, sizeof(Elf64_Sym));
  add(".nv.info", SHT_LOPROC, raw(reg_record) + raw(other_records), 3, 0);
  add(".nv.constant3", SHT_PROGBITS, raw(meta_words), 0, 0);
  add(".note.nv.tkinfo", SHT_NOTE, note, 0, 0);
  headers[1].sh_type = SHT_STRTAB;
  headers[1].sh_offset = out.size();
  headers[1].sh_size = shstrtab.size();
  out.insert(out.end(), shstrtab.begin(), shstrtab.end());
  while (out.size() % 8 != 0) out.push_back('\0');

  Elf64_Ehdr h{};
  std::memcpy(h.e_ident, ELFMAG, SELFMAG);
  h.e_ident[EI_CLASS] = ELFCLASS64;
  h.e_ident[EI_DATA] = ELFDATA2LSB;
  h.e_ident[EI_VERSION] = EV_CURRENT;
  h.e_type = ET_EXEC;
  h.e_machine = EM_CUDA;
  h.e_version = EV_CURRENT;
  h.e_flags = F::sm << 8;
  h.e_ehsize = sizeof(Elf64_Ehdr);
  h.e_shoff = out.size();
  h.e_shentsize = sizeof(Elf64_Shdr);
  h.e_shnum = static_cast<uint16_t>(headers.size());
  h.e_shstrndx = 1;
  for (const auto& s : headers) {
    const std::string bytes = raw(s);
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  std::memcpy(out.data(), &h, sizeof h);
  return out;
}

// One way to break a cubin. apply() returns false where the cubin lacks what it breaks.
struct ElfDamage {
  const char* name;
  const char* expect;  // a phrase of the reader's error
  std::function<bool(std::vector<char>&)> apply;
};

inline std::vector<ElfDamage> elf_damages() {
  constexpr uint64_t kWrap = ~uint64_t{0};
  auto on_section = [](const char* section, std::function<void(Elf64_Shdr&)> change) {
    return [section, change](std::vector<char>& b) {
      ElfEditor e(b);
      const int i = e.find(section);
      if (i < 0) return false;
      Elf64_Shdr s = e.section(i);
      change(s);
      e.set_section(i, s);
      return true;
    };
  };
  auto on_header = [](std::function<void(Elf64_Ehdr&)> change) {
    return [change](std::vector<char>& b) {
      ElfEditor e(b);
      Elf64_Ehdr h = e.header();
      change(h);
      e.set_header(h);
      return true;
    };
  };
  auto on_meta = [](std::function<void(Elf64_Sym&)> change) {
    return [change](std::vector<char>& b) {
      ElfEditor e(b);
      const uint64_t at = e.meta_symbol_offset();
      if (at == 0) return false;
      auto sym = e.get<Elf64_Sym>(at);
      change(sym);
      e.set(at, sym);
      return true;
    };
  };
  return {
      {"ELF header cut short", "the ELF header", [](std::vector<char>& b) { b.resize(40); return true; }},
      {"not a CUDA machine", "CUDA ELF", on_header([](Elf64_Ehdr& h) { h.e_machine = EM_X86_64; })},
      {"section header table past the end", "section header table",
       on_header([](Elf64_Ehdr& h) { h.e_shoff = h.e_shoff + 4096 * 1024; })},
      {"section header table offset wraps", "section header table",
       on_header([kWrap](Elf64_Ehdr& h) { h.e_shoff = kWrap - 100; })},
      {"65535 section headers", "section header table", on_header([](Elf64_Ehdr& h) { h.e_shnum = 0xffff; })},
      {"section headers of 8 bytes", "section headers of 8", on_header([](Elf64_Ehdr& h) { h.e_shentsize = 8; })},
      {"section-name table index out of range", "section-name table index",
       on_header([](Elf64_Ehdr& h) { h.e_shstrndx = static_cast<uint16_t>(h.e_shnum + 3); })},
      {"section-name table index names a symbol table", "section-name table index",
       [](std::vector<char>& b) {
         ElfEditor e(b);
         const int symtab = e.find_type(SHT_SYMTAB);
         Elf64_Ehdr h = e.header();
         h.e_shstrndx = static_cast<uint16_t>(symtab);
         e.set_header(h);
         return symtab >= 0;
       }},
      {"section name offset past its table", "name of section",
       on_section(".symtab", [](Elf64_Shdr& s) { s.sh_name = 0x7fffff00; })},
      {"section-name table cut inside a name", "name of section",
       [](std::vector<char>& b) {
         ElfEditor e(b);
         const int names = e.header().e_shstrndx, symtab = e.find_type(SHT_SYMTAB);
         if (symtab < 0) return false;
         Elf64_Shdr s = e.section(names);
         s.sh_size = e.section(symtab).sh_name + 3;  // ".sy"
         e.set_section(names, s);
         return true;
       }},
      {"note offset + size wraps past zero", "section",
       on_section(".note.nv.tkinfo", [kWrap](Elf64_Shdr& s) { s.sh_offset = kWrap - 15, s.sh_size = 64; })},
      {"note of 2^62 bytes whose end wraps", "section",
       on_section(".note.nv.tkinfo", [](Elf64_Shdr& s) {
         s.sh_offset = ~uint64_t{0} - (uint64_t{1} << 62) + 1;
         s.sh_size = (uint64_t{1} << 62) + 16;
       })},
      {".nv.info past the end", "section", on_section(".nv.info", [](Elf64_Shdr& s) { s.sh_size += 1 << 30; })},
      {".nv.info cut inside its last record", ".nv.info",
       on_section(".nv.info", [](Elf64_Shdr& s) { s.sh_size -= 2; })},
      {"string table at a wild offset", "section",
       on_section(".strtab", [](Elf64_Shdr& s) { s.sh_offset = 1ull << 40; })},
      {"symbol table at a wild offset", "section",
       on_section(".symtab", [](Elf64_Shdr& s) { s.sh_offset = 1ull << 63; })},
      {"symbol table linked to a missing section", "string table",
       on_section(".symtab", [](Elf64_Shdr& s) { s.sh_link = 0xfffff; })},
      {"symbol table linked to itself", "string table",
       [](std::vector<char>& b) {
         ElfEditor e(b);
         const int symtab = e.find_type(SHT_SYMTAB);
         if (symtab < 0) return false;
         Elf64_Shdr s = e.section(symtab);
         s.sh_link = static_cast<uint32_t>(symtab);
         e.set_section(symtab, s);
         return true;
       }},
      {"symbol entries of 0 bytes", "entries of 0", on_section(".symtab", [](Elf64_Shdr& s) { s.sh_entsize = 0; })},
      {"string table cut inside the metadata's name", "name of symbol",
       [](std::vector<char>& b) {
         ElfEditor e(b);
         const uint64_t at = e.meta_symbol_offset();
         const int symtab = e.find_type(SHT_SYMTAB);
         if (at == 0) return false;
         const int strtab = static_cast<int>(e.section(symtab).sh_link);
         Elf64_Shdr s = e.section(strtab);
         s.sh_size = e.get<Elf64_Sym>(at).st_name + 5;  // "chord"
         e.set_section(strtab, s);
         return true;
       }},
      {"symbol name offset past the string table", "name of symbol",
       on_meta([](Elf64_Sym& s) { s.st_name = 0xfffffff0u; })},
      {"metadata offset wraps its section", "chord_kernel_meta at offset",
       on_meta([kWrap](Elf64_Sym& s) { s.st_value = kWrap - 3; })},
      {"metadata past its section", "chord_kernel_meta at offset", on_meta([](Elf64_Sym& s) { s.st_value = 1 << 20; })},
      {"metadata in a missing section", "does not exist", on_meta([](Elf64_Sym& s) { s.st_shndx = 0xfff0; })},
      {"metadata in the null section", "does not exist", on_meta([](Elf64_Sym& s) { s.st_shndx = SHN_UNDEF; })},
      {"metadata of 4 bytes", "fewer than 12", on_meta([](Elf64_Sym& s) { s.st_size = 4; })},
  };
}

}  // namespace chord::test
