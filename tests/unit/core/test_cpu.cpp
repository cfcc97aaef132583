// The rank processes' share of a node's cores (core/cpu.h); the fleet test checks that workers
// take it.
#include "core/cpu.h"
#include "support/catch.h"

using namespace ltx2;

TEST_CASE("cpu: a node's ranks divide its cores, at least one thread each") {
  CHECK(rank_threads(16, 1) == 16);
  CHECK(rank_threads(16, 4) == 4);
  CHECK(rank_threads(7, 2) == 3);
  CHECK(rank_threads(2, 3) == 1);
  CHECK(rank_threads(1, 8) == 1);
  CHECK(rank_threads(4, 0) == 4);  // no node count: the process alone
  CHECK(machine_cores() >= 1);
}
