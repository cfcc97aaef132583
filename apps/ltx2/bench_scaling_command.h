// `ltx2 bench scaling`: one full-size transformer forward (the model of `ltx2 bench transformer`)
// on fleets of 1, 2, 4, 8 GPUs (as given), sequence parallel through NCCL: median ms, speedup and
// parallel efficiency against one GPU, the all-to-all bytes and GB/s per rank against NVLink, and
// how far each world's output is from the one-GPU output (a benchmark: it prints numbers).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ltx2 {

struct BenchScalingOptions {
  std::string model = "19b";        // 19b | 22b
  std::vector<std::string> shapes;  // stage1 | full; empty: both
  std::string gpus;                 // e.g. "0,1"; empty: every visible GPU
  std::vector<int> worlds;          // GPU counts; empty: 1, 2, 4, 8 up to the GPUs, and all of them
  int warmup = 1, iterations = 3;
  int layers = 0;            // 0: the model's 48
  double link_gbps = 370.0;  // NVLink all-to-all per direction, for the last column
  std::string json_path;
};

// Adds the `scaling` subcommand to `bench`; returns it (run run_bench_scaling when chosen).
CLI::App* add_bench_scaling_command(CLI::App* bench, BenchScalingOptions* opt);
int run_bench_scaling(const BenchScalingOptions& opt);

}  // namespace ltx2
