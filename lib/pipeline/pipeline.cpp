// The pipelines over the shared generation flow (see pipeline.h).
#include "pipeline/pipeline.h"

#include "core/error.h"
#include "pipeline/latent_tools.h"
#include "pipeline/schedulers.h"

namespace ltx2::pipeline {

StagePlan stage_plan(PipelineKind kind, const GenerationRequest& r, const std::vector<int>& model_version,
                     const std::vector<LoraWithStrength>& distilled_loras) {
  const PipelineTraits& traits = pipeline_traits(kind);
  StagePlan plan;
  plan.guided_stage1 = traits.guided;
  plan.refine = traits.refines;
  plan.images_as_keyframes = traits.images_as_keyframes;
  switch (kind) {
    case PipelineKind::Distilled:
      plan.stage1_sigmas = distilled_sigmas();
      if (model_version >= std::vector<int>{2, 5}) plan.stage1_sampler = Sampler::EulerAncestral;
      break;
    case PipelineKind::TwoStage:
    case PipelineKind::Keyframes:
      plan.stage1_sigmas = ltx2_sigmas(r.num_inference_steps, 0);
      plan.stage2_loras = distilled_loras;
      plan.audio_from_stage1 = kind == PipelineKind::TwoStage;
      break;
    case PipelineKind::OneStage: plan.stage1_sigmas = ltx2_sigmas(r.num_inference_steps, 0); break;
    case PipelineKind::Hq: {
      LTX2_CHECK(distilled_loras.size() == 1, "the HQ pipeline takes one distilled LoRA, got {}",
                 distilled_loras.size());
      // The scheduler is given stage 1's empty latent: the shift follows its token count.
      // (--num-frames unset: planned again once the duration head has predicted it.)
      const auto grid = video_latent_grid(max_num_frames(r), r.height / 2, r.width / 2);
      plan.stage1_sigmas = ltx2_sigmas(r.num_inference_steps, grid[0] * grid[1] * grid[2]);
      plan.stage1_sampler = plan.stage2_sampler = Sampler::Res2s;
      plan.stage1_loras = {{distilled_loras[0].lora, static_cast<float>(r.distilled_lora_strength_stage_1)}};
      plan.stage2_loras = {{distilled_loras[0].lora, static_cast<float>(r.distilled_lora_strength_stage_2)}};
      plan.audio_from_stage1 = true;
      break;
    }
  }
  return plan;
}

Pipeline::Pipeline(PipelineKind kind, const ModelPaths& paths, PipelineOptions options)
    : kind_(kind),
      models_(PipelineModels::load(paths, kind, std::move(options))),
      distilled_loras_(pipeline_traits(kind).distilled_lora ? read_loras(paths.distilled_loras)
                                                            : std::vector<LoraWithStrength>{}) {}

void Pipeline::run(const GenerationRequest& request, const PipelineCallbacks& callbacks,
                   LatentNoiseSource* noise) {
  PhiloxNoiseSource philox(static_cast<uint64_t>(request.seed));
  const StagePlanFor plan_for = [this](const GenerationRequest& r) {
    return stage_plan(kind_, r, models_->model_version, distilled_loras_);
  };
  run_generation_flow(*models_, request, plan_for, noise ? *noise : philox, callbacks);
}

}  // namespace ltx2::pipeline
