// The activation family: caller expressions compile into the kernel for every arch, the
// expression check refuses text that could reach outside the kernel's function, and the C
// API refuses bad shapes before it needs a GPU.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "chord/chord.h"
#include "core/arch.hpp"
#include "core/error.hpp"
#include "jit/families/activation.hpp"
#include "runtime/runtime.hpp"

namespace {

// The shapes of expression a serving engine sends: plain calls, immediately-invoked
// lambdas of one or two arguments, clamps with float literals.
const std::vector<std::pair<int, std::string>> kExpressions = {
    {CHORD_ACTIVATION_BINARY_SPLIT, "(a / (1.f + expf(-a))) * b"},
    {CHORD_ACTIVATION_BINARY_SPLIT, "(0.5f * a * (1.f + erff(a * 0.70710678f))) * b"},
    {CHORD_ACTIVATION_BINARY_SPLIT,
     "([](float x) {\n  const float t = tanhf(0.7978846f * (x + 0.044715f * x * x * x));\n"
     "  return 0.5f * x * (1.f + t);\n}(a)) * b"},
    {CHORD_ACTIVATION_BINARY_SPLIT, "fmaxf(a, 0.f) * fmaxf(a, 0.f) * b"},
    {CHORD_ACTIVATION_BINARY_INTERLEAVED,
     "[](float g, float u) {\n  g = fminf(g, (7.0f));\n  u = fmaxf(fminf(u, (7.0f)), -(7.0f));\n"
     "  return g / (1.f + expf(-(1.702f) * g)) * (u + (1.0f));\n}(a, b)"},
    {CHORD_ACTIVATION_UNARY, "a / (1.f + expf(-a))"},
};

chord::CompiledKernel compile(const std::string& arch, int kind, int dtype, const std::string& expression) {
  chord::ActivationConfig config;
  config.kind = kind;
  config.dtype = dtype;
  config.expression_hash = chord::register_activation_expression(expression);
  return *chord::JitRuntime::global().compile(config.descriptor(chord::parse_arch(arch)));
}

chord_status_t status_of_register(const std::string& text) {
  try {
    chord::register_activation_expression(text);
    return CHORD_SUCCESS;
  } catch (const chord::Error& e) {
    return e.status();
  }
}

}  // namespace

TEST_CASE("activation: every expression shape compiles for sm_90a in bf16 and fp16", "[activation][compile]") {
  for (const auto& [kind, expression] : kExpressions) {
    for (int dtype : {CHORD_DTYPE_BF16, CHORD_DTYPE_FP16}) {
      INFO(expression << " kind " << kind << " dtype " << dtype);
      auto kernel = compile("sm_90a", kind, dtype, expression);
      CHECK(kernel.info.arch == "sm_90a");
      REQUIRE(kernel.info.has_meta);
      CHECK(kernel.info.meta.threads == 128);
    }
  }
}

TEST_CASE("activation: SiLU-and-mul compiles for sm_80 and sm_100a", "[activation][compile]") {
  for (const char* arch : {"sm_80", "sm_100a"}) {
    auto kernel = compile(arch, CHORD_ACTIVATION_BINARY_SPLIT, CHORD_DTYPE_BF16, kExpressions[0].second);
    CHECK(kernel.info.arch == arch);
  }
}

TEST_CASE("activation: the expression's text is part of the kernel identity", "[activation]") {
  const uint64_t silu = chord::register_activation_expression("a / (1.f + expf(-a)) * b");
  const uint64_t relu = chord::register_activation_expression("fmaxf(a, 0.f) * b");
  CHECK(silu != relu);
  CHECK(chord::register_activation_expression("a / (1.f + expf(-a)) * b") == silu);
  chord::ActivationConfig c;
  c.expression_hash = silu;
  const auto silu_source = c.source().text;
  c.expression_hash = relu;
  CHECK(c.source().text != silu_source);
  CHECK(chord::ActivationConfig::from(c.descriptor(chord::parse_arch("sm_90a"))).expression_hash == relu);
}

