// A miniature driver program for the signal tests: `test_fleet --demo-driver OUTPUT [RANKS]`
// starts a fleet of CPU ranks, streams a slow job's tiles into OUTPUT.partial, renames it to OUTPUT
// when the job is done, and prints "streaming" once the first tile is written. On SIGINT/SIGTERM it
// removes the partial file and exits 130 (what an app built on the controller does).
#pragma once

namespace ltx2::test {

int run_demo_driver(int argc, char** argv);

}  // namespace ltx2::test
