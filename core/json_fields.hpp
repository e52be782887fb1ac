// Strict reading of the embedded JSON files (tuning tables, the shapes file): a missing
// field, a field of the wrong type, an integer that is not one or out of range, or a field
// the reader does not know is an error naming where it is.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

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
    // Integers only, in range of T (and of +-2^40): a float would convert with undefined
    // behaviour, and a value past T's range would wrap (4294967304 read as 8).
    CHORD_REQUIRE(it->is_number_integer(), "{}: field '{}' must be an integer", where, key);
    constexpr int64_t kLeast = std::max<int64_t>(-(int64_t{1} << 40), std::numeric_limits<T>::min());
    constexpr uint64_t kMost = std::min<uint64_t>(uint64_t{1} << 40, std::numeric_limits<T>::max());
    const bool fits = it->is_number_unsigned()
                          ? it->template get<uint64_t>() <= kMost
                          : it->template get<int64_t>() >= kLeast &&
                                (it->template get<int64_t>() < 0 || uint64_t(it->template get<int64_t>()) <= kMost);
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

// Parses a whole JSON text; `what` names it for the messages ("tuning table sm90a_ep8.json").
// Nesting deeper than the files' own few levels is refused while parsing: reading a value
// copies it recursively, and 150000 levels of arrays would overflow the stack. A key that
// appears twice in one object is refused too: the parser would keep the last one silently.
inline nlohmann::json parse_json_file(const std::string& what, const std::string& text) {
  constexpr int kMaxDepth = 16;
  std::vector<std::set<std::string>> keys;  // the keys seen in each open object
  using Event = nlohmann::json::parse_event_t;
  try {
    return nlohmann::json::parse(text, [&](int depth, Event event, nlohmann::json& parsed) {
      if (depth > kMaxDepth) fail(CHORD_ERROR_INVALID_ARGUMENT, "{}: nested deeper than {} levels", what, kMaxDepth);
      if (event == Event::object_start) keys.emplace_back();
      if (event == Event::object_end && !keys.empty()) keys.pop_back();
      if (event == Event::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second) {
        fail(CHORD_ERROR_INVALID_ARGUMENT, "{}: the key '{}' appears twice in one object", what,
             parsed.get<std::string>());
      }
      return true;
    });
  } catch (const nlohmann::json::exception& e) {
    fail(CHORD_ERROR_INVALID_ARGUMENT, "{}: not valid JSON: {}", what, e.what());
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
