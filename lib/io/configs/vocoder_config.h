// Typed configuration of the vocoder, read from checkpoint metadata config["vocoder"]: a flat dict
// is the LTX-2.0 HiFi-GAN-style generator; {"vocoder": ..., "bwe": ...} is LTX-2.3's BigVGAN v2
// generator followed by the bandwidth extension. What the reference asserts (resblock type, stereo,
// Snake-Beta) is refused naming the key when it differs.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <vector>

namespace ltx2 {

enum class VocoderResBlock {
  HifiGan1,  // resblock "1": leaky-ReLU ResBlock1, leaky ReLU before each upsampling layer
  Amp1,      // resblock "AMP1": BigVGAN v2 AMPBlock1 with anti-aliased Snake-Beta activations
};

struct VocoderGeneratorConfig {
  std::vector<int64_t> resblock_kernel_sizes = {3, 7, 11};
  std::vector<int64_t> upsample_rates = {6, 5, 2, 2, 2};
  std::vector<int64_t> upsample_kernel_sizes = {16, 15, 8, 4, 4};
  // One list of dilations per kernel size, three dilations each.
  std::vector<std::vector<int64_t>> resblock_dilation_sizes = {{1, 3, 5}, {1, 3, 5}, {1, 3, 5}};
  int64_t upsample_initial_channel = 1024;
  VocoderResBlock resblock = VocoderResBlock::HifiGan1;
  int64_t output_sampling_rate = 24000;
  bool use_tanh_at_final = true;       // else clamp(-1, 1)
  bool apply_final_activation = true;  // tanh / clamp at the output
  bool use_bias_at_final = true;       // conv_post has a bias

  // Output samples per input mel frame (the product of the upsampling rates).
  int64_t hop() const;
};

// LTX-2.3 bandwidth extension: a causal log-mel of the generator's output drives a second
// generator whose output is added to a sinc-resampled copy.
struct VocoderBweConfig {
  VocoderGeneratorConfig generator;  // apply_final_activation is always false
  int64_t input_sampling_rate = 16000;
  int64_t output_sampling_rate = 48000;
  int64_t hop_length = 80;  // STFT hop at the input rate
  int64_t n_fft = 512;      // STFT size = window length
  int64_t num_mels = 64;
};

struct VocoderConfig {
  VocoderGeneratorConfig generator;  // the mel -> waveform generator
  std::optional<VocoderBweConfig> bwe;

  int64_t output_sampling_rate() const {
    return bwe ? bwe->output_sampling_rate : generator.output_sampling_rate;
  }
};

// `vocoder`: the metadata config["vocoder"] object.
VocoderConfig parse_vocoder_config(const nlohmann::json& vocoder);

}  // namespace ltx2
