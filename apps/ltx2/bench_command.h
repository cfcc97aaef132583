// `ltx2 bench attention|gemm|memory`: device throughput of the CUDA kernels at the LTX-2 shapes (TFLOP/s,
// median milliseconds after warm-up, MFU against the dense bf16 peak), printed and written as JSON.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ltx2 {

struct BenchOptions {
  std::string device = "cuda:0";
  std::vector<int64_t> tokens;       // empty: the defaults of the benchmark
  int64_t kv_tokens = 0;             // attention keys; 0: as many as queries (self-attention)
  int64_t kv_heads = 0;              // attention key/value heads; 0: as many as query heads
  bool causal = false;               // attention with a causal float mask (Gemma's)
  bool model_layout = false;         // attention inputs [B, T, H, D] viewed as [B, H, T, D]
  std::vector<std::string> engines;  // attention engines; empty: wgmma, and cudnn when built
  int heads = 32, head_dim = 128, inner_dim = 4096;
  int warmup = 3, iterations = 10;
  double peak_tflops = 989.0;  // H100/H200 SXM dense bf16
  std::string json_path;
};

// Adds `bench` with its `attention`, `gemm` and `memory` subcommands to the app.
CLI::App* add_bench_command(CLI::App& app, BenchOptions& options);
// Runs whichever subcommand was given; returns the exit code.
int run_bench(const CLI::App& bench, const BenchOptions& options);

}  // namespace ltx2
