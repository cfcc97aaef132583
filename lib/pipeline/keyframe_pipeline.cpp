// The keyframe pipeline over the shared generation flow.
#include "pipeline/keyframe_pipeline.h"

#include "io/lora.h"
#include "pipeline/generation_flow.h"
#include "pipeline/schedulers.h"

namespace ltx2::pipeline {

KeyframePipeline::KeyframePipeline(const ModelPaths& paths, PipelineOptions options)
    : models_(PipelineModels::load(paths, PipelineKind::Keyframes, std::move(options))),
      distilled_loras_(read_loras(paths.distilled_loras)) {}

void KeyframePipeline::run(const GenerationRequest& request, const PipelineCallbacks& callbacks,
                           LatentNoiseSource* noise) {
  PhiloxNoiseSource philox(static_cast<uint64_t>(request.seed));
  StagePlan plan;
  plan.guided_stage1 = true;
  plan.stage1_sigmas = ltx2_sigmas(request.num_inference_steps, 0);
  plan.stage2_loras = distilled_loras_;
  plan.images_as_keyframes = true;
  run_generation_flow(*models_, request, plan, noise ? *noise : philox, callbacks);
}

}  // namespace ltx2::pipeline
