// Test entry point (Catch2 v2 needs one translation unit to define main; v3 links its own).
#if !LTX2_CATCH_V3
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#endif
