// Typed configuration of the audio VAE decoder, read from checkpoint metadata config["audio_vae"]
// (model.params.ddconfig, model.params.sampling_rate, preprocessing.stft / .mel, variables) with
// the reference configurator's defaults. Values the decoder does not implement (attention blocks,
// group norm) are refused naming the key.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <vector>

namespace ltx2 {

// Which axis of [B, C, T, M] the causal 2-D convs pad on one side only.
enum class CausalityAxis {
  None,                // symmetric padding on both axes
  Height,              // time (dim 2) causal; upsampling drops the first time row
  Width,               // mel (dim 3) causal; upsampling drops the first mel column
  WidthCompatibility,  // mel causal, nothing dropped after upsampling
};

struct AudioVaeDecoderConfig {
  int64_t ch = 128;    // base width; level l has ch * ch_mult[l] channels
  int64_t out_ch = 2;  // stereo log-mel
  std::vector<int64_t> ch_mult = {1, 2, 4};
  int64_t num_res_blocks = 2;  // the decoder runs num_res_blocks + 1 blocks per level
  int64_t z_channels = 8;
  CausalityAxis causality = CausalityAxis::Height;
  // Mel bins of the decoded log-mel; 0 when the config names none (then the latent's own count).
  int64_t mel_bins = 0;
  int64_t sampling_rate = 16000;
  int64_t mel_hop_length = 160;

  // Time-axis latent downsampling of the audio VAE (fixed in the reference).
  static constexpr int64_t kLatentDownsample = 4;
};

// `audio_vae`: the metadata config["audio_vae"] object.
AudioVaeDecoderConfig parse_audio_vae_decoder_config(const nlohmann::json& audio_vae);

}  // namespace ltx2
