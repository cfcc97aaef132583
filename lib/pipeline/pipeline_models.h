// Everything a two-stage pipeline loads once and then reuses for every request: the prompt
// encoder, the transformer (with LoRA switching), the video VAE encoder and decoder, the spatial
// upsampler, the audio VAE decoder and the vocoder; and the callbacks a run reports through.
//
// Layouts (ModelPaths): monolith = one checkpoint (+ an optional separate video VAE file); split =
// transformer (+ connectors), text-encoder, video VAE, audio VAE (+ vocoder) and, optionally,
// duration-head files, each component read from its own file by its key prefix and metadata config
// (as the reference's loaders do: a component file may hold others, e.g. a monolith named as the
// --audio-vae-path). Gemma comes from the Gemma root or the text-encoder file. The transformer's
// attention goes through the given AttentionStrategy.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/audio_vae/audio_decoder.h"
#include "models/duration/duration_head.h"
#include "models/text/prompt_encoder.h"
#include "models/transformer/transformer.h"
#include "models/upsampler/latent_upsampler.h"
#include "models/video_vae/decoder.h"
#include "models/video_vae/decoder_kind.h"
#include "models/video_vae/diffusion_decoder.h"
#include "models/video_vae/encoder.h"
#include "models/video_vae/tiling.h"
#include "models/vocoder/vocoder.h"
#include "pipeline/request.h"
#include "pipeline/residency.h"
#include "pipeline/stage_executors.h"
#include "pipeline/transformer_loras.h"

namespace ltx2::pipeline {

struct PipelineOptions {
  std::shared_ptr<const models::transformer::AttentionStrategy> attention =
      std::make_shared<models::transformer::LocalAttention>();
  DType transformer_dtype = DType::F32;
  // How the transformer's weights are held and multiplied (io/quantization.h); a prequantized
  // checkpoint's scales are honoured whatever the policy.
  Quantization quantization = Quantization::Auto;
  // The transformer's, the video VAE's, the upsampler's, the audio VAE decoder's and the vocoder's
  // (and the text encoder's with text_encoder_on_device); the latents between stages stay on the CPU.
  Device device = Device::cpu();
  // The video VAE's, upsampler's, audio decoder's and vocoder's weights and activations (a BWE
  // vocoder computes in float32 over them). Unset: bf16 on a GPU `device`, float32 on the CPU (bf16
  // on the CPU rounds after every op: the naive bf16 run the GPU tests compare with).
  std::optional<DType> vae_dtype;
  // LTX-2.5's diffusion decoder's tiles (pixels per axis; untiled axes whole). Unset: the tiles the
  // free device memory allows on a GPU (the reference's AUTO_TILING), whole on the CPU.
  std::optional<video_vae::TileSizeConfig> diffusion_decode_tiles;
  // The prompt encoder (Gemma and the embeddings processor) in transformer_dtype on `device`, its
  // contexts left there for the transformer; false: float32 on the CPU.
  bool text_encoder_on_device = false;
  // Who runs the stages' transformer passes, the video decode and the text encoding (all in this
  // process when empty); the fleet puts its parallel strategies here.
  StageExecutors executors;
  // false keeps Gemma off this process's device altogether (with a text_encode executor that
  // encodes elsewhere).
  bool load_text_encoder = true;
  // What stays on the device between jobs (residency.h); unset: every model is loaded once and kept.
  std::optional<ResidencyPlan> residency;

