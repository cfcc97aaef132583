// The denoising loop of one pipeline stage with its simple or guided denoiser.
#include "pipeline/denoise_stage.h"

#include <map>

#include "core/cuda/events.h"
#include "core/error.h"
#include "ops/elementwise.h"
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
  for (const tr::ModalityField& f : tr::kModalityFields) {
    if (!(out.*f.member).defined()) continue;
    std::vector<Tensor> items;
    for (const tr::Modality* m : parts) items.push_back(m->*f.member);
    out.*f.member = ops::cat(items, 0);
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

  // The prediction at the schedule's step `step` for the stage's states.
  Prediction operator()(int step) {
    return (*this)(video_, audio_, stage_.sigmas[static_cast<size_t>(step)], sigmas_.narrow(0, step, 1), step,
                   "step" + std::to_string(step));
  }

  // The prediction for these states at `sigma` (sigma_on_device: it as [1] on the device);
  // `step` is what the guiders' skip_step counts, `label` names the probes.
  Prediction operator()(const LatentState& video, const LatentState& audio, float sigma,
                        const Tensor& sigma_on_device, int step, const std::string& label) {
    tr::Modality v = modality(video, sigma, sigma_on_device, positive_.video);
    tr::Modality a = modality(audio, sigma, sigma_on_device, positive_.audio);
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
    const int per_call =
        stage_.executor ? stage_.executor->passes_per_call(g.max_batch_size) : g.max_batch_size;
    const std::vector<Prediction> predictions = run_passes(list, per_call, blocks);
    std::map<std::string, Prediction> by_name;
    for (size_t i = 0; i < list.size(); ++i) {
      record(label, list[i].name, predictions[i]);
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

  void record(const std::string& label, const char* pass, const Prediction& p) const {
    if (!cb_.probe) return;
    const std::string prefix = stage_.name + "." + label + ".";
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

// The prediction blended with the clean latent where the mask keeps it.
Prediction blended(const Prediction& x0, const LatentState& video, const LatentState& audio) {
  return {blend_with_clean(x0.video, video.clean_latent, video.denoise_mask),
          blend_with_clean(x0.audio, audio.clean_latent, audio.denoise_mask)};
}

void probe_step(const PipelineCallbacks& cb, const std::string& prefix, const Prediction& x0,
                const LatentState& video, const LatentState& audio) {
  if (!cb.probe) return;
  probe(cb, prefix + "video.denoised", x0.video);
  probe(cb, prefix + "audio.denoised", x0.audio);
  probe(cb, prefix + "video.latent", video.latent);
  probe(cb, prefix + "audio.latent", audio.latent);
}

// Nothing in a step waits for the GPU, so the step is done when the device says so: progress (and
// Ctrl-C, and the phase clock) then follow the GPU, one wait per step.
void end_step(const DenoiseStage& stage, const PipelineCallbacks& cb, int step, int steps) {
  if (stage.device.is_cuda()) cuda_synchronize(stage.device.index);
  if (cb.progress) cb.progress(stage.name, step, steps);
}

void run_euler_loop(const DenoiseStage& stage, StageDenoiser& denoiser, LatentState& video,
                    LatentState& audio, const PipelineCallbacks& callbacks) {
  const EulerStep euler;
  const EulerAncestralStep ancestral{1.0f, 1.0f};
  const bool with_noise = stage.sampler == Sampler::EulerAncestral;
  LTX2_CHECK(!with_noise || stage.step_noise, "{}: the Euler-ancestral loop needs a noise source",
             stage.name);
  const int steps = static_cast<int>(stage.sigmas.size()) - 1;
  for (int i = 0; i < steps; ++i) {
    const Prediction x0 = denoiser(i);
    const Prediction x0_kept = blended(x0, video, audio);
    const bool last = stage.sigmas[static_cast<size_t>(i) + 1] == 0.0f;
    if (!with_noise) {
      video.latent = euler.step(video.latent, x0_kept.video, stage.sigmas, i);
      audio.latent = euler.step(audio.latent, x0_kept.audio, stage.sigmas, i);
    } else if (last) {
      video.latent = x0_kept.video;
      audio.latent = x0_kept.audio;
    } else {
      const Tensor video_noise =
          on(stage.step_noise->draw(ancestral_draw(i, 0), video.latent.shape()), stage.device);
      const Tensor audio_noise =
          on(stage.step_noise->draw(ancestral_draw(i, 1), audio.latent.shape()), stage.device);
      video.latent =
          blend_with_clean(ancestral.step(video.latent, x0_kept.video, stage.sigmas, i, video_noise),
                           video.clean_latent, video.denoise_mask);
      audio.latent =
          blend_with_clean(ancestral.step(audio.latent, x0_kept.audio, stage.sigmas, i, audio_noise),
                           audio.clean_latent, audio.denoise_mask);
    }
    probe_step(callbacks, stage.name + ".step" + std::to_string(i) + ".", x0, video, audio);
    end_step(stage, callbacks, i, steps);
  }
}

// The reference's res2s_audio_video_denoising_loop (eta 0.5, c2 0.5, legacy noise injection, the
// anchor refinement on). Per step from sigma s to s': x0 at the step's start, a midpoint x at
// sqrt(s s') from the Runge-Kutta coefficient a21 and re-noised there, x0 at the midpoint, the
// second-order combination, re-noised at the step's end. The reference computes in float64; this
// in float32.
void run_res2s_loop(const DenoiseStage& stage, StageDenoiser& denoiser, LatentState& video,
                    LatentState& audio, const PipelineCallbacks& callbacks) {
  LTX2_CHECK(stage.step_noise, "{}: the res_2s loop needs a noise source", stage.name);
  std::vector<float> sigmas = stage.sigmas;
  const int steps = static_cast<int>(sigmas.size()) - 1;
  // A final sigma of 0 would make the last step's size infinite: the loop ends at 0.0011 instead
  // and one more evaluation removes the rest.
  const bool final_denoise = sigmas.back() == 0.0f;
  if (final_denoise) sigmas.insert(sigmas.end() - 1, 0.0011f);
  std::vector<float> midpoints;
  for (int i = 0; i < steps; ++i) midpoints.push_back(std::sqrt(sigmas[i] * sigmas[i + 1]));
  const auto on_device = [&](const std::vector<float>& v) {
    return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}).to(stage.device);
  };
  const Tensor sigmas_on_device = on_device(sigmas), midpoints_on_device = on_device(midpoints);
  const Res2sStep sde;
  // One modality's SDE re-noising from `anchor` to `x` over sigmas[i] -> sigmas[i + 1], then the
  // clean tokens put back.
  const auto renoise = [&](const LatentState& s, const Tensor& anchor, const Tensor& x,
                           const std::vector<float>& span, int i, NoiseDraw draw) {
    const Tensor noise = on(res2s_sde_noise(stage.step_noise->draw(draw, s.latent.shape())), stage.device);
    return blend_with_clean(sde.step(anchor, x, span, i, noise, 0.5f), s.clean_latent, s.denoise_mask);
  };
  LatentState* states[2] = {&video, &audio};
  const int total = steps + (final_denoise ? 1 : 0);
  for (int i = 0; i < steps; ++i) {
    const double h = -std::log(static_cast<double>(sigmas[i + 1]) / sigmas[i]);
    const Res2sCoefficients k = res2s_coefficients(h);
    const std::string label = "step" + std::to_string(i);
    const Prediction x0 = denoiser(video, audio, sigmas[i], sigmas_on_device.narrow(0, i, 1), i, label);
    const Prediction d1 = blended(x0, video, audio);
    const std::vector<float> to_midpoint = {sigmas[i], midpoints[i]};
    Tensor anchor[2], eps1[2], mid[2];
    const Tensor* first[2] = {&d1.video, &d1.audio};
    for (int m = 0; m < 2; ++m) {
      anchor[m] = states[m]->latent;
      eps1[m] = ops::sub(*first[m], anchor[m]);
      const Tensor x = ops::add(anchor[m], ops::mul(eps1[m], static_cast<float>(h * k.a21)));
      mid[m] = renoise(*states[m], anchor[m], x, to_midpoint, 0, res2s_draw(stage.stage_index, i, false, m));
    }
    // The reference's anchor refinement (bong iteration): anchor = mid - h a21 (d1 - anchor),
    // iterated 100 times, a contraction (h a21 < 1/4 where it runs) that has converged to its
    // fixed point; that point directly.
    if (h < 0.5 && sigmas[i] > 0.03f) {
      const auto c = static_cast<float>(h * k.a21);
      for (int m = 0; m < 2; ++m) {
        anchor[m] = ops::mul(ops::sub(mid[m], ops::mul(*first[m], c)), 1.0f / (1.0f - c));
        eps1[m] = ops::sub(*first[m], anchor[m]);
      }
    }
    LatentState mid_video = video, mid_audio = audio;
    mid_video.latent = mid[0];
    mid_audio.latent = mid[1];
    const Prediction d2 = blended(
        denoiser(mid_video, mid_audio, midpoints[i], midpoints_on_device.narrow(0, i, 1), 0, label + ".mid"),
        video, audio);
    const Tensor* second[2] = {&d2.video, &d2.audio};
    for (int m = 0; m < 2; ++m) {
      const Tensor eps2 = ops::sub(*second[m], anchor[m]);
      const Tensor x = ops::add(anchor[m], ops::add(ops::mul(eps1[m], static_cast<float>(h * k.b1)),
                                                    ops::mul(eps2, static_cast<float>(h * k.b2))));
      states[m]->latent =
          renoise(*states[m], anchor[m], x, sigmas, i, res2s_draw(stage.stage_index, i, true, m));
    }
    probe_step(callbacks, stage.name + "." + label + ".", x0, video, audio);
    end_step(stage, callbacks, i, total);
  }
  if (final_denoise) {
    const std::string label = "step" + std::to_string(steps);
    const Prediction x0 =
        denoiser(video, audio, sigmas[steps], sigmas_on_device.narrow(0, steps, 1), steps, label);
    const Prediction d = blended(x0, video, audio);
    video.latent = d.video;
    audio.latent = d.audio;
    probe_step(callbacks, stage.name + "." + label + ".", x0, video, audio);
    end_step(stage, callbacks, steps, total);
  }
}

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
  if (stage.sampler == Sampler::Res2s)
    run_res2s_loop(stage, denoiser, video, audio, callbacks);
  else
    run_euler_loop(stage, denoiser, video, audio, callbacks);
}

}  // namespace ltx2::pipeline
