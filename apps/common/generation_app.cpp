#include "common/generation_app.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>

#include "common/batch.h"
#include "common/clip_file.h"
#include "common/engine_factory.h"
#include "common/generation_cli.h"
#include "common/jobs_file.h"
#include "common/phase_clock.h"
#include "common/run_reporter.h"
#include "common/run_request.h"
#include "core/error.h"
#include "core/log.h"
#include "model_sets/tiny_model.h"
#include "pipeline/residency.h"
#include "runtime/rank_settings.h"
#include "runtime/stop_signal.h"

namespace ltx2::cli {

namespace {

const char* kTinyNotice =
    "no checkpoint given: using the embedded tiny model (random weights: its output is noise; real "
    "videos need the published LTX-2 checkpoints, see --help)";

void report_run(RunReporter& reporter, const GenerationRequest& r, const RunResult& result) {
  reporter.output(r.output_path, result.frames, result.width, result.height, result.total_seconds);
  reporter.timings(result.phases, result.total_seconds);
}

// What validation leaves for the run: the jobs (one, from the command line, when jobs is empty),
// whether the tiny model is used, and what the model files say.
struct Plan {
  EnginePlacement placement;
  std::vector<JobLine> jobs;  // this shard's
  size_t file_jobs = 0;       // the --jobs file's
  bool tiny = false;
  ModelFacts facts;
  std::vector<pipeline::RequestShape> shapes;  // of the requests that will run
  pipeline::PipelineOptions local_options;     // the in-process engine's (with its residency plan)
};

// The requests' memory: on a GPU in this process a job that cannot fit fails now, before anything is
// loaded (a --jobs line only fails its line), and the residency plan covers the others. The
// models' sizes and the budget are read once for the whole batch.
void plan_memory(Plan& plan, const GenerationFlags& flags, PipelineKind kind) {
  const bool local = !plan.placement.fleet;
  pipeline::PipelineOptions options =
      local ? pipeline::PipelineOptions::on_device(plan.placement.devices[0]) : pipeline::PipelineOptions{};
  options.quantization = flags.settings.quantization;
  std::optional<pipeline::ModelMemory> memory;
  uint64_t budget = 0;
  if (local && options.device.is_cuda()) {
    memory = pipeline::model_memory(flags.paths, options);
    budget = pipeline::device_memory_budget(options.device, flags.settings.gpu_memory_gib);
  }
  if (flags.jobs_file.empty()) {
    plan.shapes = {pipeline::request_shape(flags.request, kind)};
  } else {
    for (JobLine& job : plan.jobs) {
      if (!job.error.empty() || !job.skipped.empty()) continue;
      const pipeline::RequestShape shape = pipeline::request_shape(job.request, kind);
      try {
        if (memory) pipeline::plan_residency(*memory, {shape}, budget);
        plan.shapes.push_back(shape);
      } catch (const Error& e) {
        job.error = e.what();
      }
    }
  }
  if (memory && !plan.shapes.empty())
    options.residency = pipeline::plan_residency(*memory, plan.shapes, budget);
  plan.local_options = std::move(options);
}

// Every check that needs no model loaded; throws ltx2::Error naming the flag. A bad --jobs line
// only marks that line. A mistake is the only line printed; otherwise the first one says where the
// job runs.
Plan validate(const CLI::App& app, GenerationFlags& flags, PipelineKind kind, RunReporter& reporter) {
  Plan plan;
  plan.placement = plan_placement(flags);
  check_engine_available(flags, plan.placement);
  plan.tiny = wants_tiny_model(flags.paths);
  if (plan.tiny) apply_tiny_model_defaults(app, flags.request, kind);
  if (flags.jobs_file.empty()) {
    LTX2_CHECK(!flags.request.prompt.empty(), "--prompt is required (or --jobs FILE)");
    LTX2_CHECK(!flags.request.output_path.empty(), "--output-path is required (or --jobs FILE)");
  }
  if (plan.tiny) model_sets::use_tiny_model_when_unset(flags.paths, kind);
  validate_model_paths(flags.paths, kind);
  plan.facts = pipeline::read_model_facts(flags.paths);
  // The checkpoint's version decides the defaults the flags leave, before the jobs inherit them.
  if (!plan.tiny) apply_model_version_defaults(app, flags.request, kind, plan.facts.model_version);
  // A fleet's stage-2 tiles must fit each request (one rank runs no tiles).
  const int world =
      plan.placement.fleet ? static_cast<int>(plan.placement.devices.size()) * plan.placement.nodes : 1;
  if (flags.jobs_file.empty()) {
    validate_request(flags.request, kind, plan.facts);
    runtime::check_tdp_tiling(flags.settings, world, flags.request);
    check_output_available(flags.request.output_path);
  } else {
    plan.jobs = read_jobs_file(flags.jobs_file, flags.request, kind, plan.facts);
    refuse_shared_outputs(plan.jobs);  // over the whole file: shards must not write each other's outputs
    plan.file_jobs = plan.jobs.size();
    if (flags.batch_shard) plan.jobs = select_shard(std::move(plan.jobs), *flags.batch_shard);
    if (flags.skip_existing) skip_existing_outputs(plan.jobs);
  }
  for (JobLine& job : plan.jobs) {
    if (!job.error.empty() || !job.skipped.empty()) continue;
    try {
      runtime::check_tdp_tiling(flags.settings, world, job.request);
      check_output_available(job.request.output_path);
    } catch (const std::exception& e) {  // ltx2::Error, or e.g. bad_alloc: this line's failure only
      job.error = e.what();
    }
  }
  plan_memory(plan, flags, kind);
  reporter.info("running on " + plan.placement.describe());
  return plan;
}

// The engine, its models loaded (once for the whole batch).
std::unique_ptr<pipeline::GenerationEngine> load_engine(const GenerationFlags& flags, PipelineKind kind,
                                                        const Plan& plan, RunReporter& reporter) {
  if (plan.local_options.residency) reporter.info("memory: " + plan.local_options.residency->describe());
  const auto load_start = PhaseClock::Clock::now();
  auto engine = make_engine(kind, flags.paths, flags, plan.placement, plan.local_options, plan.shapes);
  reporter.info(fmt::format("models loaded in {:.2f} s", seconds_since(load_start)));
  return engine;
}

// Runs the request or the --jobs lines of this shard still to do (the models loaded once, not at
// all when none is); returns the exit code. A failed job is reported with its line and the others
// still run; an interrupt ends them all. The manifest, if asked for, follows each line.
int run(const GenerationFlags& flags, PipelineKind kind, const Plan& plan, RunReporter& reporter) {
  const Device memory_device = plan.placement.fleet ? Device::cpu() : plan.placement.devices[0];
  if (flags.jobs_file.empty()) {
    auto engine = load_engine(flags, kind, plan, reporter);
    stop_if_requested();
    reporter.job(0, flags.request.prompt, flags.request.output_path);
    report_run(reporter, flags.request, run_request(*engine, flags.request, &reporter, memory_device));
    return 0;
  }
  if (flags.batch_shard)
    reporter.info(fmt::format("shard {}/{}: {} of the file's {} jobs", flags.batch_shard->index,
                              flags.batch_shard->count, plan.jobs.size(), plan.file_jobs));
  BatchManifest manifest(flags.manifest, plan.jobs);
  int failed = 0, runnable = 0;
  for (const JobLine& job : plan.jobs) {
    if (!job.error.empty()) {
      reporter.error(job.error, job.line);
      ++failed;
    } else if (!job.skipped.empty()) {
      reporter.info(fmt::format("line {}: skipped: {}", job.line, job.skipped));
    } else {
      ++runnable;
    }
  }
  const int jobs = static_cast<int>(plan.jobs.size());
  if (jobs > 0 && failed == jobs) {
    reporter.error(fmt::format("all {} jobs are invalid", failed));
    return 1;
  }
  if (runnable == 0) {
    reporter.info("nothing to run");
    return failed > 0 ? 1 : 0;
  }
  auto engine = load_engine(flags, kind, plan, reporter);
  for (const JobLine& job : plan.jobs) {
    if (!job.error.empty() || !job.skipped.empty()) continue;
    try {
      stop_if_requested();
      reporter.job(job.line, job.request.prompt, job.request.output_path);
      const RunResult result = run_request(*engine, job.request, &reporter, memory_device);
      report_run(reporter, job.request, result);
      manifest.set(job.line, BatchManifest::Status::Done, result.total_seconds);
    } catch (const std::exception& e) {      // ltx2::Error, or e.g. bad_alloc: this line's failure only
      if (runtime::stop_requested()) throw;  // the line stays pending: a rerun does it
      reporter.error(e.what(), job.line);
      manifest.set(job.line, BatchManifest::Status::Failed, 0, e.what());
      ++failed;
    }
  }
  if (failed == 0) return 0;
  reporter.error(fmt::format("{} of {} jobs failed", failed, jobs));
  return 1;
}

}  // namespace

int run_generation_program(int argc, char** argv, PipelineKind kind, const char* program) {
  init_logging();
  runtime::install_stop_signal_handlers();
  CLI::App app{
      fmt::format("{}: the {} LTX-2 text/image-to-video+audio pipeline. Without a checkpoint it "
                  "runs the embedded tiny model, whose output is noise: real videos need the "
                  "published LTX-2 checkpoints.",
                  program, pipeline_name(kind))};
  GenerationFlags flags;
  add_generation_flags(app, flags, kind);
  // A usage mistake, CLI11's or a flag's value its field refuses, is one line naming the flag
  // (CLI11's own message adds a second) and exit 2; --help exits 0.
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "%s: error: %s (see --help)\n", program, e.what());
    return 2;
  }
  RunReporter reporter(program, flags.log_format == "json" ? LogFormat::Json : LogFormat::Text);
  try {
    finish_generation_flags(flags, kind);
  } catch (const Error& e) {
    reporter.error(std::string(e.what()) + " (see --help)");
    return 2;
  }
  try {
    const Plan plan = validate(app, flags, kind, reporter);
    if (plan.tiny) reporter.info(kTinyNotice);
    return run(flags, kind, plan, reporter);
  } catch (const Error& e) {
    log_debug("{}", e.located());
    reporter.error(e.what());
  } catch (const std::exception& e) {
    reporter.error(e.what());
  }
  const int sig = runtime::stop_signal_number();
  return sig != 0 ? 128 + sig : 1;
}

}  // namespace ltx2::cli
