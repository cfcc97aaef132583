// EmbeddingsProcessor (see embeddings_processor.h).
#include "models/text/embeddings_processor.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/layout.h"

namespace ltx2 {

namespace {

WeightView connector_view(const std::shared_ptr<const WeightSet>& set, const std::string& name) {
  return WeightView(set, component_prefixes(Component::Transformer), name).sub(name + ".");
}

// x [B, T, F] with each row's tokens gathered by `order` (B*T source indices), one copy per run
// of consecutive source rows (a left-padded row is two runs).
Tensor gather_rows(const Tensor& x, const std::vector<int64_t>& order) {
  const int64_t B = x.size(0), T = x.size(1);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  for (int64_t b = 0; b < B; ++b) {
    const int64_t* src = order.data() + b * T;
    for (int64_t t = 0; t < T;) {
      int64_t n = 1;
      while (t + n < T && src[t + n] == src[t] + n) ++n;
      out.select(0, b).narrow(0, t, n).copy_(x.select(0, b).narrow(0, src[t], n));
      t += n;
    }
  }
  return out;
}

}  // namespace

std::vector<int64_t> right_pad_order(const Tensor& mask) {
  LTX2_CHECK(mask.dim() == 2, "right_pad_order: mask must be [B, T], got {}", mask.str());
  const int64_t B = mask.size(0), T = mask.size(1);
  std::vector<int64_t> m = mask.to(Device::cpu()).contiguous().to_vector_i64(), order;
  order.reserve(B * T);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t)
      if (m[b * T + t]) order.push_back(t);
    for (int64_t t = 0; t < T; ++t)
      if (!m[b * T + t]) order.push_back(t);
  }
  return order;
}

EmbeddingsProcessor::EmbeddingsProcessor(const std::shared_ptr<const WeightSet>& weights, DType dtype,
                                         Device device)
    : EmbeddingsProcessor(
          [&] {
            LTX2_CHECK(weights->config().contains("transformer"),
                       "{}: metadata config has no 'transformer' object for the text connector",
                       weights->describe());
            return parse_text_projection_config(weights->config().at("transformer"));
          }(),
          weights, dtype, device) {}

EmbeddingsProcessor::EmbeddingsProcessor(const TextProjectionConfig& config,
                                         const std::shared_ptr<const WeightSet>& weights, DType dtype,
                                         Device device)
    : config_(config),
      extractor_(config,
                 WeightView(weights, component_prefixes(Component::TextConnector), "text projection")
                     .sub("text_embedding_projection."),
                 dtype, device),
      video_(config.video, connector_view(weights, "video_embeddings_connector"), dtype, device),
      audio_(config.audio, connector_view(weights, "audio_embeddings_connector"), dtype, device) {
  LTX2_CHECK(extractor_.video_width() == config.video.inner_dim() &&
                 extractor_.audio_width() == config.audio.inner_dim(),
             "{}: text features are {} (video) / {} (audio) wide but the connectors expect {} / {}",
             weights->describe(), extractor_.video_width(), extractor_.audio_width(),
             config.video.inner_dim(), config.audio.inner_dim());
}

TextContext EmbeddingsProcessor::process(const std::vector<Tensor>& states, const Tensor& mask) const {
  return connect(extractor_.forward(states, mask), mask);
}

TextContext EmbeddingsProcessor::connect(const TextFeatures& features, const Tensor& mask) const {
  std::vector<int64_t> order = right_pad_order(mask);
  const int64_t B = mask.size(0), T = mask.size(1);
  std::vector<int64_t> m = mask.to(Device::cpu()).contiguous().to_vector_i64(), sorted(B * T);
  for (int64_t i = 0; i < B * T; ++i) sorted[i] = m[(i / T) * T + order[i]] != 0;
  Tensor sorted_mask = Tensor::from_vector_i64(sorted, {B, T});
  TextContext out;
  out.video = video_.forward(gather_rows(features.video, order), sorted_mask);
  out.audio = audio_.forward(gather_rows(features.audio, order), sorted_mask);
  out.mask = Tensor::from_vector_i64(std::vector<int64_t>(B * T, 1), {B, T});
  return out;
}

}  // namespace ltx2
