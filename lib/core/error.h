// Error type and check macros shared by every layer.
//
// An ltx2::Error carries a one-line message meant for the user (what() never contains a newline)
// and the source location that raised it (for logs at debug level). Library code throws; only
// apps/ decide to exit. Backend checks (CUDA, cuBLAS, cuDNN, NCCL) live in core/cuda/check.h and
// append the library's own error string to the message.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace ltx2 {

class Error : public std::runtime_error {
 public:
  Error(std::string message, const char* file, int line);
  const char* file() const { return file_; }
  int line() const { return line_; }
  // "message (file:line)", for debug logs.
  std::string located() const;

 private:
  const char* file_;
  int line_;
};

[[noreturn]] void throw_error(const char* file, int line, std::string message);

}  // namespace ltx2

// LTX2_CHECK(cond, "fmt {}", args...): throws ltx2::Error with the formatted message if cond fails.
#define LTX2_CHECK(cond, ...)                                                       \
  do {                                                                              \
    if (!(cond)) ::ltx2::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
  } while (0)

#define LTX2_FAIL(...) ::ltx2::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__))
