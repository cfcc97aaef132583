// Guiders: CFG, CFG*, STG, APG (current and legacy stateful) and the pipelines' MultiModalGuider,
// in float32 over lib/ops.
#include "pipeline/guiders.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace ltx2::pipeline {
namespace {

void check_same_shape(const Tensor& a, const Tensor& b, const char* what) {
  LTX2_CHECK(a.shape() == b.shape(), "{}: prediction shapes differ: {} vs {}", what, shape_str(a.shape()),
             shape_str(b.shape()));
}

// coef [B, 1] as [B, 1, ..., 1] so that it scales each batch row of a tensor of `rank` axes.
Tensor per_row(const Tensor& coef, int rank) {
  Shape s(rank, 1);
  s[0] = coef.size(0);
  return coef.reshape(s);
}

// Sum of squares over the last three axes (kept), as the reference's norm(dim=[-1, -2, -3]).
Tensor l2_norm_last3(const Tensor& x) {
  LTX2_CHECK(x.dim() >= 3, "APG norm threshold: needs a tensor of >= 3 axes, got {}", x.str());
  Tensor sq = ops::mul(x, x);
  for (int d = 1; d <= 3; ++d) sq = ops::sum(sq, x.dim() - d, true);
  return ops::unary(sq, ops::UnaryOp::Sqrt);
}

// g * min(1, threshold / ||g||).
Tensor clip_norm(const Tensor& g, float threshold) {
  Tensor factor = ops::mul(ops::unary(l2_norm_last3(g), ops::UnaryOp::PowScalar, -1.0f), threshold);
  factor = ops::minimum(factor, Tensor::full(factor.shape(), 1.0f, DType::F32, factor.device()));
  return ops::mul(g, factor);
}

// eta * (k * cond) + (g - k * cond), k = projection_coef(g, cond).
Tensor apg_direction(const Tensor& g, const Tensor& cond, float eta) {
  Tensor parallel = ops::mul(per_row(projection_coef(g, cond), cond.dim()), cond);
  Tensor orthogonal = ops::sub(g, parallel);
  return ops::add(ops::mul(parallel, eta), orthogonal);
}

// Unbiased standard deviation over every element.
float global_std(const Tensor& x) {
  const int64_t n = x.numel();
  LTX2_CHECK(n >= 2, "guidance rescale: std of {} needs at least two elements", x.str());
  Tensor flat = x.reshape({n});
  Tensor centered = ops::sub(flat, ops::mean(flat, 0, true));
  const double ss = ops::sum(ops::mul(centered, centered), 0).to(Device::cpu()).item();
  return static_cast<float>(std::sqrt(ss / static_cast<double>(n - 1)));
}

}  // namespace

Tensor projection_coef(const Tensor& to_project, const Tensor& onto) {
  check_same_shape(to_project, onto, "projection_coef");
  const int64_t rows = to_project.size(0);
  Tensor a = to_project.reshape({rows, -1}), b = onto.reshape({rows, -1});
  Tensor dot = ops::sum(ops::mul(a, b), 1, true);
  Tensor squared_norm = ops::add(ops::sum(ops::mul(b, b), 1, true), 1e-8f);
  return ops::div(dot, squared_norm);
}

Tensor CfgGuider::delta(const Tensor& cond, const Tensor& uncond) const {
  check_same_shape(cond, uncond, "CFG guider");
  return ops::mul(ops::sub(cond, uncond), scale - 1.0f);
}

Tensor CfgStarGuider::delta(const Tensor& cond, const Tensor& uncond) const {
  check_same_shape(cond, uncond, "CFG* guider");
  Tensor k = per_row(projection_coef(cond, uncond), cond.dim());
  return ops::mul(ops::sub(cond, ops::mul(k, uncond)), scale - 1.0f);
}

Tensor StgGuider::delta(const Tensor& cond, const Tensor& perturbed) const {
  check_same_shape(cond, perturbed, "STG guider");
  return ops::mul(ops::sub(cond, perturbed), scale);
}

Tensor ApgGuider::delta(const Tensor& cond, const Tensor& uncond) const {
  check_same_shape(cond, uncond, "APG guider");
  Tensor g = ops::sub(cond, uncond);
  if (norm_threshold > 0) g = clip_norm(g, norm_threshold);
  return ops::mul(apg_direction(g, cond, eta), scale - 1.0f);
}

Tensor LegacyApgGuider::delta(const Tensor& cond, const Tensor& uncond) {
  check_same_shape(cond, uncond, "legacy APG guider");
  Tensor g = ops::sub(cond, uncond);
  if (momentum_ != 0) {
    running_average_ = running_average_.defined() ? ops::add(ops::mul(running_average_, momentum_), g) : g;
    g = running_average_;
  }
  if (norm_threshold_ > 0) g = clip_norm(g, norm_threshold_);
  return ops::mul(apg_direction(g, cond, eta_), scale_);
}

bool MultiModalGuider::should_skip_step(int step) const {
  if (params_.skip_step == 0) return false;
  return step % (params_.skip_step + 1) != 0;
}

Tensor MultiModalGuider::calculate(const Tensor& cond, const Tensor& uncond_text,
                                   const Tensor& uncond_perturbed, const Tensor& uncond_modality) const {
  LTX2_CHECK(cond.defined(), "MultiModalGuider: the conditional prediction is required");
  const Tensor c = cond.to(DType::F32);
  // c - x, where a pass that was not run is the float 0.
  auto gap = [&](const Tensor& x, const char* pass) {
    if (!x.defined()) return c;
    check_same_shape(c, x, pass);
    return ops::sub(c, x.to(DType::F32));
  };
  Tensor pred = ops::add(c, ops::mul(gap(uncond_text, "MultiModalGuider uncond"), params_.cfg_scale - 1.0f));
  pred = ops::add(pred, ops::mul(gap(uncond_perturbed, "MultiModalGuider perturbed"), params_.stg_scale));
  pred = ops::add(pred,
                  ops::mul(gap(uncond_modality, "MultiModalGuider modality"), params_.modality_scale - 1.0f));
  if (params_.rescale_scale != 0) {
    const float ratio = global_std(c) / global_std(pred);
    const float factor = params_.rescale_scale * ratio + (1.0f - params_.rescale_scale);
    pred = ops::mul(pred, factor);
  }
  return pred.to(cond.dtype());
}

GuidancePasses guidance_passes(const MultiModalGuider& video, const MultiModalGuider& audio) {
  GuidancePasses p;
  p.uncond = video.do_unconditional_generation() || audio.do_unconditional_generation();
  p.perturbed = video.do_perturbed_generation() || audio.do_perturbed_generation();
  p.isolated_modality = video.do_isolated_modality_generation() || audio.do_isolated_modality_generation();
  return p;
}

MultiModalGuiderFactory MultiModalGuiderFactory::constant(MultiModalGuiderParams params) {
  MultiModalGuiderFactory f;
  f.bins_.emplace(std::numeric_limits<double>::infinity(), std::move(params));
  return f;
}

MultiModalGuiderFactory MultiModalGuiderFactory::from_bins(std::map<double, MultiModalGuiderParams> bins) {
  LTX2_CHECK(!bins.empty(), "MultiModalGuiderFactory: no sigma bins given");
  MultiModalGuiderFactory f;
  f.bins_ = std::move(bins);
  return f;
}

const MultiModalGuiderParams& MultiModalGuiderFactory::params_for_sigma(double sigma) const {
  auto it = bins_.lower_bound(sigma);  // smallest key >= sigma
  if (it == bins_.end()) return bins_.rbegin()->second;
  return it->second;
}

}  // namespace ltx2::pipeline
