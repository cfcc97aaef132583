// Catch2 v2 (Debian) and v3 (newer distributions) behind one include.
#pragma once

#if LTX2_CATCH_V3
#include <catch2/catch_approx.hpp>
#include <catch2/catch_session.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

namespace Catch::Matchers {
// Catch2 v2's name for the substring matcher, so that tests read the same on v2 and v3.
inline StringContainsMatcher Contains(const std::string& s, CaseSensitive cs = CaseSensitive::Yes) {
  return ContainsSubstring(s, cs);
}
}  // namespace Catch::Matchers
using Catch::Approx;  // v2 exports it globally
#else
#include <catch2/catch.hpp>
#endif
