// What a user asks a pipeline for: the generation request (prompt, size, seed, guidance, image
// conditions, output) and where the model files are. Their fields (flags, JSON keys, the checks of
// one value) are declared in request_fields.h; the checks across fields are here, the one place a
// request and the model paths are validated, before any work, with messages that name the flag.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ltx2 {

// The pipelines (each is a program of its own: README, "Commands"): the reference's
// DistilledPipeline, TI2VidTwoStagesPipeline, TI2VidOneStagePipeline,
// KeyframeInterpolationPipeline and TI2VidTwoStagesHQPipeline.
enum class PipelineKind { Distilled, TwoStage, OneStage, Keyframes, Hq };

// What a pipeline's kind decides about its request, its model files and its stages, in one place.
struct PipelineTraits {
  const char* name;
  bool guided;               // stage 1 with the negative prompt and MultiModalGuider guidance
  bool refines;              // stage 1 at half size, upsampled, refined by stage 2 (needs the upsampler)
  bool distilled_lora;       // stage 2 with the distilled LoRA on top (--distilled-lora required)
  bool lora_in_stage1;       // the distilled LoRA on top in stage 1 too, at a strength per stage (HQ)
  bool defaults_by_version;  // steps and STG blocks (the guided ones') by the checkpoint's version;
                             // else the pipeline's own parameters (HQ: default_request)
  bool images_as_keyframes;  // every --image a guiding keyframe (frame 0 too), not frame 0 replaced
  int size_multiple;         // --height and --width: 64 when stage 1 runs at half size, else 32
};
const PipelineTraits& pipeline_traits(PipelineKind k);
const char* pipeline_name(PipelineKind k);

struct GuidanceParams {
  double cfg_scale = 1.0, stg_scale = 0.0, rescale_scale = 0.0, modality_scale = 1.0;
  int skip_step = 0;
  std::vector<int> stg_blocks;
};

struct ImageCondition {
  std::string path;
  int frame = 0;          // pixel frame index; 0 replaces latent frame 0, > 0 (or any, in the
                          // keyframe pipeline) appends keyframe tokens
  double strength = 1.0;  // 1 = keep the image exactly
  int crf = -1;           // H.264 re-compression of the image; -1 = the model version's default, 0 = off
};

struct LoraFile {
  std::string path;
  double strength = 1.0;
};

struct ModelPaths {
  // Monolith layout: one checkpoint with transformer, connectors, VAE, audio VAE and vocoder.
  std::string checkpoint;
  std::string gemma_root;
  // Split layout: one file per component (the video VAE path is also allowed with a monolith).
  std::string transformer, text_encoder, video_vae, audio_vae;
  std::string spatial_upsampler;
  // LTX-2.5's duration head (models/duration): a split layout's --duration-head-path file; a monolith
  // checkpoint holds it itself when it has one.
  std::string duration_head;
  std::vector<LoraFile> loras;
  // --distilled-lora (repeatable): fused on top of the user LoRAs for the refining stage, by the
  // pipelines with pipeline_traits().distilled_lora only (the HQ one takes exactly one).
  std::vector<LoraFile> distilled_loras;
  bool split() const {
    return !transformer.empty() || !text_encoder.empty() || !audio_vae.empty() || !duration_head.empty();
  }
  // Where Gemma (config, weights, tokenizer) is read: --gemma-root, else the split layout's
  // --text-encoder-path file, which then holds it (the reference's packed text-encoder file);
  // validate_model_paths checks that one of them does.
  const std::string& gemma_source() const { return gemma_root.empty() ? text_encoder : gemma_root; }
};

struct GenerationRequest {
  std::string prompt;
  std::string negative_prompt;
  int64_t seed = 10;
  // num_frames kNumFramesFromDurationHead (--num-frames unset): the model's duration head predicts it
  // from the prompt's contexts (resolve_num_frames), as the reference's AutoDuration() default does.
  int height = 1024, width = 1536, num_frames = 0;
  double frame_rate = 24.0;
  int num_inference_steps = 30;
  GuidanceParams video_guidance, audio_guidance;
  int max_batch_size = 1;  // guidance passes per transformer call (denoise_stage.h)
  // The HQ pipeline's distilled LoRA strength in each stage (the reference's defaults).
  double distilled_lora_strength_stage_1 = 0.25, distilled_lora_strength_stage_2 = 0.5;
  std::vector<ImageCondition> images;
  // The output (media/clip_writer.h): .mp4, .y4m (+ .wav), .wav (the audio only) or a PNG
  // sequence's frame pattern (frames/%05d.png, + frames/audio.wav).
  std::string output_path;
  bool no_audio = false;  // --no-audio: no audio track (and no audio decode)
  // --enhance-prompt: Gemma rewrites the prompt before it is encoded (models/text/prompt_enhancer.h),
  // with the system text of the file --enhance-system-prompt names (empty: ltx2's own).
  bool enhance_prompt = false;
  std::string enhance_system_prompt;
};

