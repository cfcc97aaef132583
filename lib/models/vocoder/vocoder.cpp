#include "models/vocoder/vocoder.h"

#include "io/layout.h"

namespace ltx2::vocoder {

Vocoder::Vocoder(const VocoderConfig& config, const WeightView& weights)
    : config_(config),
      generator_(config.generator, config.bwe ? weights.sub("vocoder.") : weights,
                 config.bwe ? DType::F32 : weights.dtype()) {
  if (config_.bwe) bwe_.emplace(*config_.bwe, weights);
}

Vocoder Vocoder::load(const VocoderConfig& config, std::shared_ptr<const WeightSet> weights, DType dtype,
                      Device device) {
  return Vocoder(
      config, WeightView(weights, component_prefixes(Component::Vocoder), "vocoder").placed(dtype, device));
}

Tensor Vocoder::forward(const Tensor& mel, const Probe& probe) const {
  if (!bwe_) return generator_.forward(mel, probe);
  Tensor low_rate = generator_.forward(mel, probe, "vocoder.");
  if (probe) probe("vocoder_out", low_rate);
  return bwe_->forward(low_rate, probe);
}

}  // namespace ltx2::vocoder
