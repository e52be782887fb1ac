// Strict reading of the embedded JSON files (tuning tables, the shapes file): a missing
// field, a field of the wrong type, an integer that is not one or out of range, or a field
// the reader does not know is an error naming where it is.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace chord {

// `where` names the object for the message, e.g. "tuning table sm90a_ep8.json row 3".
template <typename T>
T json_field(const nlohmann::json& object, const char* key, const std::string& where) {
  CHORD_REQUIRE(object.is_object(), "{}: expected an object holding '{}'", where, key);
  auto it = object.find(key);
  CHORD_REQUIRE(it != object.end(), "{}: missing field '{}'", where, key);
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // Integers only, in range: a float or a huge value would convert with undefined behaviour.
    CHORD_REQUIRE(it->is_number_integer(), "{}: field '{}' must be an integer", where, key);
    const bool fits = it->is_number_unsigned() ? it->template get<uint64_t>() <= uint64_t{1} << 40
                                               : it->template get<int64_t>() >= -(int64_t{1} << 40) &&
                                                     it->template get<int64_t>() <= int64_t{1} << 40;
    CHORD_REQUIRE(fits, "{}: field '{}' is out of range", where, key);
  }
  if constexpr (std::is_same_v<T, bool>) {
    CHORD_REQUIRE(it->is_boolean(), "{}: field '{}' must be true or false", where, key);
  }
  try {
    return it->template get<T>();
  } catch (const nlohmann::json::exception&) {
    fail(CHORD_ERROR_INVALID_ARGUMENT, "{}: field '{}' has the wrong type", where, key);
  }
}

template <typename T>
T optional_json_field(const nlohmann::json& object, const char* key, T fallback, const std::string& where) {
  return object.is_object() && object.contains(key) ? json_field<T>(object, key, where) : fallback;
}

template <size_t N>
void require_known_json_keys(const nlohmann::json& object, const char* const (&keys)[N], const std::string& where) {
  for (const auto& item : object.items()) {
    bool known = false;
    for (const char* key : keys) known |= item.key() == key;
    CHORD_REQUIRE(known, "{}: unknown field '{}'", where, item.key());
  }
}

}  // namespace chord
