// `ltx2 bench pipeline` (see bench_pipeline_command.h). The models load once; the first run is a
// warm-up, the median of the others is reported per phase. MP4 files go to a scratch folder that is
// removed afterwards.
#include "bench_pipeline_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/engine_factory.h"
#include "common/generation_cli.h"
#include "common/run_request.h"
#include "core/error.h"
#include "pipeline/tiny_model.h"

namespace ltx2 {

namespace fs = std::filesystem;

CLI::App* add_bench_pipeline_command(CLI::App* bench, BenchPipelineOptions* opt) {
  auto* cmd =
      bench->add_subcommand("pipeline", "Wall time per phase of a pipeline on the embedded tiny model");
  cmd->add_option("--pipeline", opt->pipeline, "distilled or ti2vid")
      ->check(CLI::IsMember({"distilled", "ti2vid"}))
      ->capture_default_str();
  cmd->add_option("--height", opt->height, "Height (multiple of 64)")->capture_default_str();
  cmd->add_option("--width", opt->width, "Width (multiple of 64)")->capture_default_str();
  cmd->add_option("--num-frames", opt->num_frames, "Frames (8k+1)")->capture_default_str();
  cmd->add_option("--num-inference-steps", opt->steps, "Stage-1 steps (ti2vid)")->capture_default_str();
  cmd->add_option("--repeat", opt->repeat, "Timed runs after one warm-up run")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--json", opt->json_path, "Also write the results as JSON to this file");
  return cmd;
}

int run_bench_pipeline(const BenchPipelineOptions& opt) {
  const PipelineKind kind = opt.pipeline == "distilled" ? PipelineKind::Distilled : PipelineKind::TwoStage;
  ModelPaths paths;
  pipeline::use_tiny_model_when_unset(paths, kind);
  GenerationRequest r;
  r.prompt = "A calm forest with mist";
  r.height = opt.height;
  r.width = opt.width;
  r.num_frames = opt.num_frames;
  r.num_inference_steps = opt.steps;
  if (kind == PipelineKind::TwoStage) {
    r.negative_prompt = default_negative_prompt();
    r.video_guidance = default_video_guidance();
    r.audio_guidance = default_audio_guidance();
    r.video_guidance.stg_blocks = {1};  // the tiny transformer has 2 blocks
    r.audio_guidance.stg_blocks = {0};
  }
  const fs::path dir = fs::temp_directory_path() / ("ltx2-bench-pipeline." + std::to_string(getpid()));
  fs::create_directories(dir);
  r.output_path = (dir / "out.mp4").string();
  validate_request(r, kind);

  const auto load_start = cli::PhaseClock::Clock::now();
  const cli::ModelFacts facts = cli::read_model_facts(paths);
  auto engine = pipeline::make_local_engine(kind, paths);
  const double load_seconds = cli::seconds_since(load_start);

  std::map<std::string, std::vector<double>> samples;
  std::vector<std::string> order;
  try {
    for (int run = 0; run <= opt.repeat; ++run) {
      const cli::RunResult result = cli::run_request(*engine, r, facts.vocoder_sample_rate, nullptr);
      if (run == 0) continue;  // warm-up
      for (const cli::PhaseTime& p : result.phases) {
        if (!samples.count(p.name)) order.push_back(p.name);
        samples[p.name].push_back(p.seconds);
      }
      if (!samples.count("total")) order.push_back("total");
      samples["total"].push_back(result.total_seconds);
    }
  } catch (...) {
    fs::remove_all(dir);
    throw;
  }
  fs::remove_all(dir);

  std::printf("ltx2 bench pipeline: %s, tiny model, %dx%d, %d frames, load %.3f s, median of %d runs\n",
              opt.pipeline.c_str(), r.width, r.height, r.num_frames, load_seconds, opt.repeat);
  nlohmann::json phases = nlohmann::json::object();
  for (const std::string& name : order) {
    std::vector<double> v = samples[name];
    std::sort(v.begin(), v.end());
    const double median = v[v.size() / 2];
    std::printf("  %-12s %8.3f s  (min %.3f, max %.3f)\n", name.c_str(), median, v.front(), v.back());
    phases[name] = {{"median_s", median}, {"min_s", v.front()}, {"max_s", v.back()}};
  }
  if (!opt.json_path.empty()) {
    std::ofstream out(opt.json_path);
    LTX2_CHECK(out, "--json {}: cannot write", opt.json_path);
    out << nlohmann::json{{"pipeline", opt.pipeline}, {"height", r.height},
                          {"width", r.width},         {"num_frames", r.num_frames},
                          {"repeat", opt.repeat},     {"load_s", load_seconds},
                          {"phases", phases}}
               .dump(2)
        << "\n";
  }
  return 0;
}

}  // namespace ltx2
