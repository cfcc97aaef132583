// The message of the ltx2::Error a call throws ("" when it does not throw), so tests can check
// what an error says under both Catch2 v2 and v3.
#pragma once

#include <string>

#include "core/error.h"

namespace ltx2::test {

template <typename Fn>
std::string error_text(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace ltx2::test
