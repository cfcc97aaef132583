// `ltx2 bench fleet`: job dispatch latency and result-streaming throughput of a fleet of CPU
// ranks through shared memory (a benchmark, not a test: it prints numbers, it asserts nothing).
#pragma once

#include <CLI/CLI.hpp>

namespace ltx2 {

struct BenchFleetOptions {
  int ranks = 2;
  int jobs = 200;
  int tensors = 64;
  int tensor_kib = 1024;
  bool json = false;
};

// Adds the `fleet` subcommand to `bench`; returns it (run run_bench_fleet when it was chosen).
CLI::App* add_bench_fleet_command(CLI::App* bench, BenchFleetOptions* opt);
int run_bench_fleet(const BenchFleetOptions& opt);

}  // namespace ltx2
