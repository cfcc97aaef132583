// The denoising loop of one pipeline stage with its simple or guided denoiser.
#include "pipeline/denoise_stage.h"

#include <map>

#include "core/cuda/events.h"
#include "core/error.h"
#include "ops/shape.h"
#include "pipeline/diffusion_steps.h"

namespace ltx2::pipeline {

namespace {

namespace tr = models::transformer;

Tensor on(const Tensor& t, Device device) {
  return t.defined() ? t.to(device) : t;
}

// Moves every tensor of a state to `device` (nothing moves when it is there already).
void move_state(LatentState& s, Device device) {
  for (Tensor* t : {&s.latent, &s.clean_latent, &s.denoise_mask, &s.positions, &s.keyframes_mask})
    *t = on(*t, device);
}

// The transformer's inputs for one stream; the state, the context and `sigma` ([1], this step's)
// are on its device already.
tr::Modality modality(const LatentState& s, float sigma, const Tensor& sigma_on_device,
                      const Tensor& context) {
  tr::Modality m;
  m.latent = s.latent;
  m.sigma = sigma_on_device.expand({s.latent.size(0)}).contiguous();
  m.timesteps = state_timesteps(s, sigma);
  m.positions = s.positions;
  m.context = context;
  m.keyframes_mask = s.keyframes_mask;
  return m;
}

struct Prediction {
  Tensor video, audio;
};

// One guidance pass of a step: its inputs and what it perturbs.
struct GuidancePass {
  const char* name;  // cond, uncond, ptb, mod
  tr::Modality video, audio;
  std::vector<tr::Perturbation> perturbations;
};

// The passes' tensors concatenated on the batch axis (an undefined field stays undefined).
tr::Modality batch_of(const std::vector<const tr::Modality*>& parts) {
  tr::Modality out = *parts.front();
  for (Tensor tr::Modality::*field :
       {&tr::Modality::latent, &tr::Modality::sigma, &tr::Modality::timesteps, &tr::Modality::positions,
        &tr::Modality::context, &tr::Modality::context_mask, &tr::Modality::attention_mask,
        &tr::Modality::keyframes_mask}) {
    if (!(out.*field).defined()) continue;
    std::vector<Tensor> items;
    for (const tr::Modality* m : parts) items.push_back(m->*field);
    out.*field = ops::cat(items, 0);
  }
  return out;
}

// One transformer pass: x0 per stream, on the transformer's device.
Prediction predict(const DenoiseStage& stage, tr::Modality video, tr::Modality audio,
                   const tr::BatchedPerturbations& perturbations) {
  const tr::TransformerOutput v =
      stage.executor ? stage.executor->forward(*stage.transformer, &video, &audio, perturbations)
                     : stage.transformer->forward(&video, &audio, perturbations);
  return {tr::denoised_from_velocity(video.latent, v.video, video.timesteps),
          tr::denoised_from_velocity(audio.latent, v.audio, audio.timesteps)};
}

class StageDenoiser {
 public:
  // The contexts and the sigmas go to the transformer's device once for the whole stage.
  StageDenoiser(const DenoiseStage& stage, const LatentState& video, const LatentState& audio,
                const PipelineCallbacks& cb)
      : stage_(stage),
        video_(video),
        audio_(audio),
        cb_(cb),
        positive_{on(stage.positive.video, stage.device), on(stage.positive.audio, stage.device)},
        sigmas_(
            Tensor::from_vector(stage.sigmas, {static_cast<int64_t>(stage.sigmas.size())}).to(stage.device)) {
    if (stage.guidance)
      negative_ = {on(stage.guidance->negative.video, stage.device),
                   on(stage.guidance->negative.audio, stage.device)};
  }

