#include "core/error.h"

#include <algorithm>

namespace ltx2 {

namespace {
// Messages are single lines: a newline from a nested library message would break log parsing.
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}
}  // namespace

Error::Error(std::string message, const char* file, int line)
    : std::runtime_error(one_line(std::move(message))), file_(file), line_(line) {}

std::string Error::located() const { return fmt::format("{} ({}:{})", what(), file_, line_); }

void throw_error(const char* file, int line, std::string message) {
  throw Error(std::move(message), file, line);
}

}  // namespace ltx2
