// test_multigpu: NCCL between processes and fleets of GPU ranks. This binary is also the worker its
// fleets spawn (re-executed through /proc/self/exe with --worker), so it has its own main. The test
// process itself never initialises CUDA: its ranks (forked or spawned) own the GPUs.
#define CATCH_CONFIG_RUNNER
#include <sys/prctl.h>

#include "runtime/worker.h"
#include "support/catch.h"

int main(int argc, char** argv) {
  if (auto rc = ltx2::runtime::run_worker_if_requested(argc, argv)) return *rc;
  // Orphaned descendants are re-parented here, so the "no process left behind" checks see them.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  return Catch::Session().run(argc, argv);
}
