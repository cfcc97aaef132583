// The vocoder's mel -> waveform generator (reference class Vocoder), both flavours:
//  * resblock "1" (LTX-2.0, HiFi-GAN v1 style): leaky ReLU (0.1) before each upsampling layer,
//    ResBlock1 with leaky ReLUs, act_post = leaky ReLU (0.01), conv_post with bias, tanh;
//  * resblock "AMP1" (LTX-2.3, BigVGAN v2): AMPBlock1 with anti-aliased Snake-Beta activations,
//    act_post = anti-aliased Snake-Beta, optional bias, clamp(-1, 1) or no final activation.
// Stereo log-mel [B, 2, T, 64] -> conv_pre (128 -> C) -> per stage i: ConvTranspose1d (C/2^i ->
// C/2^(i+1), stride u_i) then the mean of that stage's resblocks -> act_post -> conv_post -> [B, 2,
// T * prod(u)]. Keys: conv_pre.*, ups.{i}.*, resblocks.{n}.convs{1,2}.{j}.*, (acts{1,2}.{j}.*,
// act_post.* for AMP1), conv_post.*.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/configs/vocoder_config.h"
#include "io/weights.h"
#include "models/vocoder/anti_aliased_snake.h"
#include "ops/conv1d.h"

namespace ltx2::vocoder {

// Receives named intermediate tensors during a forward pass (for parity checks).
using Probe = std::function<void(const std::string& name, const Tensor& value)>;

// A Conv1d layer with its weights and padding.
struct Conv1dLayer {
  Tensor weight, bias;  // bias may be undefined
  ops::Conv1dOptions options;
  Tensor forward(const Tensor& x) const;
};

// ResBlock1 / AMPBlock1: three (activation, dilated conv, activation, conv) residual steps.
class ResBlock {
 public:
  ResBlock(const WeightView& weights, VocoderResBlock kind, int64_t channels, int64_t kernel,
           const std::vector<int64_t>& dilations);
  Tensor forward(const Tensor& x) const;

 private:
  VocoderResBlock kind_;
  std::vector<Conv1dLayer> convs1_, convs2_;
  std::vector<AntiAliasedSnakeBeta> acts1_, acts2_;  // AMP1 only
};

class Generator {
 public:
  // Stereo input: 2 channels x 64 mel bins feed conv_pre.
  static constexpr int64_t kInputChannels = 128;

  // Weights land where `weights` is placed (WeightView::placed); activations are `compute` (the
  // weights' dtype, or float32 over bf16 weights as the reference's autocast does for the BWE).
  Generator(VocoderGeneratorConfig config, const WeightView& weights, DType compute);
  Generator(VocoderGeneratorConfig config, const WeightView& weights)
      : Generator(std::move(config), weights, weights.dtype()) {}

  // mel [B, 2, T, 64] (time, mel; any device and float dtype, brought to the weights' device and
  // the compute dtype first) -> waveform [B, 2, T * hop] there. Probe names are `prefix` + conv_pre,
  // ups_{i}_in, ups_{i}, act_post_in, act_post, conv_post.
  Tensor forward(const Tensor& mel, const Probe& probe = {}, const std::string& prefix = "") const;

  const VocoderGeneratorConfig& config() const { return config_; }

 private:
  VocoderGeneratorConfig config_;
  DType compute_;
  Device device_;
  Tensor kernel_count_, minus_one_, one_;  // 0-d constants in the compute dtype on device_
  Conv1dLayer conv_pre_, conv_post_;
  std::vector<Tensor> ups_weight_, ups_bias_;
  std::vector<ResBlock> resblocks_;             // stage i owns [i * K, (i + 1) * K) for K kernel sizes
  std::vector<AntiAliasedSnakeBeta> act_post_;  // AMP1: one entry
};

}  // namespace ltx2::vocoder
