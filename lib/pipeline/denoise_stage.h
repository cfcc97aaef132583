// One diffusion stage of the pipelines: the Euler loop (or the Euler-ancestral loop of 2.5+
// distilled stage 1, or the HQ pipeline's second-order res_2s loop) over a video and an audio
// latent state, denoised jointly by the transformer
// either with one pass per step (SimpleDenoiser) or with the guidance passes of MultiModalGuider
// (FactoryGuidedDenoiser), one transformer call per pass or per batch of passes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/transformer/transformer.h"
#include "pipeline/guiders.h"
#include "pipeline/latent_state.h"
#include "pipeline/noise_source.h"
#include "pipeline/pipeline_models.h"

namespace ltx2::pipeline {

struct StageContexts {
  Tensor video, audio;  // [1, S, C] text contexts
};

struct StageGuidance {
  MultiModalGuiderFactory video, audio;
  StageContexts negative;
  // Guidance passes per transformer call (the reference's --max-batch-size): a step's passes run
  // in calls of up to this many, concatenated on the batch axis in pass order (cond, uncond, ptb,
  // mod), each with its own context and perturbations. 1: one call per pass.
  int max_batch_size = 1;
};

// The loop a stage runs: Euler (the default), Euler ancestral (eta 1) or res_2s (the reference's
// res2s_audio_video_denoising_loop: a midpoint evaluation per step, SDE noise at the midpoint and
// at the step, eta 0.5; with a final sigma of 0 its last step ends at 0.0011 and one more
// evaluation denoises fully).
enum class Sampler { Euler, EulerAncestral, Res2s };

struct DenoiseStage {
  std::string name;  // "stage1" / "stage2": progress and probe names
  std::vector<float> sigmas;
  const models::transformer::Transformer* transformer = nullptr;
  Device device = Device::cpu();  // where the transformer's weights are; the loop's states move there
  StageContexts positive;
  std::optional<StageGuidance> guidance;         // unset: one unguided pass per step
  Sampler sampler = Sampler::Euler;
  LatentNoiseSource* step_noise = nullptr;       // the Euler-ancestral and res_2s loops' draws
  int stage_index = 0;                           // which stage (0, 1): keys the res_2s loop's draws
  TransformerExecutor* executor = nullptr;       // null: transformer->forward
};

// Runs the loop in place on both states, which move to stage.device first and stay there (so
// nothing crosses PCIe between steps but the ancestral noise draws). Probes (host float32):
// <name>.step<i>.<video|audio>.denoised (before the blend with the clean latent), .latent (after the step)
// and, guided, .pass_<cond|uncond|ptb|mod> (res_2s: step<i> is the step's first evaluation,
// step<i>.mid its midpoint's, step<n> the final one's).
void run_denoise_stage(const DenoiseStage& stage, LatentState& video, LatentState& audio,
                       const PipelineCallbacks& callbacks);

}  // namespace ltx2::pipeline
