// Argument checks shared by the operators: each failure names the argument.
#pragma once
#include <cstdint>

#include "core/error.hpp"

namespace chord {

inline void require_pointer(const void* pointer, const char* name, uintptr_t alignment) {
  CHORD_REQUIRE(pointer != nullptr, "argument '{}' is a null pointer", name);
  CHORD_REQUIRE(reinterpret_cast<uintptr_t>(pointer) % alignment == 0,
                "argument '{}' ({}) must be {}-byte aligned", name, pointer, alignment);
}

inline void require_range(int64_t value, const char* name, int64_t low, int64_t high) {
  CHORD_REQUIRE(value >= low && value <= high, "argument '{}' = {} is out of range [{}, {}]", name, value, low,
                high);
}

inline void require_multiple(int64_t value, const char* name, int64_t multiple) {
  CHORD_REQUIRE(value % multiple == 0, "argument '{}' = {} must be a multiple of {}", name, value, multiple);
}

// bytes() for a shape that require() accepts, else -1: the C API's size helpers answer every
// input, and a negative or overflowed size is never an answer.
template <typename Require, typename Bytes>
int64_t size_if_valid(Require require, Bytes bytes) {
  try {
    require();
  } catch (const Error&) {
    return -1;
  }
  return bytes();
}

}  // namespace chord
