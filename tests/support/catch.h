// Catch2 v2 (Debian) and v3 (newer distributions) behind one include.
#pragma once

#if LTX2_CATCH_V3
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#else
#include <catch2/catch.hpp>
#endif
