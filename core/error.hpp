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
  Error(chord_status_t status, const std::string& message, int cuda_result = 0)
      : std::runtime_error(message), status_(status), cuda_result_(cuda_result) {}
  chord_status_t status() const { return status_; }
  // The CUresult of the driver call that failed (CHORD_ERROR_CUDA), else 0.
  int cuda_result() const { return cuda_result_; }

 private:
  chord_status_t status_;
  int cuda_result_;
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
