// `ltx2 bench encode` (see bench_encode_command.h). The frames are made once, before any timing;
// the MP4 goes to a scratch folder that is removed afterwards.
#include "bench_encode_command.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/cpu.h"
#include "core/error.h"
#include "core/tensor.h"
#ifdef LTX2_WITH_MEDIA
#include "media/ffmpeg/mp4_writer.h"
#include "media/ffmpeg/rgb_to_yuv.h"
#endif

namespace ltx2 {

namespace fs = std::filesystem;

CLI::App* add_bench_encode_command(CLI::App* bench, BenchEncodeOptions* opt) {
  auto* cmd = bench->add_subcommand(
      "encode",
      "RGB -> YUV conversion and libx264 encoding of a synthetic clip (CPU, the MP4 writer's path)");
  cmd->add_option("--height", opt->height, "frame height (even)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--width", opt->width, "frame width (even)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--frames", opt->frames, "frames")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--encoder-threads", opt->encoder_threads,
                  "libx264 frame threads (0: the cores, at most one per two macroblock rows)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--convert-threads", opt->convert_threads, "swscale slice threads (0: the machine's cores)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--chunk", opt->chunk, "frames per call into the writer")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--json", opt->json_path, "also write the results to this JSON file");
  return cmd;
}

#ifndef LTX2_WITH_MEDIA

int run_bench_encode(const BenchEncodeOptions&) {
  LTX2_FAIL("ltx2 bench encode: this ltx2 was built without FFmpeg");
}

#else

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU time of the whole process (every thread, user + system) so far: with the machine shared,
// the work a phase needs, where wall time also counts the waits for a core.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  return s(u.ru_utime) + s(u.ru_stime);
}

// [frames, H, W, 3] uint8: a diagonal colour gradient drifting with time, two discs moving across
// it, and +-15 codes of hash noise (grain), so that frames differ as a camera's do.
Tensor synthetic_frames(int frames, int height, int width) {
  Tensor t = Tensor::empty({frames, height, width, 3}, DType::U8);
  uint8_t* p = t.data<uint8_t>();
#pragma omp parallel for collapse(2) schedule(static)
  for (int f = 0; f < frames; ++f)
    for (int y = 0; y < height; ++y) {
      uint8_t* row = p + (static_cast<int64_t>(f) * height + y) * width * 3;
      for (int x = 0; x < width; ++x) {
        const double u = double(x) / width, v = double(y) / height, s = f / 24.0;
        double rgb[3] = {0.5 + 0.4 * std::sin(6.0 * u + s), 0.5 + 0.4 * std::sin(5.0 * v - 0.7 * s),
                         0.5 + 0.4 * std::cos(4.0 * (u + v) + 0.3 * s)};
        const double cx[2] = {0.3 + 0.2 * std::sin(s), 0.7 - 0.25 * s / 5.0}, cy[2] = {0.4, 0.3 + 0.1 * s};
        for (int d = 0; d < 2; ++d)
          if ((u - cx[d]) * (u - cx[d]) + (v - cy[d]) * (v - cy[d]) < 0.01) rgb[d] = rgb[2 - d] = 0.9;
        uint64_t z = (static_cast<uint64_t>(f) * height + y) * width + x;
        z = (z ^ (z >> 31)) * 0x9E3779B97F4A7C15ull;
        z ^= z >> 29;
        for (int c = 0; c < 3; ++c) {
          const double noise = static_cast<double>((z >> (8 * c)) & 31) - 15.5;
          row[3 * x + c] = static_cast<uint8_t>(std::clamp(255.0 * rgb[c] + noise, 0.0, 255.0));
        }
      }
    }
  return t;
}

}  // namespace

