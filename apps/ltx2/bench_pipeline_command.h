// `ltx2 bench pipeline`: a whole job as the generation programs run it, timed per phase (checkpoint
// load, text encode, stage 1, upsample, stage 2, decode, audio, write output), on the model files
// given (the published layouts; `ltx2 make-random` writes random-weight ones) or on the embedded
// tiny model. On a GPU it also prints each phase's memory high-water mark, the load's GB/s next to a
// plain sequential read of the same files, the time until the first denoising step starts, and one
// line per job (the first pays the load, the next ones do not). A benchmark: it prints numbers and
// asserts nothing.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "common/generation_cli.h"

namespace ltx2 {

struct BenchPipelineOptions {
  std::string pipeline = "distilled";  // or ti2vid, ti2vid-hq, one-stage, keyframes
  int height = 128, width = 192, num_frames = 9, steps = 4;
  int repeat = 3;  // jobs run after the load; the median is over jobs 2..repeat (all of them if 1)
  // Model files (none: the tiny model): the generation programs' model-path flags
  // (pipeline/request_fields.h), their words kept until the run reads them.
  std::shared_ptr<cli::FlagWords> model_flags = std::make_shared<cli::FlagWords>();
  std::string device = "auto";  // auto: cuda:0 when a GPU is visible, else the CPU
  double gpu_memory = 0;        // GiB cap, as --gpu-memory
  bool cold = false;            // also load once after evicting the files from the page cache
  std::string output = "mp4";   // or "y4m" (no FFmpeg needed)
  std::string json_path;
};

// Adds the `pipeline` subcommand to `bench`; returns it (run run_bench_pipeline when it was chosen).
CLI::App* add_bench_pipeline_command(CLI::App* bench, BenchPipelineOptions* opt);
int run_bench_pipeline(const BenchPipelineOptions& opt);

}  // namespace ltx2
