// LTX's feature extractor: Gemma's L+1 hidden states [B, T, D] -> video and audio features.
//
// Both families stack the states as E[b, t, d, l] and flatten with the LAYER index fastest
// (flat column d*(L+1) + l, the order the projection weights' input columns follow), and zero the
// pad rows before projecting.
//   V1 (19B): per row and layer, over valid tokens and all channels: 8 * (E - mean) / (max - min +
//             1e-6); one projection D*(L+1) -> D without bias; the same features go to video and audio.
//   V2 (22B): per token and layer, E * rsqrt(mean_d(E^2) + 1e-6); video/audio projections with bias
//             of (normed * sqrt(F / D)) for their widths F.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "io/configs/gemma_config.h"
#include "io/configs/text_projection_config.h"
#include "io/weights.h"

namespace ltx2 {

struct TextFeatures {
  Tensor normed_flat;   // [B, T, D*(L+1)], pad rows zero
  Tensor video, audio;  // [B, T, Fv], [B, T, Fa]
};

class FeatureExtractor {
 public:
  // `w`: window onto "text_embedding_projection." keys (aggregate_embed / video_ / audio_aggregate_embed),
  // loaded in `dtype` on `device`.
  FeatureExtractor(const TextProjectionConfig& config, const WeightView& w, DType dtype = DType::F32,
                   Device device = Device::cpu());

  int64_t hidden_size() const { return hidden_; }
  int64_t num_states() const { return num_states_; }
  int64_t video_width() const;
  int64_t audio_width() const;
  // Refuses a Gemma whose width or depth differs from what these weights were trained on.
  void check_gemma(const GemmaConfig& gemma, const std::string& gemma_source) const;

  // states: num_states() tensors [B, T, D] on the weights' device (any float dtype); mask [B, T]
  // int64 (1 = token), read on the host. Results in the weights' dtype on their device.
  TextFeatures forward(const std::vector<Tensor>& states, const Tensor& mask) const;

 private:
  FeatureExtractorKind kind_;
  DType dtype_;
  Device device_;
  int64_t hidden_ = 0, num_states_ = 0;
  Tensor aggregate_w_;                            // V1
  Tensor video_w_, video_b_, audio_w_, audio_b_;  // V2
};

}  // namespace ltx2