// --num-frames unset: the length is the duration head's prediction, clamped to [1 s, 20 s] at the
// frame rate and put on the 8k + 1 grid (models/duration/duration_head.h, duration_to_frames).
constexpr int kNumFramesFromDurationHead = 0;
constexpr double kDurationMinSeconds = 1.0, kDurationMaxSeconds = 20.0;
// The most frames a request can have: its --num-frames, or the longest the duration head can give.
int max_num_frames(const GenerationRequest& r);

// What the run must decode for the output: the video unless the output is a .wav, the audio
// unless --no-audio. The pipelines skip the decode (and its models) of what is not wanted.
bool output_has_video(const GenerationRequest& r);
bool output_has_audio(const GenerationRequest& r);

// The reference's DEFAULT_NEGATIVE_PROMPT.
const std::string& default_negative_prompt();
// The reference's LTX-2.3 guidance defaults (video: cfg 3, stg 1, rescale 0.7, modality 3,
// blocks [28]; audio: cfg 7, stg 1, rescale 0.7, modality 3, blocks [28]).
GuidanceParams default_video_guidance();
GuidanceParams default_audio_guidance();
// The request a pipeline runs when no flag or field says otherwise: for the guided pipelines the
// reference's negative prompt and guidance; for the HQ pipeline its LTX_2_3_HQ_PARAMS (15 steps,
// no STG, rescale 0.45 / 1.0, 1088 x 1920).
GenerationRequest default_request(PipelineKind kind);

// What a checkpoint's model_version (parse_model_version) decides, as the reference's detect_params
// gives it: the guided pipelines' stage-1 steps and STG blocks (video and audio alike; the HQ
// pipeline has its own, default_request) and the H.264 CRF a conditioning image is re-compressed
// at. LTX-2.0, and a checkpoint that declares no version: 40 steps, block 29, CRF 33; 2.3 and later:
// 30 steps, block 28; 2.4 and later: CRF 18.
struct VersionDefaults {
  int num_inference_steps = 30;
  std::vector<int> stg_blocks;
  int image_crf = 33;
};
VersionDefaults version_defaults(const std::vector<int>& model_version);

// The largest request the engine takes: frames and pixels a side, and video tokens at full size
// (latent frames x H/32 x W/32; 1024x1536x121 is 24,576). Beyond 2^20 tokens the transformer's
// activations alone (about 100 KiB a token in bf16) outgrow a GPU's memory.
constexpr int kMaxNumFrames = 2049;
constexpr int kMaxVideoSide = 8192;
constexpr int64_t kMaxVideoTokens = int64_t{1} << 20;
int64_t video_tokens(const GenerationRequest& r);

// What the model files say that a request is checked against and its output needs, read from the
// checkpoint's metadata without loading a weight (read_model_facts, pipeline_models.h).
struct ModelFacts {
  int64_t vocoder_sample_rate = 0;  // the audio's rate: an output's audio stream opens before it arrives
  int transformer_blocks = 0;       // 0: unknown; bounds the STG blocks
  std::vector<int> model_version;   // the checkpoint's metadata model_version, parsed; empty: none
  bool duration_head = false;       // a duration head to predict --num-frames with (LTX-2.5)
  bool gemma_enhances = true;       // the Gemma can rewrite prompts (LTX-2.5's gemma4_unified only encodes)
  // The Gemma has a vision tower (vision_config and its tensors) to be shown --image's image when it
  // rewrites the prompt; "" when it has, else the one-line reason it has not (naming the Gemma).
  std::string gemma_no_vision;
};

// The one check of a request (the engine's entry runs it, GenerationEngine::generate; the programs
// run it before loading any model). Throws ltx2::Error with a one-line message naming the flag
// when the request cannot run:
// frames not 8k+1 (unset: without a duration head in the model), height/width not multiples of the pipeline's
// size_multiple, a size beyond the bounds above, an image that is not a readable PNG, JPEG or WebP of an
// accepted size (its header is read), strengths outside [0, 1], image frames outside the video, empty prompt,
// an output path of no known form (media::clip_format), a folder or in a missing folder (a PNG sequence: its
// folder a file, or a folder holding other files), --no-audio with a .wav, non-finite or negative scales;
// with the model's facts, STG blocks the model does not have.
void validate_request(const GenerationRequest& r, PipelineKind kind, const ModelFacts& model = {});
// Files must exist and be readable; monolith and split layouts may not be mixed; the pieces each
// pipeline needs must be there. Content is checked when the files are opened (before any work).
void validate_model_paths(const ModelPaths& p, PipelineKind kind);

}  // namespace ltx2
