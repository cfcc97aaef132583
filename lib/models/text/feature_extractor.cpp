// Feature extractor V1 / V2 (see feature_extractor.h), per hidden state through lib/ops on the
// states' device: the statistics and the normalisation in float32 (the reference reduces in its
// module dtype), each state's normed block rounded once to the weights' dtype, then interleaved by
// one concatenation along a new last axis.
#include "models/text/feature_extractor.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/reduce.h"
#include "ops/shape.h"

namespace ltx2 {

FeatureExtractor::FeatureExtractor(const TextProjectionConfig& config, const WeightView& w, DType dtype,
                                   Device device)
    : kind_(config.extractor), dtype_(dtype), device_(device), hidden_(config.caption_channels) {
  LTX2_CHECK(hidden_ > 0, "transformer config: 'caption_channels' must be positive");
  auto flat_width = [&](const std::string& key) {
    Shape s = w.shape_of(key);
    LTX2_CHECK(s.size() == 2 && s[1] % hidden_ == 0,
               "{}: {} is {}, its input width is not a multiple of caption_channels {}", w.set().describe(),
               w.resolve(key), shape_str(s), hidden_);
    return s[1];
  };
  if (kind_ == FeatureExtractorKind::V1) {
    int64_t in = flat_width("aggregate_embed.weight");
    num_states_ = in / hidden_;
    aggregate_w_ = w.load("aggregate_embed.weight", {hidden_, in}, dtype, device);
  } else {
    int64_t in = flat_width("video_aggregate_embed.weight");
    num_states_ = in / hidden_;
    video_w_ = w.load("video_aggregate_embed.weight", {config.video_inner, in}, dtype, device);
    video_b_ = w.load("video_aggregate_embed.bias", {config.video_inner}, dtype, device);
    audio_w_ = w.load("audio_aggregate_embed.weight", {config.audio_inner, in}, dtype, device);
    audio_b_ = w.load("audio_aggregate_embed.bias", {config.audio_inner}, dtype, device);
  }
}

int64_t FeatureExtractor::video_width() const {
  return kind_ == FeatureExtractorKind::V1 ? aggregate_w_.size(0) : video_w_.size(0);
}
int64_t FeatureExtractor::audio_width() const {
  return kind_ == FeatureExtractorKind::V1 ? aggregate_w_.size(0) : audio_w_.size(0);
}

void FeatureExtractor::check_gemma(const GemmaConfig& gemma, const std::string& gemma_source) const {
  LTX2_CHECK(gemma.hidden_size == hidden_ && gemma.num_hidden_states() == num_states_,
             "{}: Gemma has hidden size {} and {} layers, but the LTX checkpoint's text projection expects "
             "hidden size {} and {} layers",
             gemma_source, gemma.hidden_size, gemma.num_layers, hidden_, num_states_ - 1);
}

TextFeatures FeatureExtractor::forward(const std::vector<Tensor>& states, const Tensor& mask) const {
  const int64_t S = num_states_, D = hidden_;
  LTX2_CHECK(static_cast<int64_t>(states.size()) == S, "feature extractor: got {} hidden states, expects {}",
             states.size(), S);
  LTX2_CHECK(mask.dim() == 2, "feature extractor: mask must be [B, T], got {}", mask.str());
  const int64_t B = mask.size(0), T = mask.size(1);
  for (int64_t l = 0; l < S; ++l)
    LTX2_CHECK(states[l].shape() == Shape({B, T, D}) && states[l].device() == device_,
               "feature extractor: hidden state {} is {}, expects [{}, {}, {}] on {}", l, states[l].str(), B,
               T, D, device_.str());
  const Tensor host_mask = mask.to(Device::cpu()).contiguous();
  // keep [B, T, 1]: 1 for a token, 0 for a pad row. Pad rows are multiplied to zero before any
  // statistic sees them (they may hold large junk).
  const Tensor keep = host_mask.to(DType::F32).unsqueeze(-1).to(device_);
  std::vector<Tensor> parts(S);  // each [B, T, D, 1] in the weights' dtype

  if (kind_ == FeatureExtractorKind::V1) {
    std::vector<int64_t> m = host_mask.to_vector_i64();
    std::vector<float> count(B, 0.f), high_fill(B * T), low_fill(B * T);
    for (int64_t b = 0; b < B; ++b) {
      int64_t valid = 0;
      for (int64_t t = 0; t < T; ++t) valid += m[b * T + t] != 0;
      count[b] = static_cast<float>(static_cast<double>(static_cast<float>(valid * D)) + 1e-6);
    }
    // Added to the zeroed pad rows so that they never win the min / max.
    for (int64_t i = 0; i < B * T; ++i) {
      high_fill[i] = m[i] ? 0.f : std::numeric_limits<float>::max();
      low_fill[i] = -high_fill[i];
    }
    const Tensor denominator = Tensor::from_vector(count, {B, 1, 1}).to(device_);
    const Tensor above = Tensor::from_vector(high_fill, {B, T, 1}).to(device_);
    const Tensor below = Tensor::from_vector(low_fill, {B, T, 1}).to(device_);
    for (int64_t l = 0; l < S; ++l) {
      const Tensor x = ops::mul(states[l], keep);  // float32
      const Tensor mean = ops::div(ops::sum(ops::sum(x, 2, true), 1, true), denominator);
      const Tensor lo = ops::reduce(ops::reduce(ops::add(x, above), 2, true, ops::ReduceOp::Min), 1, true,
                                    ops::ReduceOp::Min);
      const Tensor hi = ops::amax(ops::amax(ops::add(x, below), 2, true), 1, true);
      const Tensor normed = ops::div(ops::mul(ops::sub(x, mean), 8.f), ops::add(ops::sub(hi, lo), 1e-6f));
      parts[l] = ops::mul(normed, keep).to(dtype_).unsqueeze(3);
    }
    const Tensor flat = ops::cat(parts, 3).view({B, T, D * S});
    const Tensor features = ops::linear(flat, aggregate_w_);
    return {flat, features, features};
  }

  for (int64_t l = 0; l < S; ++l)
    parts[l] = ops::rms_norm(ops::mul(states[l], keep), Tensor(), 1e-6f).to(dtype_).unsqueeze(3);
  const Tensor flat = ops::cat(parts, 3).view({B, T, D * S});
  auto project = [&](const Tensor& w, const Tensor& bias) {
    float scale = static_cast<float>(std::sqrt(static_cast<double>(w.size(0)) / static_cast<double>(D)));
    return ops::linear(ops::mul(flat, scale), w, bias);
  };
  return {flat, project(video_w_, video_b_), project(audio_w_, audio_b_)};
}

}  // namespace ltx2
