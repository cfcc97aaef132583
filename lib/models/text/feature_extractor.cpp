// Feature extractor V1 / V2 (see feature_extractor.h). The per-row statistics are host loops over
// float32 with double accumulators (the reductions the reference does in float32 over up to
// 1024 x 3840 values per layer).
#include "models/text/feature_extractor.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/linear.h"

namespace ltx2 {

FeatureExtractor::FeatureExtractor(const TextProjectionConfig& config, const WeightView& w)
    : kind_(config.extractor), hidden_(config.caption_channels) {
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
    aggregate_w_ = w.load("aggregate_embed.weight", {hidden_, in});
  } else {
    int64_t in = flat_width("video_aggregate_embed.weight");
    num_states_ = in / hidden_;
    video_w_ = w.load("video_aggregate_embed.weight", {config.video_inner, in});
    video_b_ = w.load("video_aggregate_embed.bias", {config.video_inner});
    audio_w_ = w.load("audio_aggregate_embed.weight", {config.audio_inner, in});
    audio_b_ = w.load("audio_aggregate_embed.bias", {config.audio_inner});
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
  std::vector<Tensor> contiguous(S);
  std::vector<const float*> e(S);
  for (int64_t l = 0; l < S; ++l) {
    LTX2_CHECK(states[l].shape() == Shape({B, T, D}),
               "feature extractor: hidden state {} is {}, expects [{}, {}, {}]", l, states[l].str(), B, T, D);
    contiguous[l] = states[l].to(Device::cpu()).to(DType::F32).contiguous();
    e[l] = contiguous[l].data<float>();
  }
  std::vector<int64_t> m = mask.contiguous().to_vector_i64();
  Tensor flat = Tensor::zeros({B, T, D * S});
  float* out = flat.data<float>();

  if (kind_ == FeatureExtractorKind::V1) {
    for (int64_t b = 0; b < B; ++b) {
      int64_t valid = 0;
      for (int64_t t = 0; t < T; ++t) valid += m[b * T + t] != 0;
      for (int64_t l = 0; l < S; ++l) {
        double sum = 0;
        float lo = std::numeric_limits<float>::infinity(), hi = -lo;
        for (int64_t t = 0; t < T; ++t) {
          if (!m[b * T + t]) continue;
          const float* row = e[l] + (b * T + t) * D;
          for (int64_t d = 0; d < D; ++d) {
            sum += row[d];
            lo = std::min(lo, row[d]);
            hi = std::max(hi, row[d]);
          }
        }
        float mean = static_cast<float>(sum / (static_cast<double>(static_cast<float>(valid * D)) + 1e-6));
        float range = (hi - lo) + 1e-6f;
        for (int64_t t = 0; t < T; ++t) {
          if (!m[b * T + t]) continue;
          const float* row = e[l] + (b * T + t) * D;
          float* o = out + (b * T + t) * D * S;
          for (int64_t d = 0; d < D; ++d) o[d * S + l] = 8.f * (row[d] - mean) / range;
        }
      }
    }
    Tensor features = ops::linear(flat, aggregate_w_);
    return {flat, features, features};
  }

  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      if (!m[b * T + t]) continue;
      float* o = out + (b * T + t) * D * S;
      for (int64_t l = 0; l < S; ++l) {
        const float* row = e[l] + (b * T + t) * D;
        double sq = 0;
        for (int64_t d = 0; d < D; ++d) sq += static_cast<double>(row[d]) * row[d];
        float inv = 1.f / std::sqrt(static_cast<float>(sq / static_cast<double>(D)) + 1e-6f);
        for (int64_t d = 0; d < D; ++d) o[d * S + l] = row[d] * inv;
      }
    }
  }
  auto project = [&](const Tensor& w, const Tensor& bias) {
    float scale = static_cast<float>(std::sqrt(static_cast<double>(w.size(0)) / static_cast<double>(D)));
    return ops::linear(ops::mul(flat, scale), w, bias);
  };
  return {flat, project(video_w_, video_b_), project(audio_w_, audio_b_)};
}

}  // namespace ltx2
