// Diffusion steps, velocity/x0 conversions and the Euler / Euler-ancestral loops, over lib/ops.
// Scalar coefficients are formed in float32 like the reference's 0-d sigma tensors.
#include "pipeline/diffusion_steps.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "ops/elementwise.h"

namespace ltx2::pipeline {
namespace {

void check_step(const Tensor& sample, const Tensor& denoised, const std::vector<float>& sigmas, int i,
                const char* what) {
  LTX2_CHECK(i >= 0 && static_cast<size_t>(i) + 1 < sigmas.size(),
             "{}: step {} outside a schedule of {} sigmas", what, i, sigmas.size());
  LTX2_CHECK(sample.shape() == denoised.shape(), "{}: sample {} and denoised {} differ", what,
             shape_str(sample.shape()), shape_str(denoised.shape()));
}

void check_noise(const Tensor& noise, const Tensor& sample, const char* what) {
  LTX2_CHECK(noise.defined(), "{}: this step needs noise", what);
  LTX2_CHECK(noise.shape() == sample.shape(), "{}: noise {} does not match sample {}", what,
             shape_str(noise.shape()), shape_str(sample.shape()));
}

// a * x + b * y
Tensor axpby(float a, const Tensor& x, float b, const Tensor& y) {
  return ops::add(ops::mul(x, a), ops::mul(y, b));
}

// phi_j(z) = (e^z - sum_{k<j} z^k / k!) / z^j
double phi(int j, double z) {
  double partial = 0, term = 1;
  for (int k = 0; k < j; ++k) {
    partial += term;
    term *= z / (k + 1);
  }
  return (std::exp(z) - partial) / std::pow(z, j);
}

}  // namespace

Tensor to_denoised(const Tensor& sample, const Tensor& velocity, const Tensor& timesteps) {
  return ops::sub(sample, ops::mul(velocity, timesteps));
}

Tensor to_velocity(const Tensor& sample, float sigma, const Tensor& denoised) {
  LTX2_CHECK(sigma != 0.0f, "to_velocity: sigma is 0");
  return ops::div(ops::sub(sample, denoised), sigma);
}

Tensor blend_with_clean(const Tensor& denoised, const Tensor& clean, const Tensor& denoise_mask) {
  Tensor keep = ops::add(ops::mul(denoise_mask, -1.0f), 1.0f);
  return ops::add(ops::mul(denoised, denoise_mask), ops::mul(clean, keep));
}

Tensor EulerStep::step(const Tensor& sample, const Tensor& denoised, const std::vector<float>& sigmas,
                       int i) const {
  check_step(sample, denoised, sigmas, i, "Euler step");
  const float sigma = sigmas[i], dt = sigmas[i + 1] - sigmas[i];
  return ops::add(sample, ops::mul(to_velocity(sample, sigma, denoised), dt));
}

Tensor EulerAncestralStep::step(const Tensor& sample, const Tensor& denoised,
                                const std::vector<float>& sigmas, int i, const Tensor& noise) const {
  check_step(sample, denoised, sigmas, i, "Euler ancestral step");
  const float s = sigmas[i], s_next = sigmas[i + 1];
  if (s_next == 0.0f) return denoised.clone();
  const float downstep = 1.0f + (s_next / s - 1.0f) * eta;
  const float sigma_down = s_next * downstep;
  const float ratio = sigma_down / s;
  Tensor x = axpby(ratio, sample, 1.0f - ratio, denoised);
  if (eta <= 0) return x;
  check_noise(noise, sample, "Euler ancestral step");
  const float alpha_next = 1.0f - s_next, alpha_down = 1.0f - sigma_down;
  const float renoise = std::sqrt(std::max(
      0.0f, s_next * s_next - sigma_down * sigma_down * alpha_next * alpha_next / (alpha_down * alpha_down)));
  return axpby(alpha_next / alpha_down, x, s_noise * renoise, noise);
}

Tensor Res2sStep::step(const Tensor& sample, const Tensor& denoised, const std::vector<float>& sigmas, int i,
                       const Tensor& noise, float eta) const {
  check_step(sample, denoised, sigmas, i, "res2s step");
  const float s = sigmas[i], s_next = sigmas[i + 1];
  const float sigma_up = std::min(s_next * eta, 0.9999f * s_next);
  const float residual = std::sqrt(std::max(0.0f, s_next * s_next - sigma_up * sigma_up));
  const float alpha = (1.0f - s_next) + residual;
  float sigma_down = residual / alpha;
  if (std::isnan(sigma_down)) sigma_down = s_next;
  if (sigma_up == 0.0f || s_next == 0.0f) return denoised.clone();
  check_noise(noise, sample, "res2s step");
  Tensor eps = ops::mul(ops::sub(sample, denoised), 1.0f / (s - s_next));
  Tensor x0 = ops::sub(sample, ops::mul(eps, s));
  return ops::add(ops::mul(ops::add(x0, ops::mul(eps, sigma_down)), alpha), ops::mul(noise, sigma_up));
}

Tensor EulerCfgPpStep::step(const Tensor& sample, const Tensor& denoised, const std::vector<float>& sigmas,
                            int i, const Tensor& uncond_denoised, const Tensor& noise) const {
  check_step(sample, denoised, sigmas, i, "CFG++ step");
  LTX2_CHECK(uncond_denoised.shape() == sample.shape(),
             "CFG++ step: uncond_denoised {} does not match sample {}", shape_str(uncond_denoised.shape()),
             shape_str(sample.shape()));
  const float eps32 = std::numeric_limits<float>::epsilon();
  const float s = sigmas[i], s_next = sigmas[i + 1];
  const float alpha = std::max(1.0f - s, eps32), alpha_next = std::max(1.0f - s_next, eps32);
  Tensor direction = ops::mul(ops::sub(sample, ops::mul(uncond_denoised, alpha)), 1.0f / s);
  const float sigma_from = s / alpha, sigma_to = s_next / alpha_next;
  float sigma_up = 0, sigma_down = sigma_to;
  if (eta > 0) {
    const float variance =
        std::max(0.0f, sigma_to * sigma_to * (sigma_from * sigma_from - sigma_to * sigma_to) /
                           (sigma_from * sigma_from));
    sigma_up = std::min(eta * std::sqrt(variance), sigma_to);
    sigma_down = std::sqrt(std::max(0.0f, sigma_to * sigma_to - sigma_up * sigma_up));
  }
  Tensor x = axpby(alpha_next, denoised, alpha_next * sigma_down, direction);
  if (sigma_up == 0.0f) return x;
  check_noise(noise, sample, "CFG++ step");
  return ops::add(x, ops::mul(noise, alpha_next * s_noise * sigma_up));
}

Res2sCoefficients res2s_coefficients(double h, double c2) {
  LTX2_CHECK(h > 0 && c2 > 0, "res2s coefficients: h {} and c2 {} must be positive", h, c2);
  Res2sCoefficients c;
  c.a21 = c2 * phi(1, -h * c2);
  c.b2 = phi(2, -h) / c2;
  c.b1 = phi(1, -h) - c.b2;
  return c;
}

namespace {

// x standardized in place over [first, first + n): mean 0, unbiased standard deviation 1.
void standardize(std::vector<float>& x, size_t first, size_t n) {
  double sum = 0;
  for (size_t i = first; i < first + n; ++i) sum += x[i];
  const double mean = sum / static_cast<double>(n);
  double squares = 0;
  for (size_t i = first; i < first + n; ++i) squares += (x[i] - mean) * (x[i] - mean);
  const double std = std::sqrt(squares / static_cast<double>(n - 1));
  for (size_t i = first; i < first + n; ++i) x[i] = static_cast<float>((x[i] - mean) / std);
}

}  // namespace

Tensor res2s_sde_noise(const Tensor& draw) {
  LTX2_CHECK(draw.dim() >= 2 && draw.numel() >= 2, "res2s noise: a draw of shape {} has no last two axes",
             shape_str(draw.shape()));
  std::vector<float> x = draw.to(Device::cpu()).to(DType::F32).contiguous().to_vector();
  standardize(x, 0, x.size());
  const size_t per_item = static_cast<size_t>(draw.size(draw.dim() - 2) * draw.size(draw.dim() - 1));
  for (size_t first = 0; first < x.size(); first += per_item) standardize(x, first, per_item);
  return Tensor::from_vector(x, draw.shape());
}

namespace {

std::vector<Tensor> predict(const std::vector<DenoiseState>& states, const Denoiser& denoiser, int step) {
  std::vector<Tensor> latents;
  for (const auto& st : states) latents.push_back(st.latent);
  std::vector<Tensor> x0 = denoiser(latents, step);
  LTX2_CHECK(x0.size() == states.size(),
             "denoising loop: the denoiser returned {} predictions for {} latents", x0.size(), states.size());
  for (size_t m = 0; m < states.size(); ++m)
    x0[m] = blend_with_clean(x0[m], states[m].clean_latent, states[m].denoise_mask);
  return x0;
}

}  // namespace

void euler_denoising_loop(const std::vector<float>& sigmas, std::vector<DenoiseState>& states,
                          const Denoiser& denoiser) {
  const EulerStep stepper;
  for (int i = 0; i + 1 < static_cast<int>(sigmas.size()); ++i) {
    std::vector<Tensor> x0 = predict(states, denoiser, i);
    for (size_t m = 0; m < states.size(); ++m)
      states[m].latent = stepper.step(states[m].latent, x0[m], sigmas, i);
  }
}

void euler_ancestral_denoising_loop(const std::vector<float>& sigmas, std::vector<DenoiseState>& states,
                                    const Denoiser& denoiser, const NoiseSource& noise) {
  const EulerAncestralStep stepper{1.0f, 1.0f};
  for (int i = 0; i + 1 < static_cast<int>(sigmas.size()); ++i) {
    std::vector<Tensor> x0 = predict(states, denoiser, i);
    if (sigmas[i + 1] == 0.0f) {
      for (size_t m = 0; m < states.size(); ++m) states[m].latent = x0[m];
      return;
    }
    std::vector<Tensor> draws;
    for (size_t m = 0; m < states.size(); ++m) draws.push_back(noise(states[m].latent.shape(), i, m));
    for (size_t m = 0; m < states.size(); ++m) {
      Tensor next = stepper.step(states[m].latent, x0[m], sigmas, i, draws[m]);
      states[m].latent = blend_with_clean(next, states[m].clean_latent, states[m].denoise_mask);
    }
  }
}

}  // namespace ltx2::pipeline