TEST_CASE("activation: expressions that could leave the kernel's function are refused", "[activation]") {
  const std::vector<std::string> bad = {
      "",
      "a); } extern \"C\" __global__ void evil() { (a",
      "a); } __global__ void evil() { (a",
      "#include </etc/passwd>\na",
      "a\n%:include </etc/passwd>\n",
      "a\n%:  include </etc/passwd>\n",
      "a %> void evil() <% return a",
      "a // );",
      "a /* ",
      "a + '\\n'",
      "a \\\n + b",
      "(a",
      "a)",
      "[](float x) { return x; (a)",
      std::string("a\x01"),
      std::string(chord::kMaxActivationExpression + 1, 'a'),
  };
  for (const auto& text : bad) {
    INFO("expression: " << text.substr(0, 60));
    CHECK(status_of_register(text) == CHORD_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("activation: an expression that does not compile is a compile error", "[activation][compile]") {
  try {
    compile("sm_90a", CHORD_ACTIVATION_UNARY, CHORD_DTYPE_BF16, "no_such_function(a)");
    FAIL("compiled an undefined function");
  } catch (const chord::Error& e) {
    CHECK(e.status() == CHORD_ERROR_COMPILE);
  }
}

TEST_CASE("activation: the C API refuses bad arguments before it needs a GPU", "[activation]") {
  char in[64] = {}, out[64] = {};
  const char* silu = "a / (1.f + expf(-a)) * b";
  auto call = [&](int kind, const char* expression, int dtype, int64_t rows, int64_t cols, int64_t out_rows,
                  const int32_t* scatter, int64_t scatter_cols, const int32_t* groups_ptr, int64_t groups) {
    return chord_moe_activation(kind, expression, dtype, in, rows, cols, out, out_rows, scatter, scatter_cols,
                                groups_ptr, groups, nullptr, nullptr);
  };
  const int32_t idx[1] = {0};
  CHECK(call(7, silu, CHORD_DTYPE_BF16, 1, 16, 1, nullptr, 0, nullptr, 0) == CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(call(CHORD_ACTIVATION_BINARY_SPLIT, nullptr, CHORD_DTYPE_BF16, 1, 16, 1, nullptr, 0, nullptr, 0) ==
        CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(call(CHORD_ACTIVATION_BINARY_SPLIT, silu, 5, 1, 16, 1, nullptr, 0, nullptr, 0) ==
        CHORD_ERROR_INVALID_ARGUMENT);
  // n = 12 / 2 = 6 is not a multiple of 8.
  CHECK(call(CHORD_ACTIVATION_BINARY_SPLIT, silu, CHORD_DTYPE_BF16, 1, 12, 1, nullptr, 0, nullptr, 0) ==
        CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(call(CHORD_ACTIVATION_BINARY_SPLIT, silu, CHORD_DTYPE_BF16, 1, 17, 1, nullptr, 0, nullptr, 0) ==
        CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(call(CHORD_ACTIVATION_BINARY_SPLIT, silu, CHORD_DTYPE_BF16, -1, 16, 1, nullptr, 0, nullptr, 0) ==
        CHORD_ERROR_INVALID_ARGUMENT);
  // Fewer output rows than input rows without a scatter.
  CHECK(call(CHORD_ACTIVATION_BINARY_SPLIT, silu, CHORD_DTYPE_BF16, 2, 16, 1, nullptr, 0, nullptr, 0) ==
        CHORD_ERROR_INVALID_ARGUMENT);
  // Scatter and groups together; rows not a whole number of groups.
  CHECK(call(CHORD_ACTIVATION_BINARY_SPLIT, silu, CHORD_DTYPE_BF16, 1, 16, 1, idx, 1, idx, 1) ==
        CHORD_ERROR_INVALID_ARGUMENT);
  CHECK(call(CHORD_ACTIVATION_BINARY_SPLIT, silu, CHORD_DTYPE_BF16, 3, 16, 3, nullptr, 0, idx, 2) ==
        CHORD_ERROR_INVALID_ARGUMENT);
  // in and out overlap.
  CHECK(chord_moe_activation(CHORD_ACTIVATION_BINARY_SPLIT, silu, CHORD_DTYPE_BF16, in, 1, 16, in + 16, 1, nullptr, 0,
                             nullptr, 0, nullptr, nullptr) == CHORD_ERROR_INVALID_ARGUMENT);
  // Nothing to do: no rows.
  CHECK(call(CHORD_ACTIVATION_BINARY_SPLIT, silu, CHORD_DTYPE_BF16, 0, 16, 0, nullptr, 0, nullptr, 0) ==
        CHORD_SUCCESS);
}
