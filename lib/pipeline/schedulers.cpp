// Sigma schedules: LTX2Scheduler, LinearQuadraticScheduler, BetaScheduler and the distilled lists.
#include "pipeline/schedulers.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace ltx2::pipeline {

const std::vector<float>& distilled_sigmas() {
  static const std::vector<float> s = {1.0f,      0.99375f, 0.9875f,   0.98125f, 0.975f,
                                       0.909375f, 0.725f,   0.421875f, 0.0f};
  return s;
}

const std::vector<float>& stage2_distilled_sigmas() {
  static const std::vector<float> s = {0.909375f, 0.725f, 0.421875f, 0.0f};
  return s;
}

const std::vector<float>& tdp_distilled_sigmas() {
  static const std::vector<float> s = {0.625f, 0.4f, 0.0f};
  return s;
}

int64_t latent_tokens(const Shape& latent_shape) {
  LTX2_CHECK(latent_shape.size() >= 3, "scheduler: latent shape {} has no token axes",
             shape_str(latent_shape));
  int64_t n = 1;
  for (size_t i = 2; i < latent_shape.size(); ++i) n *= latent_shape[i];
  return n;
}

double ltx2_sigma_shift(int64_t tokens, const Ltx2SchedulerParams& p) {
  const double slope = (p.max_shift - p.base_shift) / (4096 - 1024);
  const double intercept = p.base_shift - slope * 1024;
  return static_cast<double>(tokens) * slope + intercept;
}

namespace {

// torch.linspace(1, 0, n) in float32: the first half counts up from the start, the second half
// down from the end, with a float32 step.
std::vector<float> linspace_one_to_zero(int n) {
  std::vector<float> s(n);
  if (n == 1) {
    s[0] = 1.0f;
    return s;
  }
  const float step = (0.0f - 1.0f) / static_cast<float>(n - 1);
  const int halfway = n / 2;
  for (int i = 0; i < n; ++i)
    s[i] = i < halfway ? 1.0f + step * static_cast<float>(i) : 0.0f - step * static_cast<float>(n - i - 1);
  return s;
}

}  // namespace

std::vector<float> ltx2_sigmas(int steps, int64_t tokens, const Ltx2SchedulerParams& p) {
  LTX2_CHECK(steps >= 1, "LTX2Scheduler: steps must be >= 1, got {}", steps);
  // The reference returns NaN here (the stretch divides 0 by 0); refuse instead.
  LTX2_CHECK(steps >= 2 || !p.stretch, "LTX2Scheduler: 1 step cannot be stretched to the terminal sigma");
  if (tokens <= 0) tokens = p.default_tokens;
  const float e = static_cast<float>(std::exp(ltx2_sigma_shift(tokens, p)));
  std::vector<float> s = linspace_one_to_zero(steps + 1);
  // Float32 arithmetic in the reference's order: a scalar divided by a tensor is the tensor's
  // reciprocal times the scalar.
  for (float& v : s) {
    if (v == 0.0f) continue;
    const float t = (1.0f / v) - 1.0f;
    v = (1.0f / (e + t)) * e;
  }
  if (p.stretch) {
    float last_one_minus = 0;
    for (float v : s)
      if (v != 0.0f) last_one_minus = 1.0f - v;
    const float scale = last_one_minus / static_cast<float>(1.0 - p.terminal);
    for (float& v : s)
      if (v != 0.0f) v = 1.0f - (1.0f - v) / scale;
  }
  return s;
}

