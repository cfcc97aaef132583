// LTX's EmbeddingsProcessor: Gemma hidden states + mask -> video and audio contexts.
//
// Features come from the feature extractor; each row is then reordered to right-padded order (a
// stable partition: valid tokens first in their order, then pads in theirs), and the video and
// audio connectors run on the reordered features. The result is NOT permuted back: the contexts
// the DiT gets hold the prompt's tokens in rows 0..n-1 and register outputs after them. The
// returned mask is all ones, as the reference's is once the registers have filled the pads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/configs/text_projection_config.h"
#include "io/weights.h"
#include "models/text/embeddings_connector.h"
#include "models/text/feature_extractor.h"

namespace ltx2 {

struct TextContext {
  Tensor video;  // [B, T, video connector inner] (the processor's dtype and device)
  Tensor audio;  // [B, T, audio connector inner]
  Tensor mask;   // [B, T] int64, all ones (host)
};

// Per row, the source index of each output row: valid positions in order, then pad positions.
std::vector<int64_t> right_pad_order(const Tensor& mask);

class EmbeddingsProcessor {
 public:
  // `weights`: the LTX checkpoint (monolith or split transformer/text-encoder files), whose metadata
  // config.transformer describes the text side. Every weight is loaded in `dtype` on `device`.
  explicit EmbeddingsProcessor(const std::shared_ptr<const WeightSet>& weights, DType dtype = DType::F32,
                               Device device = Device::cpu());
  EmbeddingsProcessor(const TextProjectionConfig& config, const std::shared_ptr<const WeightSet>& weights,
                      DType dtype = DType::F32, Device device = Device::cpu());

  const TextProjectionConfig& config() const { return config_; }
  const FeatureExtractor& feature_extractor() const { return extractor_; }

  // states: the Gemma hidden states [B, T, D] on the weights' device; mask [B, T] int64 (left-padded
  // or any order; read on the host). Contexts in the weights' dtype on their device.
  TextContext process(const std::vector<Tensor>& states, const Tensor& mask) const;
  // The part after the feature extractor (features [B, T, F] in the mask's order).
  TextContext connect(const TextFeatures& features, const Tensor& mask) const;

 private:
  TextProjectionConfig config_;
  FeatureExtractor extractor_;
  EmbeddingsConnector video_, audio_;
};

}  // namespace ltx2
