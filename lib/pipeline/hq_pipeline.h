// The HQ two-stage pipeline (the reference's TI2VidTwoStagesHQPipeline): the two-stage pipeline's
// shape (guided stage 1 at half resolution, upsampling, unguided stage 2 at full resolution on the
// distilled sigmas), with the res_2s second-order sampler in both stages, the distilled LoRA in
// both (at the request's distilled_lora_strength_stage_1 / _2: 0.25 and 0.5 by default), stage
// 1's sigmas shifted for its own token count, and the reference's HQ parameters as the request's
// defaults (default_request). The audio is decoded from stage 1.
#pragma once

#include <memory>

#include "pipeline/noise_source.h"
#include "pipeline/pipeline_models.h"
#include "pipeline/request.h"

namespace ltx2::pipeline {

class HqPipeline {
 public:
  // paths.distilled_loras holds one (its strength is not used: the request gives one per stage).
  explicit HqPipeline(const ModelPaths& paths, PipelineOptions options = {});

  // Runs a request that passed validate_request (see TwoStagePipeline::run). `noise` null: Philox
  // keyed by the request's seed.
  void run(const GenerationRequest& request, const PipelineCallbacks& callbacks,
           LatentNoiseSource* noise = nullptr);

  const PipelineModels& models() const { return *models_; }

 private:
  std::unique_ptr<PipelineModels> models_;
  std::shared_ptr<const LoraWeights> distilled_lora_;
};

}  // namespace ltx2::pipeline
