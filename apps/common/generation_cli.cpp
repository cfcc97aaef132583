#include "common/generation_cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>

#include "core/error.h"
#include "runtime/fleet_engine.h"

namespace ltx2::cli {

namespace {

double parse_number(const std::string& s, const std::string& what) {
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used == s.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  LTX2_FAIL("{}: '{}' is not a number", what, s);
}

int parse_int(const std::string& s, const std::string& what) {
  double v = parse_number(s, what);
  LTX2_CHECK(v == std::floor(v) && std::fabs(v) < 1e9, "{}: '{}' is not a whole number", what, s);
  return static_cast<int>(v);
}

// --job-timeout SECONDS: positive, whole milliseconds, at most ~31 years (so nothing overflows).
std::chrono::milliseconds parse_job_timeout(const std::string& text) {
  const double seconds = parse_number(text, "--job-timeout");
  const auto ms = static_cast<int64_t>(std::llround(std::min(seconds, 1e9) * 1000));
  LTX2_CHECK(ms >= 1 && seconds <= 1e9,
             "--job-timeout must be a positive number of seconds up to 1e9, got {}", text);
  return std::chrono::milliseconds(ms);
}

void add_guidance_flags(CLI::App& app, GuidanceParams& g, const std::string& m, const char* mod_flag) {
  app.add_option("--" + m + "-cfg-guidance-scale", g.cfg_scale, "Classifier-free guidance scale for " + m)
      ->capture_default_str();
  app.add_option("--" + m + "-stg-guidance-scale", g.stg_scale, "Spatio-temporal guidance scale for " + m)
      ->capture_default_str();
  app.add_option("--" + m + "-rescale-scale", g.rescale_scale, "Guidance rescale for " + m)
      ->capture_default_str();
  app.add_option("--" + m + "-stg-blocks", g.stg_blocks,
                 "Transformer blocks whose self-attention STG skips, none for an empty list [default: by "
                 "the checkpoint's version: 29 for LTX-2 (19B) and a checkpoint without one, 28 for "
                 "LTX-2.3 and later; " +
                     std::string(m == "video" ? "1" : "0") + " with the embedded tiny model]")
      ->expected(0, CLI::detail::expected_max_vector_size);
  app.add_option(mod_flag, g.modality_scale, "Modality (cross-attention) guidance scale for " + m)
      ->capture_default_str();
  app.add_option("--" + m + "-skip-step", g.skip_step,
                 "Reuse the previous prediction on skipped steps (0: never)")
      ->capture_default_str();
}

}  // namespace

void add_generation_flags(CLI::App& app, GenerationFlags& f, PipelineKind kind) {
  GenerationRequest& r = f.request;
  ModelPaths& p = f.paths;
  if (kind == PipelineKind::Distilled) {
    app.add_option("--distilled-checkpoint-path,--checkpoint-path", p.checkpoint,
                   "Distilled monolith checkpoint (.safetensors); none: the embedded tiny model");
  } else {
    app.add_option("--checkpoint-path", p.checkpoint,
                   "Monolith checkpoint (.safetensors); none: the embedded tiny model");
    app.add_option(
           "--distilled-lora", f.distilled_lora,
           "PATH [STRENGTH]: LoRA fused into stage 2 (strength 1.0); with no checkpoint: the tiny model's")
        ->expected(1, 2);
  }
  app.add_option(
      "--gemma-root", p.gemma_root,
      "Gemma 3 folder (config.json, tokenizer.model, safetensors); with no checkpoint: the tiny model's");
  app.add_option("--transformer-path", p.transformer, "Split layout: transformer file");
  app.add_option("--text-encoder-path", p.text_encoder, "Split layout: text-encoder (connector) file");
  app.add_option("--video-vae-path", p.video_vae, "Split layout (or with a monolith): video VAE file");
  app.add_option("--audio-vae-path", p.audio_vae, "Split layout: audio VAE + vocoder file");
  app.add_option("--spatial-upsampler-path", p.spatial_upsampler,
                 "Latent spatial upsampler (.safetensors); with no checkpoint: the tiny model's");
  app.add_option("--lora", f.loras, "PATH [STRENGTH]: extra LoRA fused into the transformer (repeatable)")
      ->expected(1, 2);

  app.add_option("--prompt", r.prompt, "What the video shows and sounds like (required unless --jobs)");
  app.add_option("--output-path", r.output_path,
                 "Output, by its form: .mp4 (H.264 + AAC); .y4m (uncompressed video, the audio as the .wav "
                 "of the same name beside it); .wav (the audio alone, 16-bit PCM stereo; no video is "
                 "decoded); or a PNG sequence's frame pattern FOLDER/NAME%05d.png (%d or %0Nd: 8-bit RGB "
                 "frames numbered from 0, the audio as FOLDER/audio.wav; the folder is the output, replacing "
                 "only a folder holding nothing but such files). Written atomically; required unless "
                 "--jobs");
  app.add_flag("--no-audio", r.no_audio,
               "No audio track: an .mp4 without an audio stream, a .y4m or PNG sequence without its .wav "
               "(the audio is not decoded)");
  app.add_option("--seed", r.seed, "Random seed")->capture_default_str();
  const auto size_help = [&](const char* what, int value, int tiny) {
    return fmt::format("{} [default: {}; {} with the embedded tiny model]", what, value, tiny);
  };
  app.add_option("--height", r.height, size_help("Height in pixels (multiple of 64)", r.height, kTinyHeight));
  app.add_option("--width", r.width, size_help("Width in pixels (multiple of 64)", r.width, kTinyWidth));
  app.add_option("--num-frames", r.num_frames, size_help("Frames (8k+1)", r.num_frames, kTinyNumFrames));
  app.add_option("--frame-rate", r.frame_rate, "Frames per second")->capture_default_str();
  app.add_option(
         "--image", f.images,
         "PATH FRAME STRENGTH [CRF]: condition on an image (PNG, JPEG or WebP) at a pixel frame (repeatable)")
      ->expected(3, 4);
  if (kind == PipelineKind::TwoStage) {
    r.negative_prompt = default_negative_prompt();
    r.video_guidance = default_video_guidance();
    r.audio_guidance = default_audio_guidance();
    app.add_option("--negative-prompt", r.negative_prompt,
                   "What to steer away from (default: the reference's list)");
    app.add_option("--num-inference-steps", r.num_inference_steps,
                   fmt::format("Stage-1 denoising steps [default: by the checkpoint's version: 40 for LTX-2 "
                               "(19B) and a checkpoint without one, 30 for LTX-2.3 and later; {} with the "
                               "embedded tiny model]",
                               kTinyInferenceSteps));
    add_guidance_flags(app, r.video_guidance, "video", "--a2v-guidance-scale");
    add_guidance_flags(app, r.audio_guidance, "audio", "--v2a-guidance-scale");
    app.add_option("--stage2-parallel", f.stage2_parallel,
                   "Stage-2 strategy across ranks: sp (sequence parallel, the one-device result) or tdp "
                   "(the reference's tiled data parallel: its own sigmas and tiles, so the video depends "
                   "on the rank count)")
        ->check(CLI::IsMember({"tdp", "sp"}))
        ->capture_default_str();
  }
  app.add_option("--jobs", f.jobs_file,
                 "JSONL file: one job per line (fields as the flags, e.g. "
                 "{\"prompt\": ..., \"output_path\": ..., \"seed\": 3}); weights load once");
  app.add_option("--device", f.device,
                 "Where the job runs: auto (every visible GPU in bf16 when this build has CUDA, else the CPU "
                 "in float32), cpu, cuda (every visible GPU) or cuda:N. One GPU runs in this process, "
                 "several as one worker process each")
      ->capture_default_str();
  app.add_option("--gpus", f.gpus, "GPUs to use, e.g. 0,2 (default: every visible GPU)");
  app.add_option(
         "--gpu-memory", f.gpu_memory,
         "GiB of each GPU the job may use, e.g. 80 to run as an 80 GiB card would (default: all of it). "
         "Models that do not fit beside the rest are loaded per phase; a job that cannot fit fails "
         "before loading, naming the phase")
      ->check(CLI::NonNegativeNumber);
  app.add_option(
         "--quantization", f.quantization,
         "How the transformer's weights are held and multiplied, as the reference names it: none (the "
         "checkpoint's values, an FP8 checkpoint's scales honoured, in the compute dtype), fp8-cast "
         "(the reference's fp8-cast numbers: block linears rounded to FP8 at load) or fp8-scaled-mm "
         "(an FP8 checkpoint's linears kept in FP8 and multiplied as FP8 with its static input scales, "
         "cuBLASLt FP8 GEMMs on the GPU; FP8 checkpoints only)")
      ->capture_default_str();
  app.add_option("--ranks", f.ranks, "CPU ranks (worker processes) instead of GPUs");
  app.add_option("--vae-tiles", f.vae_tiles,
                 "Distributed VAE decode: HxW tiles, or 'ranks' for the reference's balanced split of the "
                 "rank count (either makes the frames depend on the tiling; default: the one-device "
                 "decode's tiles spread over the ranks, the same frames on any rank count)");
  app.add_option("--vae-overlap", f.vae_overlap, "Distributed decode tile overlap in latent cells")
      ->capture_default_str();
  if (kind == PipelineKind::TwoStage) {
    app.add_option("--tdp-tiles", f.tdp_tiles,
                   "Stage-2 tiled data parallel tiles HxW (default: balanced split)");
    app.add_option("--tdp-overlap", f.tdp_overlap, "Stage-2 tile overlap in latent cells")
        ->capture_default_str();
  }
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
  for (const auto& im : f.images) {
    ImageCondition c;
    c.path = im[0];
    c.frame = parse_int(im[1], "--image " + im[0] + " FRAME");
    c.strength = parse_number(im[2], "--image " + im[0] + " STRENGTH");
    if (im.size() > 3) c.crf = parse_int(im[3], "--image " + im[0] + " CRF");
    f.request.images.push_back(c);
  }
  for (const auto& l : f.loras)
    f.paths.loras.push_back({l[0], l.size() > 1 ? parse_number(l[1], "--lora " + l[0] + " STRENGTH") : 1.0});
  if (kind == PipelineKind::TwoStage && !f.distilled_lora.empty()) {
    f.paths.distilled_lora = {
        f.distilled_lora[0],
        f.distilled_lora.size() > 1 ? parse_number(f.distilled_lora[1], "--distilled-lora STRENGTH") : 1.0};
  }
  f.quantization_policy = parse_quantization(f.quantization);
  LTX2_CHECK(f.ranks >= 0 && f.ranks <= 64, "--ranks must be between 1 and 64, got {}", f.ranks);
  LTX2_CHECK(f.retries >= 0 && f.retries <= 10, "--retries must be between 0 and 10, got {}", f.retries);
  if (!f.job_timeout.empty()) f.job_time_limit = parse_job_timeout(f.job_timeout);
}

bool wants_tiny_model(const ModelPaths& p) {
  return p.checkpoint.empty() && !p.split();
}

void apply_tiny_model_defaults(const CLI::App& app, GenerationRequest& r, PipelineKind kind) {
  if (app.count("--height") == 0) r.height = kTinyHeight;
  if (app.count("--width") == 0) r.width = kTinyWidth;
  if (app.count("--num-frames") == 0) r.num_frames = kTinyNumFrames;
  if (kind != PipelineKind::TwoStage) return;
  if (app.count("--num-inference-steps") == 0) r.num_inference_steps = kTinyInferenceSteps;
  // The tiny transformer has 2 blocks; STG skips the last one for video and the first for audio.
  if (app.count("--video-stg-blocks") == 0) r.video_guidance.stg_blocks = {1};
  if (app.count("--audio-stg-blocks") == 0) r.audio_guidance.stg_blocks = {0};
}

void apply_model_version_defaults(const CLI::App& app, GenerationRequest& r, PipelineKind kind,
                                  const std::vector<int>& model_version) {
  if (kind != PipelineKind::TwoStage) return;
  const VersionDefaults d = version_defaults(model_version);
  if (app.count("--num-inference-steps") == 0) r.num_inference_steps = d.num_inference_steps;
  if (app.count("--video-stg-blocks") == 0) r.video_guidance.stg_blocks = d.stg_blocks;
  if (app.count("--audio-stg-blocks") == 0) r.audio_guidance.stg_blocks = d.stg_blocks;
}

}  // namespace ltx2::cli
