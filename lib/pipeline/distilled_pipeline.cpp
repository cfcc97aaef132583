// The distilled pipeline over the shared generation flow.
#include "pipeline/distilled_pipeline.h"

#include "pipeline/generation_flow.h"
#include "pipeline/schedulers.h"

namespace ltx2::pipeline {

DistilledPipeline::DistilledPipeline(const ModelPaths& paths, PipelineOptions options)
    : models_(PipelineModels::load(paths, PipelineKind::Distilled, std::move(options))) {}

void DistilledPipeline::run(const GenerationRequest& request, const PipelineCallbacks& callbacks,
                            LatentNoiseSource* noise) {
  PhiloxNoiseSource philox(static_cast<uint64_t>(request.seed));
  StagePlan plan;
  plan.stage1_sigmas = distilled_sigmas();
  if (models_->model_version >= std::vector<int>{2, 5}) plan.stage1_sampler = Sampler::EulerAncestral;
  run_generation_flow(*models_, request, plan, noise ? *noise : philox, callbacks);
}

}  // namespace ltx2::pipeline
