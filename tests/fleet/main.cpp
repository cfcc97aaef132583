// test_fleet: the multi-process fleet tests. This binary is also the worker its fleets spawn
// (re-executed through /proc/self/exe with --worker) and, for the signal tests, a small driver
// program (--demo-driver), so it has its own main instead of Catch2's.
#define CATCH_CONFIG_RUNNER
#include <sys/prctl.h>

#include <cstring>

#include "demo_driver.h"
#include "runtime/worker.h"
#include "support/catch.h"

int main(int argc, char** argv) {
  if (auto rc = ltx2::runtime::run_worker_if_requested(argc, argv)) return *rc;
  if (argc >= 2 && std::strcmp(argv[1], "--demo-driver") == 0) return ltx2::test::run_demo_driver(argc, argv);
  // Orphaned descendants are re-parented here, so the "no process left behind" checks see them.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  return Catch::Session().run(argc, argv);
}
