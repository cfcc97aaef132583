#include "common/generation_cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>

#include "core/error.h"
#include "io/fields.h"
#include "pipeline/request_fields.h"
#include "runtime/fleet_engine.h"

namespace ltx2::cli {

namespace {

// --job-timeout SECONDS: positive, whole milliseconds, at most ~31 years (so nothing overflows).
std::chrono::milliseconds parse_job_timeout(const std::string& text) {
  const double seconds = fields::number_from_text(text, "--job-timeout");
  const auto ms = static_cast<int64_t>(std::llround(std::min(seconds, 1e9) * 1000));
  LTX2_CHECK(ms >= 1 && seconds <= 1e9,
             "--job-timeout must be a positive number of seconds up to 1e9, got {}", text);
  return std::chrono::milliseconds(ms);
}

// Every declared field of the program's flags, in --help's order.
fields::FieldList declared_fields(GenerationFlags& f, PipelineKind kind) {
  fields::FieldList out = model_path_fields(f.paths, kind);
  for (fields::Field& field : request_fields(f.request, kind)) out.push_back(std::move(field));
  for (fields::Field& field : runtime::rank_setting_fields(f.settings, kind)) out.push_back(std::move(field));
  return out;
}

// The embedded tiny model's own defaults (apply_tiny_model_defaults), for --help.
std::string tiny_default(const fields::Field& f) {
  const std::string name = f.json_name();
  if (name == "height") return std::to_string(kTinyHeight);
  if (name == "width") return std::to_string(kTinyWidth);
  if (name == "num_frames") return std::to_string(kTinyNumFrames);
  if (name == "num_inference_steps") return std::to_string(kTinyInferenceSteps);
  if (name == "video_guidance.stg_blocks") return "1";
  if (name == "audio_guidance.stg_blocks") return "0";
  return "";
}

// Declares a field's flag; its uses' words go to `words`.
void add_flag_of(CLI::App& app, const fields::Field& f, std::vector<std::vector<std::string>>& words) {
  std::string names;
  for (const std::string& n : f.flags) names += (names.empty() ? "" : ",") + n;
  std::string help = f.help;
  std::string default_text = f.default_text;
  if (const std::string tiny = tiny_default(f); !tiny.empty())
    default_text += "; " + tiny + " with the embedded tiny model";
  if (!default_text.empty()) help += " [default: " + default_text + "]";
  CLI::Option* opt = nullptr;
  switch (f.words) {
    case fields::Words::Switch:
      app.add_flag_function(
          names, [&words](int64_t) { words = {{}}; }, help);
      return;  // a switch takes no words to name
    case fields::Words::One:
      opt = app.add_option_function<std::string>(
          names, [&words](const std::string& v) { words = {{v}}; }, help);
      break;
    case fields::Words::List:
      // A use without words gives one empty word: the empty list.
      opt = app.add_option_function<std::vector<std::string>>(
                   names,
                   [&words](const std::vector<std::string>& v) {
                     std::vector<std::string> kept;
                     for (const std::string& w : v)
                       if (!w.empty()) kept.push_back(w);
                     words = {kept};
                   },
                   help)
                ->expected(0, CLI::detail::expected_max_vector_size);
      break;
    case fields::Words::Group:
      opt = app.add_option(names, words, help)->expected(f.min_words, f.max_words);
      break;
  }
  opt->type_name(f.type_name);
}

}  // namespace

void add_field_flags(CLI::App& app, const fields::FieldList& fields, FlagWords& words) {
  for (const fields::Field& field : fields)
    if (!field.flags.empty()) add_flag_of(app, field, words[field.flag()]);
}

void set_fields_from_flags(const fields::FieldList& fields, const FlagWords& words) {
  for (const fields::Field& field : fields) {
    if (field.flags.empty()) continue;
    const auto it = words.find(field.flag());
    if (it == words.end()) continue;
    for (const std::vector<std::string>& use : it->second) field.set_words(use);
  }
}

void add_generation_flags(CLI::App& app, GenerationFlags& f, PipelineKind kind) {
  f.request = default_request(kind);
  add_field_flags(app, declared_fields(f, kind), *f.words);
  app.add_option("--jobs", f.jobs_file,
                 "JSONL file: one job per line (fields as the flags, e.g. "
                 "{\"prompt\": ..., \"output_path\": ..., \"seed\": 3}); weights load once");
  app.add_option(
         "--shard", f.shard,
         "With --jobs: run only shard K of N of its lines (0 <= K < N; the lines whose ordinal modulo N "
         "is K), so N processes or machines share one file; inside a Slurm job array the array task "
         "picks the shard when this is not given")
      ->type_name("K/N");
  app.add_flag("--skip-existing", f.skip_existing,
               "With --jobs: leave out the lines whose output already exists (outputs appear only complete, "
               "so a rerun after a lost node redoes only what is missing)");
  app.add_option(
         "--manifest", f.manifest,
         "With --jobs: keep the batch's results in FILE, one JSON line per line run here (line, status: "
         "pending, done, failed, invalid or skipped, seconds, output_path, error), rewritten whole "
         "after each job")
      ->type_name("FILE");
  app.add_option("--device", f.device,
                 "Where the job runs: auto (every visible GPU in bf16 when this build has CUDA, else the CPU "
                 "in float32), cpu, cuda (every visible GPU) or cuda:N. One GPU runs in this process, "
                 "several as one worker process each")
      ->capture_default_str();
  app.add_option("--gpus", f.gpus, "GPUs to use, e.g. 0,2 (default: every visible GPU)");
  app.add_option("--ranks", f.ranks, "CPU ranks (worker processes) instead of GPUs");
  app.add_option("--retries", f.retries,
                 "Restart the fleet and retry a job this many times after a crash (runs even one GPU as a "
                 "worker process)")
      ->capture_default_str();
  app.add_option("--job-timeout", f.job_timeout,
                 fmt::format("Seconds a job on worker processes may run before it fails (given, it runs even "
                             "one device as a worker process); a rank that makes no progress for a tenth of "
                             "it (at least 10 minutes) fails it sooner [default: {}]",
                             std::chrono::seconds(runtime::kDefaultJobTimeout).count()))
      ->type_name("SECONDS");
  app.add_option("--log-format", f.log_format,
                 "text (progress bars on a terminal) or json (JSON lines on stderr)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

void finish_generation_flags(GenerationFlags& f, PipelineKind kind) {
  set_fields_from_flags(declared_fields(f, kind), *f.words);
  LTX2_CHECK(f.ranks >= 0 && f.ranks <= 64, "--ranks must be between 1 and 64, got {}", f.ranks);
  LTX2_CHECK(f.retries >= 0 && f.retries <= 10, "--retries must be between 0 and 10, got {}", f.retries);
  if (!f.job_timeout.empty()) f.job_time_limit = parse_job_timeout(f.job_timeout);
  for (const auto& [flag, given] :
       {std::pair{"--shard", !f.shard.empty()}, std::pair{"--skip-existing", f.skip_existing},
        std::pair{"--manifest", !f.manifest.empty()}})
    LTX2_CHECK(!given || !f.jobs_file.empty(), "{} needs --jobs FILE", flag);
  if (!f.shard.empty())
    f.batch_shard = parse_shard(f.shard);
  else if (!f.jobs_file.empty())
    f.batch_shard = slurm_array_shard();
}

bool wants_tiny_model(const ModelPaths& p) {
  return p.checkpoint.empty() && !p.split();
}

void apply_tiny_model_defaults(const CLI::App& app, GenerationRequest& r, PipelineKind kind) {
  if (app.count("--height") == 0) r.height = kTinyHeight;
  if (app.count("--width") == 0) r.width = kTinyWidth;
  if (app.count("--num-frames") == 0) r.num_frames = kTinyNumFrames;
  if (!pipeline_traits(kind).guided) return;
  if (app.count("--num-inference-steps") == 0) r.num_inference_steps = kTinyInferenceSteps;
  // The tiny transformer has 2 blocks; STG skips the last one for video and the first for audio.
  if (app.count("--video-stg-blocks") == 0) r.video_guidance.stg_blocks = {1};
  if (app.count("--audio-stg-blocks") == 0) r.audio_guidance.stg_blocks = {0};
}

void apply_model_version_defaults(const CLI::App& app, GenerationRequest& r, PipelineKind kind,
                                  const std::vector<int>& model_version) {
  // The HQ pipeline has parameters of its own whatever the checkpoint (default_request).
  if (!pipeline_traits(kind).guided || !pipeline_traits(kind).defaults_by_version) return;
  const VersionDefaults d = version_defaults(model_version);
  if (app.count("--num-inference-steps") == 0) r.num_inference_steps = d.num_inference_steps;
  if (app.count("--video-stg-blocks") == 0) r.video_guidance.stg_blocks = d.stg_blocks;
  if (app.count("--audio-stg-blocks") == 0) r.audio_guidance.stg_blocks = d.stg_blocks;
}

}  // namespace ltx2::cli
