#include <catch2/catch.hpp>

#include <vector>

#include "core/env.hpp"
#include "core/error.hpp"
#include "test_support.hpp"

using chord::test::ScopedEnv;

namespace {
// The error must be an environment error that names the variable.
void expect_rejected(const char* name, const char* value) {
  ScopedEnv guard(name, std::string(value));
  try {
    chord::read_environment();
    FAIL("accepted " << name << "=" << value);
  } catch (const chord::Error& e) {
    CHECK(e.status() == CHORD_ERROR_ENVIRONMENT);
    CHECK(std::string(e.what()).find(name) != std::string::npos);
  }
}
}  // namespace

TEST_CASE("env: defaults when nothing is set", "[env]") {
  ScopedEnv a("CHORD_CACHE_DIR", std::nullopt), b("CHORD_JIT_DEBUG", std::nullopt),
      c("CHORD_W4A16_BM", std::nullopt), d("HOME", std::string("/home/someone")), x("XDG_CACHE_HOME", std::nullopt);
  chord::Environment e = chord::read_environment();
  CHECK(e.cache_dir == "/home/someone/.cache/chord");
  CHECK_FALSE(e.jit_debug);
  CHECK_FALSE(e.w4a16_bm.has_value());
  CHECK_FALSE(e.sm90_decode.has_value());
}

TEST_CASE("env: valid values are parsed", "[env]") {
  ScopedEnv a("CHORD_CACHE_DIR", std::string("/var/tmp/c")), b("CHORD_JIT_DEBUG", std::string("1")),
      c("CHORD_W4A16_BM", std::string("64")), d("CHORD_W4A16_STAGES", std::string("4")),
      e("CHORD_SM90_DECODE", std::string("0")), f("CHORD_W4A16_SPLIT_K", std::string("2")),
      g("CHORD_W4A16_WARPS_N", std::string("8"));
  chord::Environment env = chord::read_environment();
  CHECK(env.w4a16_warps_n == 8);
  CHECK(env.w4a16_split_k == 2);
  CHECK(env.cache_dir == "/var/tmp/c");
  CHECK(env.jit_debug);
  CHECK(env.w4a16_bm == 64);
  CHECK(env.w4a16_stages == 4);
  CHECK(env.sm90_decode == false);
}

TEST_CASE("env: invalid flag values are rejected naming the variable", "[env]") {
  expect_rejected("CHORD_JIT_DEBUG", "yes");
  expect_rejected("CHORD_JIT_DUMP_SOURCE", "2");
  expect_rejected("CHORD_SM90_DECODE", "");
  expect_rejected("CHORD_W4A16_PORTABLE", "true");
  expect_rejected("CHORD_VALIDATE_ROUTING", "on");
}

TEST_CASE("env: invalid integer values are rejected naming the variable", "[env]") {
  expect_rejected("CHORD_W4A16_BM", "abc");
  expect_rejected("CHORD_W4A16_BN", "-64");
  expect_rejected("CHORD_W4A16_BK", "0");
  expect_rejected("CHORD_W4A16_STAGES", "3x");
  expect_rejected("CHORD_W4A16_SPLIT_K", "0");
  expect_rejected("CHORD_W4A16_WARPS_N", "-4");
  expect_rejected("CHORD_W4A16_BM", "99999999999");
}

TEST_CASE("env: engine names are parsed, others rejected", "[env]") {
  expect_rejected("CHORD_W4A16_ENGINE", "cutlass");
  expect_rejected("CHORD_W4A16_ENGINE", "WGMMA");
  for (auto engine : {chord::W4A16Engine::kMmaSync, chord::W4A16Engine::kWgmma, chord::W4A16Engine::kWgmmaWs}) {
    ScopedEnv set("CHORD_W4A16_ENGINE", std::string(chord::w4a16_engine_name(engine)));
    CHECK(chord::read_environment().w4a16_engine == engine);
  }
}

TEST_CASE("env: invalid profile names are rejected", "[env]") {
  expect_rejected("CHORD_W4A16_PROFILE", "");
  expect_rejected("CHORD_W4A16_PROFILE", "EP8 ");
  ScopedEnv ok("CHORD_W4A16_PROFILE", std::string("tp8"));
  CHECK(chord::read_environment().w4a16_table == std::string("tp8"));
}

TEST_CASE("env: invalid cache dir values are rejected", "[env]") {
  expect_rejected("CHORD_CACHE_DIR", "");
  expect_rejected("CHORD_CACHE_DIR", "relative/path");
  expect_rejected("CHORD_CACHE_DIR", " /var/cache/chord");
  expect_rejected("CHORD_CACHE_DIR", "/var/cache/chord ");
}

TEST_CASE("env: the default cache is $XDG_CACHE_HOME/chord, then ~/.cache/chord, never a shared /tmp path",
          "[env]") {
  ScopedEnv a("CHORD_CACHE_DIR", std::nullopt), h("HOME", std::string("/home/someone"));
  {
    ScopedEnv x("XDG_CACHE_HOME", std::string("/fast/cache"));
    CHECK(chord::read_environment().cache_dir == "/fast/cache/chord");
  }
  {
    ScopedEnv x("XDG_CACHE_HOME", std::string("relative"));  // the XDG spec says to ignore it
    CHECK(chord::read_environment().cache_dir == "/home/someone/.cache/chord");
  }
  ScopedEnv x("XDG_CACHE_HOME", std::nullopt), no_home("HOME", std::nullopt);
  // Without HOME: the user database's home, else no disk cache; never a predictable /tmp folder
  // that another user could create first.
  const std::string dir = chord::read_environment().cache_dir;
  INFO(dir);
  CHECK(dir.find("/tmp") != 0);
  CHECK((dir.empty() || chord::test::ends_with(dir, "/.cache/chord")));
}

TEST_CASE("env: integers take digits only, with no sign and no space on either side", "[env]") {
  for (const char* bad : {" 64", "64 ", "+64", "\t64", "64\n", "6 4", "0x40", "-0"}) {
    expect_rejected("CHORD_W4A16_BM", bad);
  }
  ScopedEnv ok("CHORD_W4A16_BM", std::string("064"));
  CHECK(chord::read_environment().w4a16_bm == 64);
}

TEST_CASE("env: read-only cache folders are absolute paths separated by ':'", "[env]") {
  for (const char* bad : {"", "relative", "/a::/b", "/a:", ":/a", "/a: /b", "/a :/b"}) {
    expect_rejected("CHORD_CACHE_READONLY_DIRS", bad);
  }
  ScopedEnv ok("CHORD_CACHE_READONLY_DIRS", std::string("/opt/chord/kernels:/usr/share/chord"));
  CHECK(chord::read_environment().cache_readonly_dirs ==
        std::vector<std::string>{"/opt/chord/kernels", "/usr/share/chord"});
}

TEST_CASE("env: a CHORD_* variable chord does not read is warned about, once", "[env]") {
  ScopedEnv typo("CHORD_W4A16_CM", std::string("64")), tool("CHORD_FUZZ_SECONDS", std::string("5"));
  chord::test::CaptureStderr err;
  chord::read_environment();
  chord::read_environment();
  const std::string text = err.text();
  INFO(text);
  const std::string warning = "environment variable CHORD_W4A16_CM is not one chord reads";
  CHECK(text.find(warning) != std::string::npos);
  CHECK(text.find(warning) == text.rfind(warning));
  CHECK(text.find("CHORD_FUZZ_SECONDS") == std::string::npos);  // read by chord's CI scripts: known
}
