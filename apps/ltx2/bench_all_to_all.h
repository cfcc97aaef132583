// `ltx2 bench sp --all-to-all`: the fleet communicator's all-to-all alone, over a sweep of sizes, on
// CPU ranks or one rank per GPU (NCCL), with the bandwidths nccl-tests reports for its alltoall:
// algbw = S / t and busbw = algbw (P - 1) / P, S the bytes each rank sends (to itself included),
// t the slowest rank's time per collective, against NVLink 4's ~370 GB/s busbw.
#pragma once

#include <nlohmann/json.hpp>

#include "bench_sp_command.h"

namespace ltx2 {

// Runs the sweep and prints its table (and writes opt.json when set); returns the exit code.
int run_bench_all_to_all(const BenchSpOptions& opt);

// The sweep's sizes: powers of two from min to max bytes, each rounded down to a whole float32
// count per rank pair (at least one), for `ranks` ranks.
std::vector<int64_t> all_to_all_sizes(int64_t min_bytes, int64_t max_bytes, int ranks);

}  // namespace ltx2