std::vector<float> linear_quadratic_sigmas(int steps, double threshold_noise, int linear_steps) {
  LTX2_CHECK(steps >= 1, "LinearQuadraticScheduler: steps must be >= 1, got {}", steps);
  if (steps == 1) return {1.0f, 0.0f};
  if (linear_steps < 0) linear_steps = steps / 2;
  LTX2_CHECK(linear_steps >= 1 && linear_steps <= steps,
             "LinearQuadraticScheduler: linear_steps {} outside [1, {}]", linear_steps, steps);
  std::vector<double> x;
  for (int i = 0; i < linear_steps; ++i) x.push_back(i * threshold_noise / linear_steps);
  const double step_diff = linear_steps - threshold_noise * steps;
  const int quadratic_steps = steps - linear_steps;
  if (quadratic_steps > 0) {
    const double q2 = static_cast<double>(quadratic_steps) * quadratic_steps;
    const double quad = step_diff / (linear_steps * q2);
    const double lin = threshold_noise / linear_steps - 2 * step_diff / q2;
    const double c = quad * (static_cast<double>(linear_steps) * linear_steps);
    for (int i = linear_steps; i < steps; ++i) x.push_back(quad * (double(i) * i) + lin * i + c);
  }
  x.push_back(1.0);
  std::vector<float> s;
  for (double v : x) s.push_back(static_cast<float>(1.0 - v));
  return s;
}

namespace {

// Continued fraction of the regularized incomplete beta function (modified Lentz evaluation).
double incomplete_beta_fraction(double a, double b, double x) {
  const double tiny = 1e-300;
  double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1.0 / d;
  double f = d;
  for (int m = 1; m <= 1000; ++m) {
    for (int half = 0; half < 2; ++half) {
      const double coef = half == 0 ? m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
                                    : -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
      d = 1.0 + coef * d;
      if (std::fabs(d) < tiny) d = tiny;
      c = 1.0 + coef / c;
      if (std::fabs(c) < tiny) c = tiny;
      d = 1.0 / d;
      f *= c * d;
      if (half == 1 && std::fabs(c * d - 1.0) < 1e-16) return f;
    }
  }
  return f;
}

// I_x(a, b), the Beta(a, b) distribution function.
double beta_cdf(double x, double a, double b) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * incomplete_beta_fraction(a, b, x) / a;
  return 1.0 - std::exp(log_front) * incomplete_beta_fraction(b, a, 1 - x) / b;
}

// Inverse of beta_cdf by bisection (monotone; 200 halvings reach double resolution).
double beta_quantile(double q, double a, double b) {
  if (q <= 0) return 0;
  if (q >= 1) return 1;
  // The median of a symmetric Beta is exactly 1/2; bisection would land a hair to one side, and
  // 0.5 * 9999 is a rounding tie that must resolve like the exact value does (to even, 5000).
  if (a == b && q == 0.5) return 0.5;
  double lo = 0, hi = 1;
  for (int i = 0; i < 200 && hi - lo > 0; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (mid == lo || mid == hi) break;
    (beta_cdf(mid, a, b) < q ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double flux_time_shift(double mu, double sigma, double t) {
  return std::exp(mu) / (std::exp(mu) + std::pow(1.0 / t - 1.0, sigma));
}

}  // namespace

std::vector<float> beta_sigmas(int steps, double alpha, double beta) {
  LTX2_CHECK(steps >= 1, "BetaScheduler: steps must be >= 1, got {}", steps);
  LTX2_CHECK(alpha > 0 && beta > 0, "BetaScheduler: alpha {} and beta {} must be positive", alpha, beta);
  constexpr int kGrid = 10000;
  std::vector<int64_t> timesteps;
  for (int i = 0; i < steps; ++i) {
    const double q = 1.0 - static_cast<double>(i) / steps;
    const auto t = static_cast<int64_t>(std::nearbyint(beta_quantile(q, alpha, beta) * (kGrid - 1)));
    if (std::find(timesteps.begin(), timesteps.end(), t) == timesteps.end()) timesteps.push_back(t);
  }
  std::vector<float> s;
  for (int64_t t : timesteps)
    s.push_back(static_cast<float>(flux_time_shift(2.37, 1.0, static_cast<double>(t + 1) / kGrid)));
  s.push_back(0.0f);
  return s;
}

Tensor sigmas_tensor(const std::vector<float>& sigmas) {
  return Tensor::from_vector(sigmas, {static_cast<int64_t>(sigmas.size())});
}

}  // namespace ltx2::pipeline
