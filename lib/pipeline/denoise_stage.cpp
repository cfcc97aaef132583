// The denoising loop of one pipeline stage with its simple or guided denoiser.
#include "pipeline/denoise_stage.h"

#include "core/error.h"
#include "pipeline/diffusion_steps.h"

namespace ltx2::pipeline {

namespace {

namespace tr = models::transformer;

Tensor on(const Tensor& t, Device device) {
  return t.defined() ? t.to(device) : t;
}

// The transformer's inputs for one stream, on the transformer's device.
tr::Modality modality(const LatentState& s, float sigma, const Tensor& context, Device device) {
  tr::Modality m;
  m.latent = on(s.latent, device);
  m.sigma = on(Tensor::full({s.latent.size(0)}, sigma), device);
  m.timesteps = on(state_timesteps(s, sigma), device);
  m.positions = on(s.positions, device);
  m.context = on(context, device);
  m.keyframes_mask = on(s.keyframes_mask, device);
  return m;
}

struct Prediction {
  Tensor video, audio;
};

// One transformer pass: x0 per stream, back on the CPU where the loop keeps its states.
Prediction predict(const DenoiseStage& stage, tr::Modality video, tr::Modality audio,
                   const tr::BatchedPerturbations& perturbations) {
  const tr::TransformerOutput v =
      stage.forward ? stage.forward(stage.name, *stage.transformer, &video, &audio, perturbations)
                    : stage.transformer->forward(&video, &audio, perturbations);
  return {tr::denoised_from_velocity(video.latent, v.video, video.timesteps).to(Device::cpu()),
          tr::denoised_from_velocity(audio.latent, v.audio, audio.timesteps).to(Device::cpu())};
}

class StageDenoiser {
 public:
  StageDenoiser(const DenoiseStage& stage, const LatentState& video, const LatentState& audio,
                const PipelineCallbacks& cb)
      : stage_(stage), video_(video), audio_(audio), cb_(cb) {}

  Prediction operator()(int step) {
    const float sigma = stage_.sigmas[static_cast<size_t>(step)];
    tr::Modality v = modality(video_, sigma, stage_.positive.video, stage_.device);
    tr::Modality a = modality(audio_, sigma, stage_.positive.audio, stage_.device);
    if (!stage_.guidance) return predict(stage_, v, a, {});

    const StageGuidance& g = *stage_.guidance;
    const MultiModalGuider vg = g.video.guider_for_sigma(sigma), ag = g.audio.guider_for_sigma(sigma);
    const bool skip_video = vg.should_skip_step(step) && previous_.video.defined();
    const bool skip_audio = ag.should_skip_step(step) && previous_.audio.defined();
    v.enabled = !skip_video;
    a.enabled = !skip_audio;
    const GuidancePasses passes = guidance_passes(vg, ag);
    const int64_t blocks = stage_.transformer->config().num_layers;

    const Prediction cond = predict(stage_, v, a, {});
    record(step, "cond", cond);
    Prediction uncond, ptb, mod;
    if (passes.uncond) {
      tr::Modality nv = v, na = a;
      nv.context = on(g.negative.video, stage_.device);
      na.context = on(g.negative.audio, stage_.device);
      uncond = predict(stage_, nv, na, {});
      record(step, "uncond", uncond);
    }
    if (passes.perturbed) {
      std::vector<tr::Perturbation> list;
      if (vg.do_perturbed_generation())
        list.push_back({tr::PerturbationType::SkipVideoSelfAttn, to_blocks(vg.params().stg_blocks)});
      if (ag.do_perturbed_generation())
        list.push_back({tr::PerturbationType::SkipAudioSelfAttn, to_blocks(ag.params().stg_blocks)});
      ptb = predict(stage_, v, a, tr::BatchedPerturbations({list}, blocks));
      record(step, "ptb", ptb);
    }
    if (passes.isolated_modality) {
      const std::vector<tr::Perturbation> list = {{tr::PerturbationType::SkipA2VCrossAttn, std::nullopt},
                                                  {tr::PerturbationType::SkipV2ACrossAttn, std::nullopt}};
      mod = predict(stage_, v, a, tr::BatchedPerturbations({list}, blocks));
      record(step, "mod", mod);
    }
    Prediction out;
    out.video = skip_video ? previous_.video : vg.calculate(cond.video, uncond.video, ptb.video, mod.video);
    out.audio = skip_audio ? previous_.audio : ag.calculate(cond.audio, uncond.audio, ptb.audio, mod.audio);
    previous_ = out;
    return out;
  }

 private:
  static std::vector<int64_t> to_blocks(const std::vector<int>& b) { return {b.begin(), b.end()}; }

  void record(int step, const char* pass, const Prediction& p) const {
    if (!cb_.probe) return;
    const std::string prefix = stage_.name + ".step" + std::to_string(step) + ".";
    cb_.probe(prefix + "video.pass_" + pass, p.video);
    cb_.probe(prefix + "audio.pass_" + pass, p.audio);
  }

  const DenoiseStage& stage_;
  const LatentState& video_;
  const LatentState& audio_;
  const PipelineCallbacks& cb_;
  Prediction previous_;
};

}  // namespace

void run_denoise_stage(const DenoiseStage& stage, LatentState& video, LatentState& audio,
                       const PipelineCallbacks& callbacks) {
  LTX2_CHECK(stage.transformer != nullptr, "{}: no transformer", stage.name);
  LTX2_CHECK(stage.sigmas.size() >= 2, "{}: needs at least two sigmas", stage.name);
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
      const Tensor video_noise = stage.ancestral_noise->draw(ancestral_draw(i, 0), video.latent.shape());
      const Tensor audio_noise = stage.ancestral_noise->draw(ancestral_draw(i, 1), audio.latent.shape());
      video.latent = blend_with_clean(ancestral.step(video.latent, video_x0, stage.sigmas, i, video_noise),
                                      video.clean_latent, video.denoise_mask);
      audio.latent = blend_with_clean(ancestral.step(audio.latent, audio_x0, stage.sigmas, i, audio_noise),
                                      audio.clean_latent, audio.denoise_mask);
    }
    if (callbacks.probe) {
      const std::string prefix = stage.name + ".step" + std::to_string(i) + ".";
      callbacks.probe(prefix + "video.denoised", x0.video);
      callbacks.probe(prefix + "audio.denoised", x0.audio);
      callbacks.probe(prefix + "video.latent", video.latent);
      callbacks.probe(prefix + "audio.latent", audio.latent);
    }
    if (callbacks.progress) callbacks.progress(stage.name, i, steps);
  }
}

}  // namespace ltx2::pipeline
