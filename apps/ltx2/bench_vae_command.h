// `ltx2 bench vae`: device time of one full-size LTX-2 video VAE decode (the real decoder config, or
// LTX-2.5's diffusion decoder with the reference configurator's defaults; random bf16 weights made
// through the decoder's own loader and placed on the GPU) of a random
// latent at the pipeline's sizes: 512x768x121 (latent 16x16x24) and 1024x1536x121 (16x32x48).
// It prints the median ms after warm-up, the peak device memory and the ratio to the reference's
// measured time (vae-audio.md §11), untiled or with the pipeline's automatic tiling.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ltx2 {

struct BenchVaeOptions {
  std::string model = "2.0";        // 2.0 | 2.3 (the decoder's block lists) | 2.5 (diffusion decoder)
  std::vector<std::string> shapes;  // stage1 (512x768) | full (1024x1536); empty: both
  std::string tiling = "none";      // none | auto (the pipeline's TileSizeConfig::automatic)
  std::string device = "cuda:0";
  int warmup = 1, iterations = 3;
  std::string json_path;
};

// Adds the `vae` subcommand to `bench`; returns it (run run_bench_vae when chosen).
CLI::App* add_bench_vae_command(CLI::App* bench, BenchVaeOptions* opt);
int run_bench_vae(const BenchVaeOptions& opt);

}  // namespace ltx2
