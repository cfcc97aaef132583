// The vocoder chosen by the checkpoint's config["vocoder"]: the LTX-2.0 generator alone (24 kHz),
// or LTX-2.3's BigVGAN v2 generator (16 kHz) followed by the bandwidth extension (48 kHz).
// Weights: file keys vocoder.<k>; with exactly one leading "vocoder." stripped, LTX-2.3's inner
// generator is vocoder.vocoder.*, next to vocoder.bwe_generator.* and vocoder.mel_stft.*.
#pragma once

#include <memory>
#include <optional>

#include "core/tensor.h"
#include "io/configs/vocoder_config.h"
#include "io/weights.h"
#include "models/vocoder/bandwidth_extension.h"
#include "models/vocoder/generator.h"

namespace ltx2::vocoder {

class Vocoder {
 public:
  // `weights`: the window on the file's vocoder. prefix, placed where the model goes
  // (WeightView::placed). With the BWE everything computes in float32 over those weights (the
  // reference's autocast); without, in the weights' dtype.
  Vocoder(const VocoderConfig& config, const WeightView& weights);
  static Vocoder load(const VocoderConfig& config, std::shared_ptr<const WeightSet> weights,
                      DType dtype = DType::F32, Device device = Device::cpu());

  // Stereo log-mel [B, 2, T, 64] (any device and float dtype, brought to the model's first) ->
  // waveform [B, 2, T * samples per frame] in [-1, 1] at output_sampling_rate(), on the model's
  // device in its compute dtype. Probe names: the generator's (conv_pre, ups_{i}, ..., conv_post;
  // with the BWE prefixed vocoder.), and for the BWE vocoder_out and the extension's.
  Tensor forward(const Tensor& mel, const Probe& probe = {}) const;

  int64_t output_sampling_rate() const { return config_.output_sampling_rate(); }
  const VocoderConfig& config() const { return config_; }

 private:
  VocoderConfig config_;
  Generator generator_;
  std::optional<BandwidthExtension> bwe_;
};

}  // namespace ltx2::vocoder
