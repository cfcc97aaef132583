// The distilled pipeline (the reference's DistilledPipeline): loads once, then runs requests.
// Stage 1 at half resolution with the 8 distilled sigmas and one unguided pass per step, stage 2
// at full resolution with the 3 stage-2 sigmas, the same transformer (checkpoint + user LoRAs) in
// both (stage 1 runs the Euler-ancestral loop on model_version >= 2.5 checkpoints); the audio is
// decoded from stage 2.
#pragma once

#include <memory>

#include "pipeline/noise_source.h"
#include "pipeline/pipeline_models.h"
#include "pipeline/request.h"

namespace ltx2::pipeline {

class DistilledPipeline {
 public:
  explicit DistilledPipeline(const ModelPaths& paths, PipelineOptions options = {});

  // Runs a request that passed validate_request (GenerationEngine::generate runs it: the pipeline
  // trusts its caller, so a fleet's ranks do not check again what the driver checked). `noise`
  // null: Philox keyed by the request's seed.
  void run(const GenerationRequest& request, const PipelineCallbacks& callbacks,
           LatentNoiseSource* noise = nullptr);

  const PipelineModels& models() const { return *models_; }

 private:
  std::unique_ptr<PipelineModels> models_;
};

}  // namespace ltx2::pipeline
