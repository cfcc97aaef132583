// The pipelines: loaded once, then run requests. Each kind is the reference's pipeline of that
// name, over the one generation flow (generation_flow.h); what a kind's stages are is decided in
// one place, stage_plan:
//   Distilled  DistilledPipeline: stage 1 at half resolution on the 8 distilled sigmas, one
//              unguided pass per step (the Euler-ancestral loop on model_version >= 2.5), stage 2
//              on the 3 stage-2 sigmas, the same transformer (checkpoint + user LoRAs) in both; the
//              audio is stage 2's.
//   TwoStage   TI2VidTwoStagesPipeline: stage 1 at half resolution with the base checkpoint, the
//              LTX2 scheduler's sigmas (4096-token shift) and MultiModalGuider guidance with the
//              negative prompt; stage 2 with the distilled LoRAs fused on top, unguided; the audio
//              is stage 1's.
//   Hq         TI2VidTwoStagesHQPipeline: as TwoStage with the res_2s loop in both stages, the
//              (one) distilled LoRA in both at the request's per-stage strengths and stage 1's
//              sigmas shifted for its own token count.
//   OneStage   TI2VidOneStagePipeline: one guided stage at full resolution (no upsampler, no
//              distilled LoRA); the audio is its own.
//   Keyframes  KeyframeInterpolationPipeline: TwoStage with every image a guiding keyframe in both
//              stages (frame 0 included); the audio is stage 2's.
// A user LoRA is fused at load and stays; a stage's LoRAs are fused for the stage and the clean
// weights come back after it. The request's negative prompt is used as given (the CLI fills in the
// reference's default).
#pragma once

#include <memory>
#include <vector>

#include "pipeline/generation_flow.h"
#include "pipeline/noise_source.h"
#include "pipeline/pipeline_models.h"
#include "pipeline/request.h"

namespace ltx2::pipeline {

// The stages of `kind` for a request (distilled_loras: the --distilled-lora files' weights).
StagePlan stage_plan(PipelineKind kind, const GenerationRequest& request,
                     const std::vector<int>& model_version,
                     const std::vector<LoraWithStrength>& distilled_loras);

class Pipeline {
 public:
  // Loads the models `kind` runs (validating the paths for it first).
  Pipeline(PipelineKind kind, const ModelPaths& paths, PipelineOptions options = {});

  // Runs a request that passed validate_request (GenerationEngine::generate runs it: the pipeline
  // trusts its caller, so a fleet's ranks do not check again what the driver checked). `noise`
  // null: Philox keyed by the request's seed.
  void run(const GenerationRequest& request, const PipelineCallbacks& callbacks,
           LatentNoiseSource* noise = nullptr);

  PipelineKind kind() const { return kind_; }
  const PipelineModels& models() const { return *models_; }

 private:
  PipelineKind kind_;
  std::unique_ptr<PipelineModels> models_;
  std::vector<LoraWithStrength> distilled_loras_;
};

// Each kind by the reference's name.
template <PipelineKind Kind>
class PipelineOf : public Pipeline {
 public:
  explicit PipelineOf(const ModelPaths& paths, PipelineOptions options = {})
      : Pipeline(Kind, paths, std::move(options)) {}
};
using DistilledPipeline = PipelineOf<PipelineKind::Distilled>;
using TwoStagePipeline = PipelineOf<PipelineKind::TwoStage>;
using HqPipeline = PipelineOf<PipelineKind::Hq>;
using OneStagePipeline = PipelineOf<PipelineKind::OneStage>;
using KeyframePipeline = PipelineOf<PipelineKind::Keyframes>;

}  // namespace ltx2::pipeline
