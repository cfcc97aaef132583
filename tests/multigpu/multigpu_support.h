// Helpers of the multi-GPU tests: how many GPUs there are (without initialising CUDA here), fleet
// options for GPU ranks, and what the driver sees of our processes on the GPUs.
#pragma once

#include <vector>

#include "runtime/controller.h"

namespace ltx2::test {

// The visible GPUs; fails the test (naming the count) when there are fewer than `at_least`.
int require_gpus(int at_least);
// Fleet options for "test.faulty"-style tests on the first `gpus` GPUs (NCCL between them).
runtime::FleetOptions gpu_fleet_options(int gpus, const std::string& runner = "test.faulty",
                                        const nlohmann::json& setup = nlohmann::json::object());
// Pids of the processes nvidia-smi lists as holding a GPU context.
std::vector<int> gpu_process_pids();

}  // namespace ltx2::test
