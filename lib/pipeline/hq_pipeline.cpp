// The HQ pipeline over the shared generation flow.
#include "pipeline/hq_pipeline.h"

#include "io/lora.h"
#include "pipeline/generation_flow.h"
#include "pipeline/latent_tools.h"
#include "pipeline/schedulers.h"

namespace ltx2::pipeline {

HqPipeline::HqPipeline(const ModelPaths& paths, PipelineOptions options)
    : models_(PipelineModels::load(paths, PipelineKind::Hq, std::move(options))),
      distilled_lora_(read_lora_file(paths.distilled_loras.front().path)) {}

void HqPipeline::run(const GenerationRequest& request, const PipelineCallbacks& callbacks,
                     LatentNoiseSource* noise) {
  PhiloxNoiseSource philox(static_cast<uint64_t>(request.seed));
  StagePlan plan;
  plan.guided_stage1 = true;
  // The scheduler is given stage 1's empty latent: the shift follows its token count.
  const auto grid = video_latent_grid(request.num_frames, request.height / 2, request.width / 2);
  plan.stage1_sigmas = ltx2_sigmas(request.num_inference_steps, grid[0] * grid[1] * grid[2]);
  plan.stage1_sampler = plan.stage2_sampler = Sampler::Res2s;
  plan.stage1_loras = {{distilled_lora_, static_cast<float>(request.distilled_lora_strength_stage_1)}};
  plan.stage2_loras = {{distilled_lora_, static_cast<float>(request.distilled_lora_strength_stage_2)}};
  plan.audio_from_stage1 = true;
  run_generation_flow(*models_, request, plan, noise ? *noise : philox, callbacks);
}

}  // namespace ltx2::pipeline