  Prediction operator()(int step) {
    const float sigma = stage_.sigmas[static_cast<size_t>(step)];
    const Tensor sigma_on_device = sigmas_.narrow(0, step, 1);
    tr::Modality v = modality(video_, sigma, sigma_on_device, positive_.video);
    tr::Modality a = modality(audio_, sigma, sigma_on_device, positive_.audio);
    if (!stage_.guidance) return predict(stage_, v, a, {});

    const StageGuidance& g = *stage_.guidance;
    const MultiModalGuider vg = g.video.guider_for_sigma(sigma), ag = g.audio.guider_for_sigma(sigma);
    const bool skip_video = vg.should_skip_step(step) && previous_.video.defined();
    const bool skip_audio = ag.should_skip_step(step) && previous_.audio.defined();
    v.enabled = !skip_video;
    a.enabled = !skip_audio;
    const GuidancePasses passes = guidance_passes(vg, ag);
    const int64_t blocks = stage_.transformer->config().num_layers;

    // The passes in the reference's order: cond, then those the guiders ask for.
    std::vector<GuidancePass> list = {{"cond", v, a, {}}};
    if (passes.uncond) {
      GuidancePass uncond{"uncond", v, a, {}};
      uncond.video.context = negative_.video;
      uncond.audio.context = negative_.audio;
      list.push_back(std::move(uncond));
    }
    if (passes.perturbed) {
      std::vector<tr::Perturbation> skips;
      if (vg.do_perturbed_generation())
        skips.push_back({tr::PerturbationType::SkipVideoSelfAttn, to_blocks(vg.params().stg_blocks)});
      if (ag.do_perturbed_generation())
        skips.push_back({tr::PerturbationType::SkipAudioSelfAttn, to_blocks(ag.params().stg_blocks)});
      list.push_back({"ptb", v, a, skips});
    }
    if (passes.isolated_modality)
      list.push_back({"mod",
                      v,
                      a,
                      {{tr::PerturbationType::SkipA2VCrossAttn, std::nullopt},
                       {tr::PerturbationType::SkipV2ACrossAttn, std::nullopt}}});
    const std::vector<Prediction> predictions = run_passes(list, g.max_batch_size, blocks);
    std::map<std::string, Prediction> by_name;
    for (size_t i = 0; i < list.size(); ++i) {
      record(step, list[i].name, predictions[i]);
      by_name[list[i].name] = predictions[i];
    }
    const Prediction cond = by_name["cond"], uncond = by_name["uncond"], ptb = by_name["ptb"],
                     mod = by_name["mod"];
    Prediction out;
    out.video = skip_video ? previous_.video : vg.calculate(cond.video, uncond.video, ptb.video, mod.video);
    out.audio = skip_audio ? previous_.audio : ag.calculate(cond.audio, uncond.audio, ptb.audio, mod.audio);
    previous_ = out;
    return out;
  }

 private:
  static std::vector<int64_t> to_blocks(const std::vector<int>& b) { return {b.begin(), b.end()}; }

  // The passes in calls of up to `max_batch` (a pass whose context differs in length from its
  // call's first starts a new call); each pass's prediction, in order.
  std::vector<Prediction> run_passes(const std::vector<GuidancePass>& passes, int max_batch,
                                     int64_t blocks) const {
    std::vector<Prediction> out;
    for (size_t first = 0; first < passes.size();) {
      size_t end = first + 1;
      const auto same_shapes = [&](const GuidancePass& p) {
        return p.video.context.shape() == passes[first].video.context.shape() &&
               p.audio.context.shape() == passes[first].audio.context.shape();
      };
      while (end < passes.size() && end - first < static_cast<size_t>(max_batch) && same_shapes(passes[end]))
        ++end;
      if (end - first == 1) {
        const GuidancePass& p = passes[first];
        out.push_back(predict(stage_, p.video, p.audio,
                              p.perturbations.empty() ? tr::BatchedPerturbations()
                                                      : tr::BatchedPerturbations({p.perturbations}, blocks)));
      } else {
        std::vector<const tr::Modality*> videos, audios;
        std::vector<std::vector<tr::Perturbation>> perturbations;
        bool any = false;
        for (size_t i = first; i < end; ++i) {
          videos.push_back(&passes[i].video);
          audios.push_back(&passes[i].audio);
          perturbations.push_back(passes[i].perturbations);
          any = any || !passes[i].perturbations.empty();
        }
        const Prediction joint =
            predict(stage_, batch_of(videos), batch_of(audios),
                    any ? tr::BatchedPerturbations(perturbations, blocks) : tr::BatchedPerturbations());
        const int64_t per_pass = passes[first].video.latent.size(0);
        const auto item = [&](const Tensor& t, size_t i) {
          return t.defined() ? t.narrow(0, static_cast<int64_t>(i - first) * per_pass, per_pass) : t;
        };
        for (size_t i = first; i < end; ++i) out.push_back({item(joint.video, i), item(joint.audio, i)});
      }
      first = end;
    }
    return out;
  }

