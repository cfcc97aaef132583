// `ltx2 bench encode`: the MP4 output of a clip on this machine's CPU, as the generation programs
// write it: synthetic 8-bit RGB frames (moving gradients and shapes with a little noise, so that
// the encoder has texture and motion to code) converted to YUV 4:2:0 by libswscale and encoded by
// libx264 (CRF 19, veryfast). It times the conversion alone, then the MP4 writer over the same
// frames (its conversion and encoder shares, and the whole), in seconds and frames per second, with
// the process's CPU seconds (what the work costs on a shared machine). A benchmark: it prints
// numbers, it asserts nothing. Needs FFmpeg (LTX2_WITH_MEDIA).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace ltx2 {

struct BenchEncodeOptions {
  int height = 1024, width = 1536, frames = 121;
  int encoder_threads = 0, convert_threads = 0;  // 0: the writer's defaults (mp4_writer.h)
  int chunk = 8;                                 // frames per write_video call
  std::string json_path;
};

// Adds the `encode` subcommand to `bench`; returns it (run run_bench_encode when chosen).
CLI::App* add_bench_encode_command(CLI::App* bench, BenchEncodeOptions* opt);
int run_bench_encode(const BenchEncodeOptions& opt);

}  // namespace ltx2
