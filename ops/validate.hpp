// Argument checks shared by the operators: each failure names the argument.
#pragma once
#include <cstdint>
#include <initializer_list>

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

// A device buffer an operator reads or writes, by the bytes the call's shape gives it.
struct Buffer {
  const void* data;
  int64_t bytes;
  const char* name;
};

// No output may share a byte with another output or an input of the call: the kernels read
// their inputs while the outputs are written (and no operator works in place), so an overlap
// would give a silently wrong result. Null or empty buffers (arguments a call does not use)
// are skipped.
inline void require_disjoint(std::initializer_list<Buffer> outputs, std::initializer_list<Buffer> inputs) {
  auto check = [](const Buffer& out, const Buffer& other) {
    if (other.data == nullptr || other.bytes <= 0 || out.data == nullptr || out.bytes <= 0) return;
    const auto begin = reinterpret_cast<uintptr_t>(out.data);
    const auto other_begin = reinterpret_cast<uintptr_t>(other.data);
    CHORD_REQUIRE(begin + static_cast<uintptr_t>(out.bytes) <= other_begin ||
                      other_begin + static_cast<uintptr_t>(other.bytes) <= begin,
                  "arguments '{}' and '{}' overlap (no operator works in place)", out.name, other.name);
  };
  for (auto out = outputs.begin(); out != outputs.end(); ++out) {
    for (auto later = out + 1; later != outputs.end(); ++later) check(*out, *later);
    for (const Buffer& in : inputs) check(*out, in);
  }
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