  // The engine's placement rule, in one place: on a GPU every model runs there in bf16 (the text
  // encoder too), as the reference runs them; on the CPU everything is float32.
  static PipelineOptions on_device(Device device);
};

// How a run reports. Every member may be empty.
struct PipelineCallbacks {
  // Stage name ("stage1", "stage2"), step i (0-based) of n, called after each step; the one-step
  // stages "text_encode" and "upsample" mark the end of those phases.
  std::function<void(const std::string& stage, int step, int steps)> progress;
  // The video's frame count once known, before stage 1 and any frame: the request's, or the duration
  // head's prediction when --num-frames is unset (what sizes the frames and the waveform).
  std::function<void(int num_frames)> num_frames;
  // Decoded frames [n, H, W, 3] uint8 RGB on the CPU (ops/rgb8.h), in time order; their
  // concatenation is the video. Each chunk is a fresh tensor the callee may keep. With a probe set,
  // the in-process run also probes each chunk's float32 frames in [0, 1] as "video".
  std::function<void(const Tensor& frames)> video_chunk;
  // The stereo waveform [2, N] and its sample rate, once at the end.
  std::function<void(const Tensor& waveform, int64_t sample_rate)> audio;
  // Named intermediates for parity checks (names as the golden fixtures' out./mid. keys without
  // that prefix, e.g. "stage1.step0.video.denoised").
  std::function<void(const std::string& name, const Tensor& value)> probe;
};

// Hands `t` to callbacks.probe as host float32 (a device tensor is copied out only when probed).
void probe(const PipelineCallbacks& callbacks, const std::string& name, const Tensor& t);

// "2-5-0rc1" / "2.5.0" -> {2, 5, 0}: hyphens read as dots, each part's leading digits, stopping at
// the first part without any.
std::vector<int> parse_model_version(const std::string& text);

// The weight sets of a layout: `ltx` the transformer's and text connectors' (the checkpoint; split:
// the transformer and text-encoder files), `video_vae` and `audio` (audio VAE + vocoder) each from
// its own file in a split layout (the checkpoint's, or --video-vae-path, in a monolith), and the
// duration head's (the checkpoint's, or --duration-head-path; null in a split layout without one).
struct ModelWeightSets {
  std::shared_ptr<const WeightSet> ltx, video_vae, audio, duration_head;
};
ModelWeightSets open_model_weights(const ModelPaths& paths);

// The model's facts (request.h) from the metadata config of the checkpoint (monolith) or of the
// transformer and audio VAE files (split layout), and whether a duration head is there; paths already
// validated. Loads no weight. A --duration-head-path file without one is refused naming the flag.
ModelFacts read_model_facts(const ModelPaths& paths);

// --num-frames for the run: the request's, or (unset) the duration head's prediction from the
// prompt's contexts [1, S, C] at the request's frame rate (duration_to_frames, 1 to 20 s), probed as
// "duration.seconds"; then the request's images are checked against it. Throws naming --num-frames
// when unset and there is no head.
int resolve_num_frames(const DurationHead* head, const GenerationRequest& request,
                       const Tensor& video_context, const Tensor& audio_context,
                       const std::function<void(const Tensor&)>& probe_seconds = {});

// The LoRA files' weights, each with its strength, in order.
std::vector<LoraWithStrength> read_loras(const std::vector<LoraFile>& files);

// The models of a pipeline. The transformer and the video encoder are loaded once; the text
// encoder, the upsampler, the video decoder and the audio decoder + vocoder are too unless the
// residency plan makes them per-phase: then a phase calls acquire() before it runs them (null until
// then) and release() after.
struct PipelineModels {
  ModelPaths paths;
  std::shared_ptr<const WeightSet> ltx;        // transformer, connectors (open_model_weights)
  std::shared_ptr<const WeightSet> video_vae;  // the video VAE's set (ltx unless a separate file)
  std::shared_ptr<const WeightSet> audio;      // the audio VAE's and vocoder's (ltx in a monolith)
  // LTX-2.5's duration head (float32, CPU; a few KB to MB), loaded when the model has one: it
  // predicts --num-frames when the request leaves it unset.
  std::unique_ptr<DurationHead> duration_head;
  std::unique_ptr<PromptEncoder> text;
  TransformerConfig transformer_config;
  std::unique_ptr<TransformerLoras> transformer_weights;
  std::vector<LoraWithStrength> user_loras;
  std::unique_ptr<video_vae::VideoEncoder> video_encoder;
  // The video VAE's decoder, by its config's vae._class_name (video_decoder_kind): the conv decoder
  // in video_decoder, or LTX-2.5's diffusion decoder in diffusion_decoder (ModelPart::VideoDecoder
  // either way); the other stays null.
  video_vae::VideoDecoderKind video_decoder_kind = video_vae::VideoDecoderKind::Conv;
  std::unique_ptr<video_vae::VideoDecoder> video_decoder;
  std::unique_ptr<video_vae::DiffusionVideoDecoder> diffusion_decoder;
  std::unique_ptr<upsampler::LatentUpsampler> upsampler;
  std::unique_ptr<audio_vae::AudioDecoder> audio_decoder;
  std::unique_ptr<vocoder::Vocoder> vocoder;
  AudioVaeDecoderConfig audio_config;  // the stages size the audio latent from it
  PipelineOptions options;
  // The checkpoint's metadata model_version as numbers ("2.5.0" -> {2, 5, 0}); empty when absent.
  std::vector<int> model_version;

  // Opens and loads every component (validating the paths for `kind` first).
  static std::unique_ptr<PipelineModels> load(const ModelPaths& paths, PipelineKind kind,
                                              PipelineOptions options);

  // A transformer over the weights as they are now, with the options' attention strategy.
  models::transformer::Transformer transformer() const;

  // Loads `part` if it is not loaded (the text encoder, upsampler, video decoder or audio).
  void acquire(ModelPart part);
  // Frees `part` unless the residency plan keeps it.
  void release(ModelPart part);
  // The VAE side's dtype (PipelineOptions::vae_dtype or its default).
  DType vae_dtype() const;
};

}  // namespace ltx2::pipeline
