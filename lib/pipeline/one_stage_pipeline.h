// The one-stage text/image-to-video pipeline (the reference's TI2VidOneStagePipeline): loads once,
// then runs requests. One stage at full resolution with the base checkpoint (+ user LoRAs), the
// LTX2 scheduler's sigmas and MultiModalGuider guidance with the negative prompt; an image at frame
// 0 replaces the first latent frame, later ones are keyframes. No upsampler and no distilled LoRA.
#pragma once

#include <memory>

#include "pipeline/noise_source.h"
#include "pipeline/pipeline_models.h"
#include "pipeline/request.h"

namespace ltx2::pipeline {

class OneStagePipeline {
 public:
  explicit OneStagePipeline(const ModelPaths& paths, PipelineOptions options = {});

  // Runs a request that passed validate_request (see TwoStagePipeline::run). `noise` null: Philox
  // keyed by the request's seed.
  void run(const GenerationRequest& request, const PipelineCallbacks& callbacks,
           LatentNoiseSource* noise = nullptr);

  const PipelineModels& models() const { return *models_; }

 private:
  std::unique_ptr<PipelineModels> models_;
};

}  // namespace ltx2::pipeline
