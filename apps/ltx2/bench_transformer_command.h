// `ltx2 bench transformer`: device time of one full-size LTX-2 transformer forward (video + audio,
// bf16, random weights made on the GPU's side of the model's own loader) at the pipeline's stage-1
// and full-resolution shapes: median ms after warm-up, TFLOP/s from the counted FLOPs, MFU, peak
// device memory, the ratio to the reference's measured time, and the attention share per site;
// with --profile also the device time of every op kind in one forward (core/op_profile.h).
// --quantization fp8-scaled-mm holds the blocks' linears as the reference's FP8Linear does
// (bench_transformer_model.h says how the synthesized weights are quantized).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ltx2 {

struct BenchTransformerOptions {
  std::string model = "19b";        // 19b | 22b
  std::vector<std::string> shapes;  // stage1 | full; empty: both
  std::string device = "cuda:0";
  int warmup = 2, iterations = 5;
  int layers = 0;  // 0: the model's 48
  double peak_tflops = 989.0;
  bool profile = false;
  std::string quantization = "none";         // none | fp8 | fp8-scaled-mm
  std::string attention_precision = "bf16";  // bf16 | 8bit (ops::AttentionPrecision)
  std::string json_path;
};

// The forward-timing options `bench transformer` and `bench scaling` share: --layers, --warmup,
// --iterations.
void add_forward_timing_options(CLI::App* sub, int* layers, int* warmup, int* iterations);

// Adds the `transformer` subcommand to `bench`; returns it (run run_bench_transformer when chosen).
CLI::App* add_bench_transformer_command(CLI::App* bench, BenchTransformerOptions* opt);
int run_bench_transformer(const BenchTransformerOptions& opt);

}  // namespace ltx2
