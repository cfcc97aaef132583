// `ltx2 bench pipeline`: wall time per phase (text encode, stage 1, upsample, stage 2, decode,
// encode MP4) of the distilled or the two-stage pipeline on the embedded tiny model, in this
// process, as the generation programs run it (a benchmark: it prints numbers, it asserts nothing).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace ltx2 {

struct BenchPipelineOptions {
  std::string pipeline = "distilled";  // or "ti2vid"
  int height = 128, width = 192, num_frames = 9, steps = 4;
  int repeat = 3;
  std::string json_path;
};

// Adds the `pipeline` subcommand to `bench`; returns it (run run_bench_pipeline when it was chosen).
CLI::App* add_bench_pipeline_command(CLI::App* bench, BenchPipelineOptions* opt);
int run_bench_pipeline(const BenchPipelineOptions& opt);

}  // namespace ltx2
