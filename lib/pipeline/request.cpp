#include "pipeline/request.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "media/clip_writer.h"
#include "media/image_reader.h"
#include "media/png_sequence_writer.h"
#include "media/y4m_wav_writer.h"
#include "models/duration/duration_head.h"
#include "models/text/gemma3.h"
#include "models/text/tokenizer.h"

namespace ltx2 {

namespace fs = std::filesystem;

const PipelineTraits& pipeline_traits(PipelineKind k) {
  // name, guided, refines, distilled_lora, lora_in_stage1, defaults_by_version,
  // images_as_keyframes, size_multiple
  static const PipelineTraits distilled{"distilled", false, true, false, false, true, false, 64};
  static const PipelineTraits two_stage{"two-stage", true, true, true, false, true, false, 64};
  static const PipelineTraits one_stage{"one-stage", true, false, false, false, true, false, 32};
  static const PipelineTraits keyframes{"keyframe", true, true, true, false, true, true, 64};
  static const PipelineTraits hq{"HQ", true, true, true, true, false, false, 64};
  switch (k) {
    case PipelineKind::Distilled: return distilled;
    case PipelineKind::TwoStage: return two_stage;
    case PipelineKind::OneStage: return one_stage;
    case PipelineKind::Keyframes: return keyframes;
    case PipelineKind::Hq: return hq;
  }
  LTX2_FAIL("unknown pipeline kind {}", static_cast<int>(k));
}

const char* pipeline_name(PipelineKind k) {
  return pipeline_traits(k).name;
}

const std::string& default_negative_prompt() {
  static const std::string text =
      "has_subtitles, has_blurbox, transition from black, transition to black, speech_ending_short, "
      "blurry, out of focus, overexposed, underexposed, low contrast, washed out colors, excessive "
      "noise, grainy texture, poor lighting, flickering, motion blur, distorted proportions, unnatural "
      "skin tones, deformed facial features, asymmetrical face, missing facial features, extra limbs, "
      "disfigured hands, wrong hand count, artifacts around text, inconsistent perspective, camera "
      "shake, incorrect depth of field, background too sharp, background clutter, distracting "
      "reflections, harsh shadows, inconsistent lighting direction, color banding, cartoonish "
      "rendering, 3D CGI look, unrealistic materials, uncanny valley effect, incorrect ethnicity, wrong "
      "gender, exaggerated expressions, wrong gaze direction, mismatched lip sync, silent or muted "
      "audio, distorted voice, robotic voice, echo, background noise, off-sync audio, incorrect "
      "dialogue, added dialogue, repetitive speech, jittery movement, awkward pauses, incorrect "
      "timing, unnatural transitions, inconsistent framing, tilted camera, flat lighting, "
      "inconsistent tone, cinematic oversaturation, stylized filters, or AI artifacts.";
  return text;
}

GuidanceParams default_video_guidance() {
  return {3.0, 1.0, 0.7, 3.0, 0, version_defaults({2, 3}).stg_blocks};
}
GuidanceParams default_audio_guidance() {
  return {7.0, 1.0, 0.7, 3.0, 0, version_defaults({2, 3}).stg_blocks};
}

GenerationRequest default_request(PipelineKind kind) {
  GenerationRequest r;
  if (pipeline_traits(kind).guided) {
    r.negative_prompt = default_negative_prompt();
    r.video_guidance = default_video_guidance();
    r.audio_guidance = default_audio_guidance();
  }
  if (!pipeline_traits(kind).defaults_by_version) {  // the HQ parameters
    r.num_inference_steps = 15;
    r.height = 1088;
    r.width = 1920;
    r.video_guidance = {3.0, 0.0, 0.45, 3.0, 0, {}};
    r.audio_guidance = {7.0, 0.0, 1.0, 3.0, 0, {}};
  }
  return r;
}

VersionDefaults version_defaults(const std::vector<int>& model_version) {
  // Newest generation first; a version at or above a row gets it (so a newer, unknown one gets the
  // closest known), anything older LTX-2.0's.
  if (model_version >= std::vector<int>{2, 4}) return {30, {28}, 18};
  if (model_version >= std::vector<int>{2, 3}) return {30, {28}, 33};
  return {40, {29}, 33};
}

namespace {

void check_guidance(const GuidanceParams& g, const char* modality) {
  auto finite_nonneg = [&](double v, const std::string& flag) {
    LTX2_CHECK(std::isfinite(v) && v >= 0, "{} must be a finite number >= 0, got {}", flag, v);
  };
  std::string m = std::string("--") + modality;
  finite_nonneg(g.cfg_scale, m + "-cfg-guidance-scale");
  finite_nonneg(g.stg_scale, m + "-stg-guidance-scale");
  finite_nonneg(g.rescale_scale, m + "-rescale-scale");
  // The modality scale of video is how much audio informs it (a2v), and the other way round.
  finite_nonneg(g.modality_scale,
                std::string(modality) == "video" ? "--a2v-guidance-scale" : "--v2a-guidance-scale");
  LTX2_CHECK(g.skip_step >= 0, "--{}-skip-step must be >= 0, got {}", modality, g.skip_step);
  for (int b : g.stg_blocks) LTX2_CHECK(b >= 0, "--{}-stg-blocks: block {} is negative", modality, b);
}

void check_readable_file(const std::string& path, const char* flag) {
  LTX2_CHECK(!path.empty(), "{} is empty", flag);
  LTX2_CHECK(fs::exists(path), "{} {}: no such file", flag, path);
  LTX2_CHECK(fs::is_regular_file(path), "{} {}: not a file", flag, path);
  LTX2_CHECK(access(path.c_str(), R_OK) == 0, "{} {}: not readable", flag, path);
}

}  // namespace

bool output_has_video(const GenerationRequest& r) {
  return fs::path(r.output_path).extension() != ".wav";
}

bool output_has_audio(const GenerationRequest& r) {
  return !r.no_audio;
}

int max_num_frames(const GenerationRequest& r) {
  if (r.num_frames != kNumFramesFromDurationHead) return r.num_frames;
  if (!std::isfinite(r.frame_rate) || r.frame_rate <= 0) return 1;
  return static_cast<int>(
      duration_to_frames(kDurationMaxSeconds, r.frame_rate, kDurationMinSeconds, kDurationMaxSeconds));
}

int64_t video_tokens(const GenerationRequest& r) {
  // The video VAE's latent grid: 8 frames and 32 x 32 pixels a token, the first frame alone.
  return (1 + (static_cast<int64_t>(max_num_frames(r)) - 1) / 8) * (r.height / 32) * (r.width / 32);
}

void validate_request(const GenerationRequest& r, PipelineKind kind, const ModelFacts& model) {
  auto blank = r.prompt.find_first_not_of(" \t\r\n") == std::string::npos;
  LTX2_CHECK(!blank, "--prompt is empty");
  // (Unset, the duration head predicts it: checked last, below.)
  if (r.num_frames != kNumFramesFromDurationHead)
    LTX2_CHECK(r.num_frames >= 1 && (r.num_frames - 1) % 8 == 0,
               "--num-frames must be 8k+1 (1, 9, 17, ..., 121, ...), got {}", r.num_frames);
  // At least 64 pixels a side whatever the multiple: the video decoder's reflect padding needs a
  // latent of 2 x 2 (32 pixels a latent cell).
  constexpr int kMinSide = 64;
  const int multiple = pipeline_traits(kind).size_multiple;
  const std::string sizes = multiple >= kMinSide
                                ? fmt::format("a positive multiple of {}", multiple)
                                : fmt::format("a multiple of {} of at least {}", multiple, kMinSide);
  LTX2_CHECK(r.height >= kMinSide && r.height % multiple == 0,
             "--height must be {} for the {} pipeline, got {}", sizes, pipeline_name(kind), r.height);
  LTX2_CHECK(r.width >= kMinSide && r.width % multiple == 0, "--width must be {} for the {} pipeline, got {}",
             sizes, pipeline_name(kind), r.width);
  LTX2_CHECK(r.num_frames <= kMaxNumFrames, "--num-frames must be at most {}, got {}", kMaxNumFrames,
             r.num_frames);
  LTX2_CHECK(r.height <= kMaxVideoSide, "--height must be at most {}, got {}", kMaxVideoSide, r.height);
  LTX2_CHECK(r.width <= kMaxVideoSide, "--width must be at most {}, got {}", kMaxVideoSide, r.width);
  LTX2_CHECK(std::isfinite(r.frame_rate) && r.frame_rate >= 1 && r.frame_rate <= 240,
             "--frame-rate must be between 1 and 240, got {}", r.frame_rate);
  // (With --num-frames unset, the longest video the duration head can ask for.)
  const int64_t tokens = video_tokens(r);
  LTX2_CHECK(
      tokens <= kMaxVideoTokens,
      "--height x --width x --num-frames {}x{}x{} is {} video tokens at full size; at most {} fit (the "
      "transformer's activations alone take about 100 KiB a token, more than a GPU holds beyond that)",
      r.height, r.width, max_num_frames(r), tokens, kMaxVideoTokens);
  if (pipeline_traits(kind).guided) {
    // One step has no schedule: the LTX2 scheduler's stretch to the terminal sigma divides 0 by 0
    // (the reference's sigmas are NaN then).
    LTX2_CHECK(r.num_inference_steps >= 2 && r.num_inference_steps <= 1000,
               "--num-inference-steps must be between 2 and 1000, got {}", r.num_inference_steps);
    check_guidance(r.video_guidance, "video");
    check_guidance(r.audio_guidance, "audio");
    LTX2_CHECK(r.max_batch_size >= 1 && r.max_batch_size <= 4,
               "--max-batch-size must be between 1 and 4 (a step has at most 4 guidance passes), got {}",
               r.max_batch_size);
    for (const auto& [flag, strength] :
         {std::pair{"--distilled-lora-strength-stage-1", r.distilled_lora_strength_stage_1},
          std::pair{"--distilled-lora-strength-stage-2", r.distilled_lora_strength_stage_2}})
      LTX2_CHECK(std::isfinite(strength), "{} must be a finite number, got {}", flag, strength);
    for (const auto& [modality, g] :
         {std::pair{"video", &r.video_guidance}, std::pair{"audio", &r.audio_guidance}})
      for (int b : g->stg_blocks)
        LTX2_CHECK(model.transformer_blocks == 0 || b < model.transformer_blocks,
                   "--{}-stg-blocks: block {} is not in the model, which has {} blocks", modality, b,
                   model.transformer_blocks);
  }
  for (const auto& im : r.images) {
    check_readable_file(im.path, "--image");
    try {
      media::read_image_size(im.path);  // a PNG, JPEG or WebP of an accepted size (its header only)
    } catch (const Error& e) {
      LTX2_FAIL("--image {}", e.what());  // the reader's message starts with the path
    }
    // (With --num-frames unset, checked again against the predicted length: check_image_frames.)
    LTX2_CHECK(im.frame >= 0 && im.frame < max_num_frames(r),
               "--image {}: frame {} is outside the video's {} frames", im.path, im.frame, max_num_frames(r));
    LTX2_CHECK(std::isfinite(im.strength) && im.strength >= 0 && im.strength <= 1,
               "--image {}: strength must be in [0, 1], got {}", im.path, im.strength);
    LTX2_CHECK(im.crf >= -1 && im.crf <= 51, "--image {}: crf must be in [0, 51], got {}", im.path, im.crf);
  }
  LTX2_CHECK(
      !r.enhance_prompt || model.gemma_enhances,
      "--enhance-prompt: the text encoder is LTX-2.5's Gemma 4 (gemma4_unified), which only encodes; the "
      "reference rewrites prompts with a separate instruct Gemma, which this engine does not take yet");
  // Image-to-video enhancement shows Gemma the first --image through its vision tower.
  LTX2_CHECK(!r.enhance_prompt || r.images.empty() || model.gemma_no_vision.empty(),
             "--enhance-prompt with --image: {}, which shows Gemma the image; use Gemma 3's full checkpoint "
             "or drop one of the flags",
             model.gemma_no_vision);
  if (!r.enhance_system_prompt.empty()) {
    LTX2_CHECK(r.enhance_prompt, "--enhance-system-prompt is only used with --enhance-prompt");
    check_readable_file(r.enhance_system_prompt, "--enhance-system-prompt");
  }
  LTX2_CHECK(!r.output_path.empty(), "--output-path is required");
  media::ClipFormat format{};
  std::string target = r.output_path;  // what is renamed into place: the file, or a sequence's folder
  try {
    format = media::clip_format(r.output_path);
    if (format == media::ClipFormat::PngSequence) {
      const media::FramePattern pattern = media::parse_frame_pattern(r.output_path);
      media::check_sequence_folder(pattern);
      target = pattern.folder;
    }
  } catch (const Error& e) {
    LTX2_FAIL("--output-path {}: {}", r.output_path, e.what());
  }
  LTX2_CHECK(!(r.no_audio && format == media::ClipFormat::Wav),
             "--no-audio: --output-path {} is the audio alone; drop one of them", r.output_path);
  // (The finished file is renamed onto the path: onto a folder that fails, after all the work.)
  if (format != media::ClipFormat::PngSequence)
    LTX2_CHECK(!fs::is_directory(target), "--output-path {}: is a folder", r.output_path);
  if (format == media::ClipFormat::Y4m && output_has_audio(r)) {
    const std::string wav = media::wav_path_for(r.output_path);
    LTX2_CHECK(!fs::is_directory(wav), "--output-path {}: its audio file {} is a folder", r.output_path, wav);
  }
  const fs::path out(target);
  fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  LTX2_CHECK(fs::is_directory(dir), "--output-path {}: folder {} does not exist", r.output_path,
             dir.string());
  LTX2_CHECK(access(dir.c_str(), W_OK) == 0, "--output-path {}: folder {} is not writable", r.output_path,
             dir.string());
  // --num-frames unset: the duration head predicts it (the reference's AutoDuration() default), which
  // a model without one cannot: the reference's error, naming the flag.
  if (r.num_frames == kNumFramesFromDurationHead)
    LTX2_CHECK(model.duration_head,
               "--num-frames is required: the model has no duration head to predict the length from (LTX-2.5 "
               "checkpoints carry one; a split layout names it with --duration-head-path)");
}

namespace {

// Gemma comes from --gemma-root, or from a split layout's --text-encoder-path file that holds it:
// one of them, with its config, weights and tokenizer there (headers only are read).
void check_gemma_source(const ModelPaths& p) {
  const bool file_has_gemma = !p.text_encoder.empty() && Gemma3TextModel::held_by(p.text_encoder);
  if (p.gemma_root.empty())
    LTX2_CHECK(file_has_gemma, "--gemma-root is required (the Gemma 3 text encoder){}",
               p.text_encoder.empty()
                   ? ""
                   : fmt::format(": the --text-encoder-path file {} holds no Gemma", p.text_encoder));
  else
    LTX2_CHECK(!file_has_gemma, "--gemma-root {} and --text-encoder-path {} both hold Gemma: give one",
               p.gemma_root, p.text_encoder);
  const char* flag = file_has_gemma ? "--text-encoder-path" : "--gemma-root";
  try {
    Gemma3TextModel::locate(p.gemma_source());
    locate_gemma_tokenizer(p.gemma_source());
  } catch (const Error& e) {
    LTX2_FAIL("{} {}", flag, e.what());
  }
}

}  // namespace

void validate_model_paths(const ModelPaths& p, PipelineKind kind) {
  const char* ckpt_flag =
      kind == PipelineKind::Distilled ? "--distilled-checkpoint-path" : "--checkpoint-path";
  bool mono = !p.checkpoint.empty();
  LTX2_CHECK(!(mono && p.split()),
             "{} (monolith) cannot be mixed with --transformer-path/--text-encoder-path/--audio-vae-path/"
             "--duration-head-path (split layout)",
             ckpt_flag);
  if (mono) {
    check_readable_file(p.checkpoint, ckpt_flag);
  } else {
    LTX2_CHECK(p.split(),
               "give {} (monolith) or --transformer-path, --text-encoder-path, --video-vae-path "
               "and --audio-vae-path (split layout)",
               ckpt_flag);
    check_readable_file(p.transformer, "--transformer-path");
    check_readable_file(p.text_encoder, "--text-encoder-path");
    check_readable_file(p.video_vae, "--video-vae-path");
    check_readable_file(p.audio_vae, "--audio-vae-path");
    if (!p.duration_head.empty()) check_readable_file(p.duration_head, "--duration-head-path");
  }
  if (mono && !p.video_vae.empty()) check_readable_file(p.video_vae, "--video-vae-path");
  check_gemma_source(p);
  if (pipeline_traits(kind).refines) check_readable_file(p.spatial_upsampler, "--spatial-upsampler-path");
  for (const auto& l : p.loras) {
    check_readable_file(l.path, "--lora");
    LTX2_CHECK(std::isfinite(l.strength), "--lora {}: strength is not finite", l.path);
  }
  if (pipeline_traits(kind).distilled_lora) {
    LTX2_CHECK(!p.distilled_loras.empty(), "--distilled-lora is required for the {} pipeline",
               pipeline_name(kind));
    // The reference's HQ pipeline uses only the first and drops the others unsaid: refuse them.
    LTX2_CHECK(!pipeline_traits(kind).lora_in_stage1 || p.distilled_loras.size() == 1,
               "--distilled-lora: the HQ pipeline takes one (its strength per stage is "
               "--distilled-lora-strength-stage-1/-2), got {}",
               p.distilled_loras.size());
    for (const LoraFile& l : p.distilled_loras) {
      check_readable_file(l.path, "--distilled-lora");
      LTX2_CHECK(std::isfinite(l.strength), "--distilled-lora {}: strength is not finite", l.path);
    }
  }
}

}  // namespace ltx2
