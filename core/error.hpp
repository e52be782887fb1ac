// The one error type of the library: a status code (chord.h) and a message that names
// the bad argument. The C API turns it into a return code and chord_last_error().
#pragma once
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "chord/chord.h"

namespace chord {

class Error : public std::runtime_error {
 public:
  Error(chord_status_t status, const std::string& message) : std::runtime_error(message), status_(status) {}
  chord_status_t status() const { return status_; }

 private:
  chord_status_t status_;
};

template <typename... Args>
[[noreturn]] void fail(chord_status_t status, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(status, fmt::format(format, std::forward<Args>(args)...));
}

// Argument checks at the operator boundary: the message names the argument.
#define CHORD_REQUIRE(cond, ...)                                                  \
  do {                                                                            \
    if (!(cond)) ::chord::fail(CHORD_ERROR_INVALID_ARGUMENT, __VA_ARGS__);        \
  } while (0)

// Warnings go to stderr once per distinct message site; the library keeps working.
void warn(const std::string& message);

}  // namespace chord
