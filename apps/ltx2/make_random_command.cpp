// `ltx2 make-random` (see make_random_command.h): plans the set, writes it file by file with the
// size, time and rate of each, then the total and the command lines that run it. Ctrl-C removes the
// file being written and exits 130.
#include "make_random_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>

#include "core/error.h"
#include "model_sets/random_model.h"
#include "runtime/stop_signal.h"

namespace ltx2 {

namespace {

constexpr const char* kParts[] = {"checkpoint", "upsampler", "lora", "gemma"};

bool wanted(const MakeRandomOptions& o, const char* part) {
  return o.only.empty() || std::find(o.only.begin(), o.only.end(), part) != o.only.end();
}

double megabytes_per_second(uint64_t bytes, double seconds) {
  return seconds > 0 ? bytes / 1e6 / seconds : 0;
}

}  // namespace

CLI::App* add_make_random_command(CLI::App& app, MakeRandomOptions& o) {
  auto* cmd = app.add_subcommand(
      "make-random",
      "Write a full-size model set with deterministic random weights in the published layouts, file "
      "names, key names and metadata configs, to run and time the real job without the real "
      "checkpoints (the output is noise). Into DIR: the distilled checkpoint (19b: "
      "ltx-2-19b-distilled.safetensors, 22b: ltx-2.3-22b-distilled.safetensors; or, --layout split, "
      "diffusion_models/, text_encoders/ and vae/ files for --transformer-path, --text-encoder-path, "
      "--video-vae-path and --audio-vae-path), the x2 spatial upscaler, the rank-384 distilled LoRA and "
      "gemma-3-12b-it-qat-q4_0-unquantized/ (config.json, 5 GB shards with their index, a small "
      "SentencePiece tokenizer.model; Gemma's text model only, no vision tower). All bf16, streamed to "
      "disk. A 48-layer set is 75 GB (19b: checkpoint 43, Gemma 23.5, LoRA 7.4, upscaler "
      "1) or 79 GB (22b: 46, 23.5, 8.1, 1); the free space is checked first; existing files are replaced");
  cmd->add_option("dir", o.dir, "output folder (created if missing)")->required();
  cmd->add_option("--model", o.model, "19b (LTX-2) or 22b (LTX-2.3)")
      ->required()
      ->check(CLI::IsMember({"19b", "22b"}));
  cmd->add_option("--layout", o.layout,
                  "monolith (one checkpoint) or split (ComfyUI-aligned component files)")
      ->check(CLI::IsMember({"monolith", "split"}))
      ->capture_default_str();
  cmd->add_option("--layers", o.layers,
                  "transformer blocks and Gemma layers, every tensor at full width (fewer for CPU tests)")
      ->check(CLI::Range(int64_t{1}, model_sets::kFullSizeLayers))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "seed of the weights")->capture_default_str();
  cmd->add_option("--only", o.only, "write only these parts: checkpoint, upsampler, lora, gemma (comma list)")
      ->delimiter(',')
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(kParts), std::end(kParts))));
  return cmd;
}

int run_make_random(const MakeRandomOptions& o) {
  runtime::install_stop_signal_handlers();
  model_sets::RandomModelOptions options;
  options.model = o.model;
  options.layout = o.layout == "split" ? model_sets::RandomLayout::Split : model_sets::RandomLayout::Monolith;
  options.layers = o.layers;
  options.seed = o.seed;
  options.checkpoint = wanted(o, "checkpoint");
  options.upsampler = wanted(o, "upsampler");
  options.lora = wanted(o, "lora");
  options.gemma = wanted(o, "gemma");

  const auto start = std::chrono::steady_clock::now();
  const model_sets::RandomModelSet set = model_sets::plan_random_model_set(options);
  uint64_t total = 0;
  model_sets::RandomWriteHooks hooks;
  hooks.check_stop = [] {
    const int sig = runtime::stop_signal_number();
    LTX2_CHECK(sig == 0, "interrupted by {}; the file being written was removed",
               sig == SIGINT ? "SIGINT" : "SIGTERM");
  };
  hooks.file_written = [&](const model_sets::RandomModelFile& f, double seconds) {
    const uint64_t bytes = f.bytes();
    total += bytes;
    std::printf("%15ju  %-72s %7.1f s %6.0f MB/s\n", static_cast<uintmax_t>(bytes), f.path.c_str(), seconds,
                megabytes_per_second(bytes, seconds));
    std::fflush(stdout);
  };
  ModelPaths paths;
  try {
    paths = model_sets::write_random_model_set(o.dir, set, hooks);
  } catch (const Error& e) {
    const int sig = runtime::stop_signal_number();
    if (sig == 0) throw;
    std::fprintf(stderr, "ltx2: error: %s\n", e.what());
    return 128 + sig;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%15ju  total: %zu files, %.1f s, %.0f MB/s (%s, %s, %jd layers)\n",
              static_cast<uintmax_t>(total), set.files.size(), seconds, megabytes_per_second(total, seconds),
              o.model.c_str(), o.layout.c_str(), static_cast<intmax_t>(o.layers));
  // The command lines that run the set (with what this run wrote).
  std::string models = !paths.checkpoint.empty() ? " --distilled-checkpoint-path " + paths.checkpoint
                       : !paths.transformer.empty()
                           ? fmt::format(
                                 " --transformer-path {} --text-encoder-path {} --video-vae-path {} "
                                 "--audio-vae-path {}",
                                 paths.transformer, paths.text_encoder, paths.video_vae, paths.audio_vae)
                           : "";
  if (!paths.gemma_root.empty()) models += " --gemma-root " + paths.gemma_root;
  if (!paths.spatial_upsampler.empty()) models += " --spatial-upsampler-path " + paths.spatial_upsampler;
  if (!models.empty())
    std::printf("run: ltx2-distilled%s --prompt TEXT --output-path OUT.mp4\n", models.c_str());
  return 0;
}

}  // namespace ltx2
