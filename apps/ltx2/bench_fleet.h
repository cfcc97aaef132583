// `ltx2 bench fleet`: job dispatch latency and result-streaming throughput of a fleet through
// shared memory, for several tensor sizes, next to this machine's memcpy rate for the same sizes
// (the ceiling: a worker copies each result tensor once, into its ring). A benchmark, not a test:
// it prints numbers, it asserts nothing.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ltx2 {

struct BenchFleetOptions {
  std::string gpus;  // --gpus 0,2 (GPU ranks need a GPU communicator in the executable)
  int ranks = 0;     // --ranks N; neither flag: 2 CPU ranks
  int jobs = 200;
  std::vector<int> sizes_mib = {1, 4, 16, 64, 256};
  int stream_mib = 1024;  // bytes streamed per measurement
  int repeats = 3;        // each measurement; the median and the best are reported
  bool json = false;
};

// Adds the `fleet` subcommand to `bench`; returns it (run run_bench_fleet when it was chosen).
CLI::App* add_bench_fleet_command(CLI::App* bench, BenchFleetOptions* opt);
int run_bench_fleet(const BenchFleetOptions& opt);

}  // namespace ltx2
