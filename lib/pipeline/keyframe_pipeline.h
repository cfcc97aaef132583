// The keyframe interpolation pipeline (the reference's KeyframeInterpolationPipeline): the
// two-stage pipeline's stages (guided stage 1 at half resolution, upsampling, stage 2 with the
// distilled LoRA), with every image a guiding keyframe in both stages (frame 0 included: its tokens
// are appended, not put in place of the first latent frame), so the video passes through the
// images and the frames between them are generated. The audio is stage 2's.
#pragma once

#include <memory>

#include "pipeline/noise_source.h"
#include "pipeline/pipeline_models.h"
#include "pipeline/request.h"

namespace ltx2::pipeline {

class KeyframePipeline {
 public:
  // paths.distilled_loras must not be empty.
  explicit KeyframePipeline(const ModelPaths& paths, PipelineOptions options = {});

  // Runs a request that passed validate_request (see TwoStagePipeline::run). `noise` null: Philox
  // keyed by the request's seed.
  void run(const GenerationRequest& request, const PipelineCallbacks& callbacks,
           LatentNoiseSource* noise = nullptr);

  const PipelineModels& models() const { return *models_; }

 private:
  std::unique_ptr<PipelineModels> models_;
  std::vector<LoraWithStrength> distilled_loras_;
};

}  // namespace ltx2::pipeline
