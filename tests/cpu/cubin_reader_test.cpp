// The cubin reader on crafted ELFs: each damage (tests/crafted_elf.hpp) of a minimal cubin
// and of real NVRTC cubins of every kernel family is an Error naming the cubin, never a
// crash, an exception of another type or a silently wrong answer.
#include <catch2/catch.hpp>

#include <set>

#include "../crafted_elf.hpp"
#include "core/cubin_info.hpp"
#include "core/error.hpp"
#include "jit/families/w4a16.hpp"
#include "jit/kernel_source.hpp"
#include "precompile/kernel_sets.hpp"
#include "runtime/runtime.hpp"

namespace {

using chord::test::ElfDamage;

// One cubin of each kernel family the profiles hold, the GEMM in each of its engines.
std::vector<std::pair<std::string, std::vector<char>>> family_cubins() {
  const chord::Arch arch = chord::parse_arch("sm_90a");
  std::vector<chord::KernelDescriptor> all = chord::kernel_set_descriptors("dequant", arch);
  for (const auto& d : chord::kernel_set_descriptors("qwen3", arch)) all.push_back(d);
  std::set<std::string> seen;
  std::vector<std::pair<std::string, std::vector<char>>> out;
  for (const auto& d : all) {
    std::string kind = std::to_string(static_cast<int>(d.family));
    if (d.family == chord::KernelFamily::kW4A16Gemm) {
      kind += chord::w4a16_engine_name(chord::W4A16GemmConfig::from(d).engine);
    }
    if (!seen.insert(kind).second) continue;
    out.emplace_back(chord::generate_kernel_source(d).name, chord::JitRuntime::global().compile(d)->cubin);
  }
  REQUIRE(out.size() >= 9);  // 7 families, the GEMM's three engines
  return out;
}

void expect_refused(const std::vector<char>& bytes, const std::string& origin, const ElfDamage& damage) {
  INFO(origin << ": " << damage.name);
  try {
    chord::read_cubin_info(bytes, origin);
    FAIL("the damaged cubin was read");
  } catch (const chord::Error& e) {
    const std::string message = e.what();
    INFO(message);
    CHECK(e.status() == CHORD_ERROR_INTERNAL);
    CHECK(message.find(origin) != std::string::npos);
    CHECK(message.find(damage.expect) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("cubin reader: the minimal crafted cubin reads back what it declares", "[cubin]") {
  using F = chord::test::MinimalCubinFacts;
  const chord::CubinInfo info = chord::read_cubin_info(chord::test::minimal_cubin());
  CHECK(info.sm == static_cast<int>(F::sm));
  CHECK(info.arch == F::arch);
  REQUIRE(info.has_meta);
  CHECK(info.meta.threads == F::threads);
  CHECK(info.meta.shared_bytes == F::shared_bytes);
  CHECK(info.meta.cluster_size == F::cluster);
  CHECK(info.registers == static_cast<int>(F::registers));
}

TEST_CASE("cubin reader: every damage of the minimal cubin is an Error naming it", "[cubin]") {
  for (const ElfDamage& damage : chord::test::elf_damages()) {
    std::vector<char> bytes = chord::test::minimal_cubin();
    REQUIRE(damage.apply(bytes));
    expect_refused(bytes, "crafted.cubin", damage);
  }
}

TEST_CASE("cubin reader: every damage of a real cubin of each family is an Error naming it", "[cubin]") {
  for (const auto& [family, cubin] : family_cubins()) {
    REQUIRE(chord::read_cubin_info(cubin).has_meta);
    for (const ElfDamage& damage : chord::test::elf_damages()) {
      std::vector<char> bytes = cubin;
      INFO(family << ": " << damage.name);
      REQUIRE(damage.apply(bytes));
      expect_refused(bytes, family, damage);
    }
  }
}

TEST_CASE("cubin reader: every truncation and every byte flipped is read or refused, never a crash", "[cubin]") {
  const std::vector<char> cubin = chord::test::minimal_cubin();
  size_t refused = 0;
  auto read = [&refused](const std::vector<char>& bytes) {
    try {
      chord::read_cubin_info(bytes, "mutant");
    } catch (const chord::Error& e) {
      CHECK(std::string(e.what()).find("mutant") != std::string::npos);
      ++refused;
    }
  };
  for (size_t size = 0; size < cubin.size(); ++size) read(std::vector<char>(cubin.begin(), cubin.begin() + size));
  for (size_t at = 0; at < cubin.size(); ++at) {
    for (char mask : {'\x01', '\x80', '\xff'}) {
      std::vector<char> bytes = cubin;
      bytes[at] ^= mask;
      read(bytes);
    }
  }
  CHECK(refused >= cubin.size());  // every truncation at least
}
