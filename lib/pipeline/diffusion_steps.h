// Diffusion steps (one update of a latent from sigmas[i] to sigmas[i + 1] given the model's
// denoised prediction x0), the conversions between velocity and x0, and the denoising loops.
// Latents are float32 tensors (token layout [B, T, C] in the pipelines; any shape works).
#pragma once
#include <functional>
#include <vector>

#include "core/tensor.h"

namespace ltx2::pipeline {

// x0 = x - v * t; t broadcasts (a scalar tensor, or per-token timesteps [B, T, 1]).
Tensor to_denoised(const Tensor& sample, const Tensor& velocity, const Tensor& timesteps);
// v = (x - x0) / sigma; sigma must be non-zero.
Tensor to_velocity(const Tensor& sample, float sigma, const Tensor& denoised);
// x0 * mask + clean * (1 - mask): tokens with mask 0 keep their clean (conditioning) value.
Tensor blend_with_clean(const Tensor& denoised, const Tensor& clean, const Tensor& denoise_mask);

// Plain Euler (the default everywhere): x + v * (s' - s), v = (x - x0) / s.
struct EulerStep {
  Tensor step(const Tensor& sample, const Tensor& denoised, const std::vector<float>& sigmas, int i) const;
};

// Euler ancestral: steps to sigma_down, then re-noises by `noise` (needed when eta > 0 and s' > 0).
struct EulerAncestralStep {
  float eta = 1, s_noise = 1;
  Tensor step(const Tensor& sample, const Tensor& denoised, const std::vector<float>& sigmas, int i,
              const Tensor& noise = {}) const;
};

// The stochastic step of the res_2s sampler (HQ pipeline).
struct Res2sStep {
  Tensor step(const Tensor& sample, const Tensor& denoised, const std::vector<float>& sigmas, int i,
              const Tensor& noise, float eta = 0.5f) const;
};

// CFG++ Euler: the direction uses the unconditional prediction, the ancestral split is done in
// the rescaled space sigma / (1 - sigma). `noise` is needed when eta > 0 and s' > 0.
struct EulerCfgPpStep {
  float eta = 1, s_noise = 1;
  Tensor step(const Tensor& sample, const Tensor& denoised, const std::vector<float>& sigmas, int i,
              const Tensor& uncond_denoised, const Tensor& noise = {}) const;
};

// Runge-Kutta coefficients of the res_2s sampler for step size h (exponential integrator with
// phi_1, phi_2): a21 = c2 * phi1(-h c2), b2 = phi2(-h) / c2, b1 = phi1(-h) - b2.
struct Res2sCoefficients {
  double a21, b1, b2;
};
Res2sCoefficients res2s_coefficients(double h, double c2 = 0.5);
// The res_2s loop's SDE noise from a standard normal draw (_get_new_noise): standardized over all
// its elements, then over each batch item's last two axes (mean 0, unbiased std 1 each time).
// Host float32 in and out (accumulated in double).
Tensor res2s_sde_noise(const Tensor& draw);

// One modality's state through a loop: the latent being denoised, its clean (conditioning) latent
// and the per-token denoise mask (1 = generate, 0 = keep clean), shapes broadcastable.
struct DenoiseState {
  Tensor latent, clean_latent, denoise_mask;
};
// The model: denoised predictions (one per state, same order) for the current latents at step i.
using Denoiser = std::function<std::vector<Tensor>(const std::vector<Tensor>& latents, int step)>;
// Noise for the ancestral loop: a standard normal tensor of `shape` for state `modality` at step i.
using NoiseSource = std::function<Tensor(const Shape& shape, int step, size_t modality)>;

// Euler loop over every step: predict, blend with the clean latent, step. Updates the latents.
void euler_denoising_loop(const std::vector<float>& sigmas, std::vector<DenoiseState>& states,
                          const Denoiser& denoiser);
// Euler-ancestral loop (eta 1, s_noise 1): predict and blend; at s' = 0 the latent becomes the
// blended prediction; else step with noise drawn per state (in state order) and re-blend.
void euler_ancestral_denoising_loop(const std::vector<float>& sigmas, std::vector<DenoiseState>& states,
                                    const Denoiser& denoiser, const NoiseSource& noise);

}  // namespace ltx2::pipeline
