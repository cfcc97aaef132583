// The one-stage pipeline over the shared generation flow.
#include "pipeline/one_stage_pipeline.h"

#include "pipeline/generation_flow.h"
#include "pipeline/schedulers.h"

namespace ltx2::pipeline {

OneStagePipeline::OneStagePipeline(const ModelPaths& paths, PipelineOptions options)
    : models_(PipelineModels::load(paths, PipelineKind::OneStage, std::move(options))) {}

void OneStagePipeline::run(const GenerationRequest& request, const PipelineCallbacks& callbacks,
                           LatentNoiseSource* noise) {
  PhiloxNoiseSource philox(static_cast<uint64_t>(request.seed));
  StagePlan plan;
  plan.guided_stage1 = true;
  plan.stage1_sigmas = ltx2_sigmas(request.num_inference_steps, 0);
  plan.refine = false;
  run_generation_flow(*models_, request, plan, noise ? *noise : philox, callbacks);
}

}  // namespace ltx2::pipeline
