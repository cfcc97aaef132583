// `ltx2 bench fleet`: job dispatch latency and result-streaming throughput of a fleet through
// shared memory (a benchmark, not a test: it prints numbers, it asserts nothing).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace ltx2 {

struct BenchFleetOptions {
  std::string gpus;  // --gpus 0,2 (GPU ranks need a GPU communicator in the executable)
  int ranks = 0;     // --ranks N; neither flag: 2 CPU ranks
  int jobs = 200;
  int tensors = 64;
  int tensor_kib = 1024;
  bool json = false;
};

// Adds the `fleet` subcommand to `bench`; returns it (run run_bench_fleet when it was chosen).
CLI::App* add_bench_fleet_command(CLI::App* bench, BenchFleetOptions* opt);
int run_bench_fleet(const BenchFleetOptions& opt);

}  // namespace ltx2
