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
  CHECK(e.w4a16_engine == chord::W4A16EngineKnob{});
  {
    ScopedEnv unset("CHORD_W4A16_GROUP_SUMS", std::nullopt);
    CHECK_FALSE(chord::read_environment().w4a16_group_sums.has_value());
  }
}

TEST_CASE("env: valid values are parsed", "[env]") {
  ScopedEnv a("CHORD_CACHE_DIR", std::string("/var/tmp/c")), b("CHORD_JIT_DEBUG", std::string("1")),
      c("CHORD_W4A16_BM", std::string("64")), d("CHORD_W4A16_STAGES", std::string("4")),
      e("CHORD_SM90_DECODE", std::string("0")), f("CHORD_W4A16_SPLIT_K", std::string("2")),
      g("CHORD_W4A16_WARPS_N", std::string("8")), h("CHORD_W4A16_GROUP_SUMS", std::string("1")),
      i("CHORD_W4A16_WARPS_M", std::string("1"));
  chord::Environment env = chord::read_environment();
  CHECK(env.w4a16_group_sums == 1);
  CHECK(env.w4a16_warps_n == 8);
  CHECK(env.w4a16_warps_m == 1);
  CHECK(env.w4a16_overridden());
  CHECK(env.w4a16_split_k == 2);
  CHECK(env.cache_dir == "/var/tmp/c");
  CHECK(env.jit_debug);
  CHECK(env.w4a16_bm == 64);
  CHECK(env.w4a16_stages == 4);
  CHECK(env.w4a16_engine.candidates == chord::W4A16EngineKnob::kPreferWgmma);
}

TEST_CASE("env: invalid flag values are rejected naming the variable", "[env]") {
  expect_rejected("CHORD_JIT_DEBUG", "yes");
  expect_rejected("CHORD_JIT_DUMP_SOURCE", "2");
  expect_rejected("CHORD_SM90_DECODE", "");
  expect_rejected("CHORD_W4A16_PORTABLE", "true");
  expect_rejected("CHORD_VALIDATE_ROUTING", "on");
}

TEST_CASE("env: CHORD_W4A16_N_RUN takes 1, 2, 4 or 8 and counts as an override", "[env]") {
  {
    ScopedEnv unset("CHORD_W4A16_N_RUN", std::nullopt);
    CHECK_FALSE(chord::read_environment().w4a16_n_run.has_value());
  }
  for (int v : {1, 2, 4, 8}) {
    ScopedEnv set("CHORD_W4A16_N_RUN", std::to_string(v));
    const chord::Environment e = chord::read_environment();
    CHECK(e.w4a16_n_run == v);
    CHECK(e.w4a16_overridden());  // turns the decode tile search off
  }
  for (const char* bad : {"0", "3", "16", " 2", "2 ", "+4", "", "four"}) expect_rejected("CHORD_W4A16_N_RUN", bad);
}

TEST_CASE("env: invalid integer values are rejected naming the variable", "[env]") {
  expect_rejected("CHORD_W4A16_BM", "abc");
  expect_rejected("CHORD_W4A16_BN", "-64");
  expect_rejected("CHORD_W4A16_BK", "0");
  expect_rejected("CHORD_W4A16_STAGES", "3x");
  expect_rejected("CHORD_W4A16_SPLIT_K", "0");
  expect_rejected("CHORD_W4A16_WARPS_N", "-4");
  expect_rejected("CHORD_W4A16_WARPS_M", "0");
  expect_rejected("CHORD_W4A16_BM", "99999999999");
}

TEST_CASE("env: CHORD_W4A16_GROUP_SUMS takes 0 or 1", "[env]") {
  for (const char* bad : {"2", "3", "9", "-1", "01", " 1", "1 ", "+1", "", "one"}) {
    expect_rejected("CHORD_W4A16_GROUP_SUMS", bad);
  }
  for (int gs = 0; gs < 2; ++gs) {
    ScopedEnv ok("CHORD_W4A16_GROUP_SUMS", std::to_string(gs));
    CHECK(chord::read_environment().w4a16_group_sums == gs);
  }
}

