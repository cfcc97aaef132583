// Guidance: how the denoised predictions of the guidance passes (conditional, negative prompt,
// STG-perturbed, modality-isolated) combine into one prediction, plus the delta guiders of the
// reference (CFG, CFG*, STG, APG) that the default pipelines do not use. Predictions are float32
// tensors of any shape [B, ...]; "per batch row" means over all of one row's elements.
#pragma once
#include <map>
#include <vector>

#include "core/tensor.h"

namespace ltx2::pipeline {

// <a, b> / (|b|^2 + 1e-8) for each batch row, as [B, 1].
Tensor projection_coef(const Tensor& to_project, const Tensor& onto);

// (scale - 1) * (cond - uncond); enabled iff scale != 1.
struct CfgGuider {
  float scale = 1;
  bool enabled() const { return scale != 1.0f; }
  Tensor delta(const Tensor& cond, const Tensor& uncond) const;
};

// CFG* rescaling: (scale - 1) * (cond - k * uncond), k = projection_coef(cond, uncond).
struct CfgStarGuider {
  float scale = 1;
  bool enabled() const { return scale != 1.0f; }
  Tensor delta(const Tensor& cond, const Tensor& uncond) const;
};

// scale * (cond - perturbed); enabled iff scale != 0.
struct StgGuider {
  float scale = 0;
  bool enabled() const { return scale != 0.0f; }
  Tensor delta(const Tensor& cond, const Tensor& perturbed) const;
};

// Adaptive projected guidance: g = cond - uncond, clipped to L2 norm norm_threshold over the last
// three axes (when > 0), split into parts parallel and orthogonal to cond, the parallel part
// scaled by eta; returns (scale - 1) * that.
struct ApgGuider {
  float scale = 1, eta = 1, norm_threshold = 0;
  bool enabled() const { return scale != 1.0f; }
  Tensor delta(const Tensor& cond, const Tensor& uncond) const;
};

// The legacy stateful APG: like ApgGuider, but g is a running average (momentum * avg + g) across
// calls when momentum != 0, and it returns scale * g_apg (not scale - 1).
class LegacyApgGuider {
 public:
  LegacyApgGuider(float scale, float eta = 1, float norm_threshold = 5, float momentum = 0)
      : scale_(scale), eta_(eta), norm_threshold_(norm_threshold), momentum_(momentum) {}
  bool enabled() const { return scale_ != 0.0f; }
  Tensor delta(const Tensor& cond, const Tensor& uncond);

 private:
  float scale_, eta_, norm_threshold_, momentum_;
  Tensor running_average_;
};

struct MultiModalGuiderParams {
  float cfg_scale = 1;
  float stg_scale = 0;
  std::vector<int> stg_blocks;  // 0-based transformer blocks whose self-attention STG skips
  float rescale_scale = 0;
  float modality_scale = 1;
  int skip_step = 0;  // 0: never skip; k: guide only every (k+1)-th step
};

// The guider of the pipelines (one per modality).
class MultiModalGuider {
 public:
  explicit MultiModalGuider(MultiModalGuiderParams params) : params_(std::move(params)) {}
  const MultiModalGuiderParams& params() const { return params_; }
  bool do_unconditional_generation() const { return params_.cfg_scale != 1.0f; }
  bool do_perturbed_generation() const { return params_.stg_scale != 0.0f; }
  bool do_isolated_modality_generation() const { return params_.modality_scale != 1.0f; }
  // On a skipped step the modality reuses its previous denoised prediction.
  bool should_skip_step(int step) const;
  // pred = c + (cfg-1)(c-u) + stg(c-p) + (mod-1)(c-m), then, if rescale != 0, scaled by
  // rescale * std(c)/std(pred) + (1 - rescale) (unbiased std over the whole tensor). A pass that
  // was not run is passed undefined and counts as 0, as the reference's float 0.0 does.
  Tensor calculate(const Tensor& cond, const Tensor& uncond_text, const Tensor& uncond_perturbed,
                   const Tensor& uncond_modality) const;

 private:
  MultiModalGuiderParams params_;
};

// Which transformer passes a guided step runs, shared by the video and audio guiders and batched
// in this order: cond (always); uncond (negative prompt) if either modality's cfg != 1; ptb (STG:
// self-attention skipped in each modality's stg_blocks) if either stg != 0; mod (audio<->video
// cross-attention skipped in every block) if either modality_scale != 1.
struct GuidancePasses {
  bool uncond = false, perturbed = false, isolated_modality = false;
  int count() const { return 1 + uncond + perturbed + isolated_modality; }
};
GuidancePasses guidance_passes(const MultiModalGuider& video, const MultiModalGuider& audio);

// Guider parameters by sigma: bins keyed by sigma; a sigma takes the bin with the smallest key
// >= sigma, and a sigma above every key takes the largest key's bin.
class MultiModalGuiderFactory {
 public:
  static MultiModalGuiderFactory constant(MultiModalGuiderParams params);
  static MultiModalGuiderFactory from_bins(std::map<double, MultiModalGuiderParams> bins);
  const MultiModalGuiderParams& params_for_sigma(double sigma) const;
  MultiModalGuider guider_for_sigma(double sigma) const { return MultiModalGuider(params_for_sigma(sigma)); }

 private:
  std::map<double, MultiModalGuiderParams> bins_;
};

}  // namespace ltx2::pipeline
