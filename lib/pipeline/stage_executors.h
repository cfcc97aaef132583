// The seams through which a parallel strategy runs parts of a pipeline. The pipeline declares them
// here, next to its stage plan (generation_flow.h), and gives each stage its own seat; lib/parallel
// implements them (sequence parallel, tiled data parallel, Gemma and the duration head on one
// rank); the fleet (lib/runtime) builds them on every rank and carries their results across
// processes. An empty seat runs that part in this process, as the single-process engine does.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/duration/duration_head.h"
#include "models/text/prompt_encoder.h"
#include "models/transformer/transformer.h"
#include "models/video_vae/decoder.h"
#include "models/video_vae/diffusion_decoder.h"
#include "models/video_vae/tiling.h"
#include "pipeline/request.h"

namespace ltx2::pipeline {

struct PipelineModels;

// One transformer pass of a stage on `model` (its weights as they are now, LoRAs included).
class TransformerExecutor {
 public:
  virtual ~TransformerExecutor() = default;
  virtual models::transformer::TransformerOutput forward(
      const models::transformer::Transformer& model, const models::transformer::Modality* video,
      const models::transformer::Modality* audio,
      const models::transformer::BatchedPerturbations& perturbations) = 0;
  // How many of a guided step's passes the stage hands to one forward, asked before each step with
  // the request's --max-batch-size. An executor that spreads the passes over ranks takes them all
  // and batches each rank's share by `max_batch_size` itself.
  virtual int passes_per_call(int max_batch_size) { return max_batch_size; }
};

// Decodes a video latent [B, C, F, H, W] (timestep undefined unless the decoder is timestep
// conditioned) with the pipeline's tile plan, handing runs of decoded frames [B, 3, n, H', W'] in
// time order to on_chunk (an executor whose frames reach the caller another way calls it for none).
class VideoDecodeExecutor {
 public:
  virtual ~VideoDecodeExecutor() = default;
  virtual void decode(const video_vae::VideoDecoder& decoder, const Tensor& latent, const Tensor& timestep,
                      const video_vae::DecodeTilePlan& plan,
                      const std::function<void(const Tensor& frames)>& on_chunk) = 0;
  // LTX-2.5's diffusion decoder on `latent` with its noise draws (noise_shapes) over `plan`
  // (DiffusionVideoDecoder::tile_plan). By default in this process, as DiffusionVideoDecoder::decode.
  virtual void decode_diffusion(const video_vae::DiffusionVideoDecoder& decoder, const Tensor& latent,
                                const std::vector<Tensor>& noise, const tiling::TilePlan& plan,
                                const std::function<void(const Tensor& frames)>& on_chunk) {
    decoder.decode(latent, noise, plan, on_chunk);
  }
  // The free device bytes a decode's tiling is chosen for, given this process's: an executor that
  // spreads tiles over ranks returns the least over them, so every rank cuts the same tiles.
  virtual uint64_t tiling_budget(uint64_t free_bytes) { return free_bytes; }
};

// Encodes the prompts (positive first) into contexts on the transformer's device, the first
// enhanced before when asked (PromptEncoder::encode).
class TextEncodeExecutor {
 public:
  virtual ~TextEncodeExecutor() = default;
  virtual std::vector<EncodedPrompt> encode(PipelineModels& models, const std::vector<std::string>& prompts,
                                            const std::optional<EnhanceSettings>& enhance_first) = 0;
};

// The frame count of a request that leaves --num-frames unset, from its encoded prompt's contexts
// [1, S, C]: resolve_num_frames (pipeline_models.h) on `head`, "duration.seconds" to probe_seconds
// where it runs. An executor that shares one prediction across ranks gives every rank the same count.
class DurationExecutor {
 public:
  virtual ~DurationExecutor() = default;
  virtual int num_frames(const DurationHead* head, const GenerationRequest& request,
                         const Tensor& video_context, const Tensor& audio_context,
                         const std::function<void(const Tensor&)>& probe_seconds) = 0;
};

// Who runs what. Empty: in this process.
struct StageExecutors {
  std::shared_ptr<TransformerExecutor> stage1, stage2;
  // Stage 2's sigmas where its executor needs others (tiled data parallel: the reference's
  // lower-start [0.625, 0.4, 0.0], multigpu.md 4.8); empty: the distilled list.
  std::vector<float> stage2_sigmas;
  std::shared_ptr<VideoDecodeExecutor> video_decode;
  std::shared_ptr<TextEncodeExecutor> text_encode;
  std::shared_ptr<DurationExecutor> duration;
};

}  // namespace ltx2::pipeline