TEST_CASE("env: engine names are parsed, others rejected", "[env]") {
  expect_rejected("CHORD_W4A16_ENGINE", "cutlass");
  expect_rejected("CHORD_W4A16_ENGINE", "WGMMA");
  for (auto engine : {chord::W4A16Engine::kMmaSync, chord::W4A16Engine::kWgmma, chord::W4A16Engine::kWgmmaWs}) {
    ScopedEnv set("CHORD_W4A16_ENGINE", std::string(chord::w4a16_engine_name(engine)));
    CHECK(chord::read_environment().w4a16_engine.forced == engine);
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

TEST_CASE("env: read-only cache folders are absolute paths separated by ':', and empty means none", "[env]") {
  for (const char* bad : {"relative", "/a::/b", "/a:", ":/a", "/a: /b", "/a :/b", ":"}) {
    expect_rejected("CHORD_CACHE_READONLY_DIRS", bad);
  }
  {
    ScopedEnv none("CHORD_CACHE_READONLY_DIRS", std::string(""));  // how the wheel's layer is turned off
    CHECK(chord::read_environment().cache_readonly_dirs.empty());
  }
  ScopedEnv ok("CHORD_CACHE_READONLY_DIRS", std::string("/opt/chord/kernels:/usr/share/chord"));
  CHECK(chord::read_environment().cache_readonly_dirs ==
        std::vector<std::string>{"/opt/chord/kernels", "/usr/share/chord"});
}

TEST_CASE("env: a CHORD_* variable chord does not read is warned about, once", "[env]") {
  ScopedEnv typo("CHORD_W4A16_CM", std::string("64")), tool("CHORD_FUZZ_SECONDS", std::string("5")),
      bench("CHORD_BENCH_FLUSH", std::string("write")), passes("CHORD_BENCH_FLUSH_PASSES", std::string("1"));
  chord::test::CaptureStderr err;
  chord::read_environment();
  chord::read_environment();
  const std::string text = err.text();
  INFO(text);
  const std::string warning = "environment variable CHORD_W4A16_CM is not one chord reads";
  CHECK(text.find(warning) != std::string::npos);
  CHECK(text.find(warning) == text.rfind(warning));
  CHECK(text.find("CHORD_FUZZ_SECONDS") == std::string::npos);  // read by chord's CI scripts: known
  CHECK(text.find("CHORD_BENCH_FLUSH") == std::string::npos);   // both read by the bench: known
}

namespace {
chord::W4A16EngineKnob knob_named(const char* name) {
  const auto knob = chord::parse_w4a16_engine_knob(name);
  REQUIRE(knob.has_value());
  return *knob;
}
}  // namespace

TEST_CASE("env: CHORD_W4A16_ENGINE takes every value by name", "[env]") {
  for (const char* name : {"auto", "portable", "prefer_wgmma", "mma_sync", "wgmma", "wgmma_ws"}) {
    ScopedEnv set("CHORD_W4A16_ENGINE", std::string(name));
    const chord::W4A16EngineKnob knob = chord::read_environment().w4a16_engine;
    CHECK(std::string(chord::w4a16_engine_knob_name(knob)) == name);
  }
  CHECK(knob_named("auto") == chord::W4A16EngineKnob{});
  CHECK(knob_named("portable").candidates == chord::W4A16EngineKnob::kPortable);
  CHECK(knob_named("prefer_wgmma").candidates == chord::W4A16EngineKnob::kPreferWgmma);
  CHECK(knob_named("wgmma").forced == chord::W4A16Engine::kWgmma);
  CHECK(knob_named("wgmma").candidates == chord::W4A16EngineKnob::kAll);
  expect_rejected("CHORD_W4A16_ENGINE", "");
  expect_rejected("CHORD_W4A16_ENGINE", "Portable");
  expect_rejected("CHORD_W4A16_ENGINE", "prefer-wgmma");
}

TEST_CASE("env: the deprecated engine variables read as their CHORD_W4A16_ENGINE value", "[env]") {
  struct Case {
    std::optional<std::string> portable, decode;
    const char* engine;  // the equivalent CHORD_W4A16_ENGINE value
  };
  const Case cases[] = {
      {std::string("1"), std::nullopt, "portable"},
      {std::string("0"), std::nullopt, "auto"},
      {std::nullopt, std::string("1"), "portable"},
      {std::nullopt, std::string("0"), "prefer_wgmma"},
      {std::string("0"), std::string("1"), "portable"},
      {std::string("0"), std::string("0"), "prefer_wgmma"},
      {std::string("1"), std::string("1"), "portable"},
      // CHORD_W4A16_PORTABLE=1 rejects the WGMMA candidates CHORD_SM90_DECODE=0 would rank first.
      {std::string("1"), std::string("0"), "portable"},
  };
  ScopedEnv no_engine("CHORD_W4A16_ENGINE", std::nullopt);
  for (const auto& c : cases) {
    INFO("CHORD_W4A16_PORTABLE=" << c.portable.value_or("(unset)") << " CHORD_SM90_DECODE="
                                 << c.decode.value_or("(unset)") << " -> " << c.engine);
    ScopedEnv p("CHORD_W4A16_PORTABLE", c.portable), d("CHORD_SM90_DECODE", c.decode);
    CHECK(chord::read_environment().w4a16_engine == knob_named(c.engine));
    // The same value named alongside is no conflict.
    ScopedEnv e("CHORD_W4A16_ENGINE", std::string(c.engine));
    CHECK(chord::read_environment().w4a16_engine == knob_named(c.engine));
  }
}

TEST_CASE("env: a deprecated engine variable next to a forced engine chooses where the engine starts from",
          "[env]") {
  ScopedEnv p("CHORD_W4A16_PORTABLE", std::string("1")), e("CHORD_W4A16_ENGINE", std::string("wgmma"));
  const chord::W4A16EngineKnob knob = chord::read_environment().w4a16_engine;
  CHECK(knob.candidates == chord::W4A16EngineKnob::kPortable);
  CHECK(knob.forced == chord::W4A16Engine::kWgmma);
  ScopedEnv no_p("CHORD_W4A16_PORTABLE", std::nullopt), d("CHORD_SM90_DECODE", std::string("0")),
      m("CHORD_W4A16_ENGINE", std::string("mma_sync"));
  const chord::W4A16EngineKnob prefer = chord::read_environment().w4a16_engine;
  CHECK(prefer.candidates == chord::W4A16EngineKnob::kPreferWgmma);
  CHECK(prefer.forced == chord::W4A16Engine::kMmaSync);
}

TEST_CASE("env: a deprecated engine variable that disagrees with CHORD_W4A16_ENGINE is an error naming both",
          "[env]") {
  const std::pair<const char*, const char*> deprecated[] = {
      {"CHORD_W4A16_PORTABLE", "1"}, {"CHORD_SM90_DECODE", "1"}, {"CHORD_SM90_DECODE", "0"}};
  for (const auto& [name, value] : deprecated) {
    ScopedEnv old(name, std::string(value));
    ScopedEnv other(std::string(name) == "CHORD_SM90_DECODE" ? "CHORD_W4A16_PORTABLE" : "CHORD_SM90_DECODE",
                    std::nullopt);
    for (const char* engine : {"auto", "portable", "prefer_wgmma"}) {
      ScopedEnv set("CHORD_W4A16_ENGINE", std::string(engine));
      const bool agrees = std::string(engine) == (std::string(value) == "1" ? "portable" : "prefer_wgmma");
      INFO(name << "=" << value << " CHORD_W4A16_ENGINE=" << engine);
      try {
        chord::read_environment();
        CHECK(agrees);
      } catch (const chord::Error& e) {
        CHECK_FALSE(agrees);
        CHECK(e.status() == CHORD_ERROR_ENVIRONMENT);
        const std::string what = e.what();
        CHECK(what.find(std::string(name) + "=" + value) != std::string::npos);
        CHECK(what.find(std::string("CHORD_W4A16_ENGINE=") + engine) != std::string::npos);
      }
    }
  }
}