int run_bench_encode(const BenchEncodeOptions& opt) {
  LTX2_CHECK(opt.height % 2 == 0 && opt.width % 2 == 0,
             "ltx2 bench encode: --height {} and --width {} must be even", opt.height, opt.width);
  const int cores = machine_cores();
  const int encoder_threads =
      opt.encoder_threads > 0 ? opt.encoder_threads : media::default_encoder_threads(opt.height);
  const int convert_threads = opt.convert_threads > 0 ? opt.convert_threads : cores;
  const Tensor frames = synthetic_frames(opt.frames, opt.height, opt.width);
  const int64_t frame_bytes = int64_t{opt.height} * opt.width * 3;

  // The conversion alone, into one reused I420 buffer.
  std::vector<uint8_t> yuv(static_cast<size_t>(opt.height) * opt.width * 3 / 2);
  uint8_t* planes[3] = {yuv.data(), yuv.data() + int64_t{opt.height} * opt.width,
                        yuv.data() + int64_t{opt.height} * opt.width * 5 / 4};
  const int linesizes[3] = {opt.width, opt.width / 2, opt.width / 2};
  media::RgbToYuv420 convert(opt.width, opt.height, convert_threads);
  const double convert_cpu_start = cpu_seconds();
  const auto convert_start = Clock::now();
  for (int f = 0; f < opt.frames; ++f)
    convert.convert(frames.data<uint8_t>() + f * frame_bytes, planes, linesizes);
  const double convert_s = seconds_since(convert_start), convert_cpu_s = cpu_seconds() - convert_cpu_start;

  // The MP4 writer over the same frames, in chunks as the decode hands them over.
  const fs::path dir = fs::temp_directory_path() / ("ltx2-bench-encode." + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "out.mp4").string();
  media::Mp4Timings timings;
  double total_s = 0, total_cpu_s = 0;
  uintmax_t bytes = 0;
  try {
    media::Mp4Options o;
    o.width = opt.width;
    o.height = opt.height;
    o.encoder_threads = encoder_threads;
    o.convert_threads = convert_threads;
    const double cpu_start = cpu_seconds();
    const auto start = Clock::now();
    media::Mp4Writer writer(path, o);
    for (int f = 0; f < opt.frames; f += opt.chunk)
      writer.write_video(frames.narrow(0, f, std::min(opt.chunk, opt.frames - f)));
    writer.finish();
    total_s = seconds_since(start);
    total_cpu_s = cpu_seconds() - cpu_start;
    timings = writer.timings();
    bytes = fs::file_size(path);
  } catch (...) {
    fs::remove_all(dir);
    throw;
  }
  fs::remove_all(dir);

  const auto fps = [&](double s) { return s > 0 ? opt.frames / s : 0.0; };
  std::printf("ltx2 bench encode: %dx%d, %d frames, %d cores; %d encoder threads, %d conversion threads\n",
              opt.width, opt.height, opt.frames, cores, encoder_threads, convert_threads);
  std::printf("  %-30s %8s %9s %10s\n", "", "wall s", "fps", "CPU s");
  std::printf("  %-30s %8.3f %9.1f %10.3f\n", "rgb -> yuv420p alone", convert_s, fps(convert_s),
              convert_cpu_s);
  std::printf("  %-30s %8.3f %9.1f\n", "writer: conversion", timings.convert_seconds,
              fps(timings.convert_seconds));
  std::printf("  %-30s %8.3f %9.1f\n", "writer: libx264 (waited for)", timings.encode_seconds,
              fps(timings.encode_seconds));
  std::printf("  %-30s %8.3f %9.1f %10.3f  (%.2f MB)\n", "writer: total", total_s, fps(total_s), total_cpu_s,
              static_cast<double>(bytes) / 1e6);
  if (!opt.json_path.empty()) {
    const nlohmann::json doc = {{"bench", "encode"},
                                {"height", opt.height},
                                {"width", opt.width},
                                {"frames", opt.frames},
                                {"cores", cores},
                                {"encoder_threads", encoder_threads},
                                {"convert_threads", convert_threads},
                                {"convert_s", convert_s},
                                {"convert_fps", fps(convert_s)},
                                {"convert_cpu_s", convert_cpu_s},
                                {"writer_convert_s", timings.convert_seconds},
                                {"writer_encode_s", timings.encode_seconds},
                                {"writer_total_s", total_s},
                                {"writer_fps", fps(total_s)},
                                {"writer_cpu_s", total_cpu_s},
                                {"mp4_bytes", bytes}};
    std::ofstream out(opt.json_path);
    LTX2_CHECK(out.good(), "ltx2 bench encode: cannot write --json file '{}'", opt.json_path);
    out << doc.dump(2) << "\n";
  }
  return 0;
}

#endif

}  // namespace ltx2
