// The flow shared by every pipeline (the reference's DistilledPipeline, TI2VidTwoStagesPipeline,
// TI2VidOneStagePipeline and KeyframeInterpolationPipeline __call__): prompt encoding, stage 1 from
// pure noise (at half resolution when the pipeline refines), then, when it refines, spatial
// upsampling and stage 2 at full resolution re-noised at its first sigma; tiled video decode and
// audio decode. What differs is described by a StagePlan.
#pragma once

#include <functional>
#include <vector>

#include "pipeline/denoise_stage.h"
#include "pipeline/lora_fuse.h"
#include "pipeline/noise_source.h"
#include "pipeline/pipeline_models.h"
#include "pipeline/request.h"

namespace ltx2::pipeline {

struct StagePlan {
  bool guided_stage1 = false;                  // negative prompt + MultiModalGuider in stage 1
  std::vector<float> stage1_sigmas;            // stage 2 always uses the distilled 3-step list
  // Euler-ancestral stage 1: the distilled pipeline on model_version >= 2.5; res_2s: the HQ
  // pipeline's stages.
  Sampler stage1_sampler = Sampler::Euler, stage2_sampler = Sampler::Euler;
  std::vector<LoraWithStrength> stage1_loras;  // fused on top of the user LoRAs for stage 1 only (HQ)
  bool refine = true;                          // stage 1 at half size, upsample, stage 2 (else one stage)
  std::vector<LoraWithStrength> stage2_loras;  // fused on top of the user LoRAs for stage 2 only
  bool audio_from_stage1 = false;              // decode the stage-1 audio latent (two-stage) or stage 2's
  bool images_as_keyframes = false;            // every image a guiding keyframe (the keyframe pipeline)
};

// The stages of a request whose frame count is known (the HQ pipeline's stage-1 sigmas follow it).
using StagePlanFor = std::function<StagePlan(const GenerationRequest&)>;

// Runs one request (already validated) on loaded models: --num-frames unset, the duration head
// predicts it once the prompt is encoded (resolve_num_frames) and the stages are planned for it. The
// transformer's weights are back to base + user LoRAs when it returns or throws.
void run_generation_flow(PipelineModels& models, const GenerationRequest& request,
                         const StagePlanFor& plan_for, LatentNoiseSource& noise,
                         const PipelineCallbacks& callbacks);

// Decoded video [1, 3, n, H, W] in [-1, 1] -> float frames [n, H, W, 3] in [0, 1] (the "video"
// probe; video_chunk receives ops::decoded_to_rgb8 of the same chunk).
Tensor to_frames(const Tensor& decoded);

}  // namespace ltx2::pipeline
