// Helpers for the fleet tests: options with short timeouts, running one job to its end, and the
// "nothing left behind" check (no shared memory with our prefix, no child or orphaned process).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/controller.h"

namespace ltx2::test {

// /dev/shm prefix of this test process's fleets.
std::string fleet_shm_prefix();
// CPU ranks running "test.faulty", small buffers and short timeouts.
runtime::FleetOptions fleet_options(int ranks, const nlohmann::json& setup = nlohmann::json::object());

struct JobOutcome {
  std::vector<runtime::JobEvent> events;  // everything before the end (progress, outputs, retries)
  std::optional<runtime::JobEvent> done;
  std::string error;
  bool failed = false, asymmetric = false, broken = false;
  int retries = 0;
  double seconds = 0;
};
// Drives next() until the oldest job ends (Done, JobFailed or FleetBroken), keeping copies of the
// events' tensors (so the result rings keep flowing); fails the test if that takes longer than
// `limit`.
JobOutcome finish_job(runtime::Controller& c, std::chrono::milliseconds limit = std::chrono::seconds(10));

// The running fleet's shared region as this process maps it (found in /proc/self/maps by its
// label), for tests that play a rank scribbling over it; REQUIREs exactly one.
std::pair<void*, size_t> live_fleet_region();

// Names under /dev/shm starting with `prefix`.
std::vector<std::string> leftover_shm(const std::string& prefix = fleet_shm_prefix());
// Pids whose parent is this process (workers, zombies, re-parented orphans).
std::vector<int> child_pids();
// REQUIREs both lists to be empty (waits up to a second for processes being reaped elsewhere).
void require_clean();

}  // namespace ltx2::test
