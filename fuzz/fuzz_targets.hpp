// What the fuzz target (fuzz_validation.cpp) and its seed writer (write_seeds.cpp) agree
// on: the last input byte picks the target, modulo kTargetCount (FuzzedDataProvider reads
// integers from the end of the input).
#pragma once
#include <cstdint>

#include "cache/kernel_key.hpp"

namespace chord::fuzz {

// 0-7: the C API operators.
constexpr uint8_t kEnvironment = 8;
constexpr uint8_t kTuningTable = 9;
constexpr uint8_t kCacheEntry = 10;  // before the target byte: one byte, odd = damage the entry
constexpr uint8_t kCubin = 11;
constexpr int kTargetCount = 12;

// The key every cache-entry input is stored and loaded under.
constexpr KernelKey kEntryKey{0x0123456789abcdefull, 0xfedcba9876543210ull};

}  // namespace chord::fuzz
