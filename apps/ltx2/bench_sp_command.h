// `ltx2 bench sp`: communication volume and time of sequence-parallel (Ulysses) attention per
// denoising step and rank, on a fleet of CPU ranks running a random transformer, against the
// formula 4·N·h·b·(P−1)/P² bytes per layer (a benchmark: it prints numbers, it asserts nothing);
// with --all-to-all, the communicator's all-to-all alone on CPU or GPU ranks (bench_all_to_all.h).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace ltx2 {

struct BenchSpOptions {
  int ranks = 2;
  int steps = 3;
  int layers = 2;
  int batch = 1;
  int video_tokens = 512;
  int heads = 12, head_dim = 64;
  int audio_tokens = 32;
  int audio_heads = 12, audio_head_dim = 32;
  int threads_per_rank = 0;  // 0: the machine's cores divided by the ranks
  // --all-to-all: the sweep of bench_all_to_all.h instead.
  bool all_to_all = false;
  std::string gpus;  // GPU ranks (empty: `ranks` CPU ranks)
  int64_t min_bytes = int64_t{1} << 20, max_bytes = int64_t{1} << 30;
  int warmup = 5, iterations = 20;
  std::string json;
};

// Adds the `sp` subcommand to `bench`; returns it (run run_bench_sp when it was chosen).
CLI::App* add_bench_sp_command(CLI::App* bench, BenchSpOptions* opt);
int run_bench_sp(const BenchSpOptions& opt);

}  // namespace ltx2
