// One diffusion stage of the pipelines: the Euler loop (or the Euler-ancestral loop of 2.5+
// distilled stage 1) over a video and an audio latent state, denoised jointly by the transformer
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

struct DenoiseStage {
  std::string name;  // "stage1" / "stage2": progress and probe names
  std::vector<float> sigmas;
  const models::transformer::Transformer* transformer = nullptr;
  Device device = Device::cpu();  // where the transformer's weights are; the loop's states move there
  StageContexts positive;
  std::optional<StageGuidance> guidance;         // unset: one unguided pass per step
  LatentNoiseSource* ancestral_noise = nullptr;  // set: Euler-ancestral loop (eta 1) with these draws
  TransformerExecutor* executor = nullptr;       // null: transformer->forward
};

// Runs the loop in place on both states, which move to stage.device first and stay there (so
// nothing crosses PCIe between steps but the ancestral noise draws). Probes (host float32):
// <name>.step<i>.<video|audio>.denoised (before the blend with the clean latent), .latent (after the step)
// and, guided, .pass_<cond|uncond|ptb|mod>.
void run_denoise_stage(const DenoiseStage& stage, LatentState& video, LatentState& audio,
                       const PipelineCallbacks& callbacks);

}  // namespace ltx2::pipeline
