// Sigma schedules (noise levels, from 1 down to 0) for the denoising loops, and the distilled
// pipelines' fixed sigma lists. Schedules are float32 like the reference's tensors; each ends in 0.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace ltx2::pipeline {

// Fixed schedules of the distilled pipelines (stage 1: 8 steps; stage 2: 3 steps; the multi-GPU
// tiled runner's stage 2: 2 steps).
const std::vector<float>& distilled_sigmas();
const std::vector<float>& stage2_distilled_sigmas();
const std::vector<float>& tdp_distilled_sigmas();

struct Ltx2SchedulerParams {
  double max_shift = 2.05;   // shift at 4096 tokens
  double base_shift = 0.95;  // shift at 1024 tokens
  bool stretch = true;       // rescale so the last non-zero sigma is exactly `terminal`
  double terminal = 0.1;
  int64_t default_tokens = 4096;  // used when no latent shape is given
};

// Tokens of a latent [B, C, ...]: the product of the dimensions after the channel axis.
int64_t latent_tokens(const Shape& latent_shape);
// The token-dependent shift: linear in tokens through (1024, base_shift) and (4096, max_shift).
double ltx2_sigma_shift(int64_t tokens, const Ltx2SchedulerParams& params);
// LTX2Scheduler: steps + 1 sigmas. tokens <= 0 selects params.default_tokens (the reference's
// call without a latent, which the ti2vid pipelines use).
std::vector<float> ltx2_sigmas(int steps, int64_t tokens, const Ltx2SchedulerParams& params = {});

// LinearQuadraticScheduler: linear_steps < 0 means steps / 2.
std::vector<float> linear_quadratic_sigmas(int steps, double threshold_noise = 0.025, int linear_steps = -1);

// BetaScheduler: timesteps from the Beta(alpha, beta) quantiles of a 10000-point flux-shifted grid;
// repeated timesteps are dropped, so the result may have fewer than steps + 1 entries.
std::vector<float> beta_sigmas(int steps, double alpha = 0.6, double beta = 0.6);

// Sigmas as a float32 tensor [n].
Tensor sigmas_tensor(const std::vector<float>& sigmas);

}  // namespace ltx2::pipeline