  void record(int step, const char* pass, const Prediction& p) const {
    if (!cb_.probe) return;
    const std::string prefix = stage_.name + ".step" + std::to_string(step) + ".";
    probe(cb_, prefix + "video.pass_" + pass, p.video);
    probe(cb_, prefix + "audio.pass_" + pass, p.audio);
  }

  const DenoiseStage& stage_;
  const LatentState& video_;
  const LatentState& audio_;
  const PipelineCallbacks& cb_;
  StageContexts positive_, negative_;
  Tensor sigmas_;  // the schedule, uploaded once
  Prediction previous_;
};

}  // namespace

void run_denoise_stage(const DenoiseStage& stage, LatentState& video, LatentState& audio,
                       const PipelineCallbacks& callbacks) {
  LTX2_CHECK(stage.transformer != nullptr, "{}: no transformer", stage.name);
  LTX2_CHECK(stage.sigmas.size() >= 2, "{}: needs at least two sigmas", stage.name);
  // The states live on the transformer's device for the whole loop (one upload per stage; the
  // caller gets them back there).
  move_state(video, stage.device);
  move_state(audio, stage.device);
  StageDenoiser denoiser(stage, video, audio, callbacks);
  const EulerStep euler;
  const EulerAncestralStep ancestral{1.0f, 1.0f};
  const int steps = static_cast<int>(stage.sigmas.size()) - 1;
  for (int i = 0; i < steps; ++i) {
    const Prediction x0 = denoiser(i);
    const Tensor video_x0 = blend_with_clean(x0.video, video.clean_latent, video.denoise_mask);
    const Tensor audio_x0 = blend_with_clean(x0.audio, audio.clean_latent, audio.denoise_mask);
    const bool last = stage.sigmas[static_cast<size_t>(i) + 1] == 0.0f;
    if (!stage.ancestral_noise) {
      video.latent = euler.step(video.latent, video_x0, stage.sigmas, i);
      audio.latent = euler.step(audio.latent, audio_x0, stage.sigmas, i);
    } else if (last) {
      video.latent = video_x0;
      audio.latent = audio_x0;
    } else {
      const Tensor video_noise =
          on(stage.ancestral_noise->draw(ancestral_draw(i, 0), video.latent.shape()), stage.device);
      const Tensor audio_noise =
          on(stage.ancestral_noise->draw(ancestral_draw(i, 1), audio.latent.shape()), stage.device);
      video.latent = blend_with_clean(ancestral.step(video.latent, video_x0, stage.sigmas, i, video_noise),
                                      video.clean_latent, video.denoise_mask);
      audio.latent = blend_with_clean(ancestral.step(audio.latent, audio_x0, stage.sigmas, i, audio_noise),
                                      audio.clean_latent, audio.denoise_mask);
    }
    if (callbacks.probe) {
      const std::string prefix = stage.name + ".step" + std::to_string(i) + ".";
      probe(callbacks, prefix + "video.denoised", x0.video);
      probe(callbacks, prefix + "audio.denoised", x0.audio);
      probe(callbacks, prefix + "video.latent", video.latent);
      probe(callbacks, prefix + "audio.latent", audio.latent);
    }
    // Nothing in a step waits for the GPU, so the step is done when the device says so: progress
    // (and Ctrl-C, and the phase clock) then follow the GPU, one wait per step.
    if (stage.device.is_cuda()) cuda_synchronize(stage.device.index);
    if (callbacks.progress) callbacks.progress(stage.name, i, steps);
  }
}

}  // namespace ltx2::pipeline
