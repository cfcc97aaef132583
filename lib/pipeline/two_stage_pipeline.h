// The two-stage text/image-to-video pipeline (the reference's TI2VidTwoStagesPipeline): loads
// once, then runs requests. Stage 1 at half resolution with the base checkpoint (+ user LoRAs),
// the LTX2 scheduler's sigmas (4096-token shift) and MultiModalGuider guidance with the negative
// prompt; stage 2 at full resolution with the distilled LoRA fused on top (the clean weights are
// restored afterwards), 3 distilled sigmas, unguided. The audio is decoded from stage 1. The
// request's negative prompt is used as given (the CLI fills in the reference's default).
#pragma once

#include <memory>

#include "pipeline/noise_source.h"
#include "pipeline/pipeline_models.h"
#include "pipeline/request.h"

namespace ltx2::pipeline {

class TwoStagePipeline {
 public:
  // paths.distilled_loras must not be empty.
  explicit TwoStagePipeline(const ModelPaths& paths, PipelineOptions options = {});

  // Runs a request that passed validate_request (GenerationEngine::generate runs it: the pipeline
  // trusts its caller, so a fleet's ranks do not check again what the driver checked). `noise`
  // null: Philox keyed by the request's seed.
  void run(const GenerationRequest& request, const PipelineCallbacks& callbacks,
           LatentNoiseSource* noise = nullptr);

  const PipelineModels& models() const { return *models_; }

 private:
  std::unique_ptr<PipelineModels> models_;
  std::vector<LoraWithStrength> distilled_loras_;
};

}  // namespace ltx2::pipeline
