#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <string>

// CTest registers each test case by its name (catch_discover_tests) and splits a list at ';',
// so a name holding one becomes two tests that both fail, far from the cause.
TEST_CASE("tests: no test case name holds a semicolon", "[tests]") {
  for (const Catch::TestCase& test : Catch::getRegistryHub().getTestCaseRegistry().getAllTests()) {
    INFO(test.getTestCaseInfo().name);
    CHECK(test.getTestCaseInfo().name.find(';') == std::string::npos);
  }
}
