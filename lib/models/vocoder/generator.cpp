#include "models/vocoder/generator.h"

#include "core/error.h"
#include "ops/conv_transpose1d.h"
#include "ops/elementwise.h"

namespace ltx2::vocoder {

namespace {

constexpr float kResBlockSlope = 0.1f;  // LRELU_SLOPE of ResBlock1 and before the ups
constexpr float kPostSlope = 0.01f;     // nn.LeakyReLU() default, used as act_post of resblock "1"
constexpr int64_t kOuterKernel = 7;     // conv_pre / conv_post

Tensor leaky_relu(const Tensor& x, float slope) {
  return ops::unary(x, ops::UnaryOp::LeakyRelu, slope);
}

Conv1dLayer load_conv(const WeightView& w, const std::string& name, int64_t in, int64_t out, int64_t kernel,
                      bool with_bias, ops::Conv1dOptions options) {
  Conv1dLayer c;
  c.weight = w.load(name + ".weight", {out, in, kernel});
  if (with_bias) c.bias = w.load(name + ".bias", {out});
  c.options = options;
  return c;
}

// Zero padding keeping the length at stride 1: PyTorch's padding="same" (extra sample after) for
// ResBlock1, get_padding's symmetric (k*d - d) / 2 for AMPBlock1; equal for the odd kernels in use.
ops::Conv1dOptions length_preserving(VocoderResBlock kind, int64_t kernel, int64_t dilation) {
  ops::Conv1dOptions o;
  o.dilation = dilation;
  const int64_t total = dilation * (kernel - 1);
  o.pad_left = kind == VocoderResBlock::HifiGan1 ? total / 2 : (kernel * dilation - dilation) / 2;
  o.pad_right = kind == VocoderResBlock::HifiGan1 ? total - total / 2 : o.pad_left;
  return o;
}

}  // namespace

Tensor Conv1dLayer::forward(const Tensor& x) const {
  return ops::conv1d(x, weight, bias, options);
}

ResBlock::ResBlock(const WeightView& weights, VocoderResBlock kind, int64_t channels, int64_t kernel,
                   const std::vector<int64_t>& dilations)
    : kind_(kind) {
  for (size_t j = 0; j < dilations.size(); ++j) {
    const std::string idx = std::to_string(j);
    convs1_.push_back(load_conv(weights, "convs1." + idx, channels, channels, kernel, true,
                                length_preserving(kind, kernel, dilations[j])));
    convs2_.push_back(load_conv(weights, "convs2." + idx, channels, channels, kernel, true,
                                length_preserving(kind, kernel, 1)));
    if (kind == VocoderResBlock::Amp1) {
      acts1_.emplace_back(weights.sub("acts1." + idx + "."), channels);
      acts2_.emplace_back(weights.sub("acts2." + idx + "."), channels);
    }
  }
}

Tensor ResBlock::forward(const Tensor& x) const {
  Tensor h = x;
  for (size_t j = 0; j < convs1_.size(); ++j) {
    const bool amp = kind_ == VocoderResBlock::Amp1;
    Tensor t = amp ? acts1_[j].forward(h) : leaky_relu(h, kResBlockSlope);
    t = convs1_[j].forward(t);
    t = amp ? acts2_[j].forward(t) : leaky_relu(t, kResBlockSlope);
    t = convs2_[j].forward(t);
    h = ops::add(h, t);
  }
  return h;
}

Generator::Generator(VocoderGeneratorConfig config, const WeightView& weights, DType compute)
    : config_(std::move(config)), compute_(compute), device_(weights.device()) {
  const auto& c = config_;
  auto constant = [&](float v) { return Tensor::scalar(v).to(compute_).to(device_); };
  kernel_count_ = constant(static_cast<float>(c.resblock_kernel_sizes.size()));
  minus_one_ = constant(-1.f);
  one_ = constant(1.f);
  const int64_t stages = static_cast<int64_t>(c.upsample_rates.size());
  const int64_t kernels = static_cast<int64_t>(c.resblock_kernel_sizes.size());
  const int64_t base = c.upsample_initial_channel;
  ops::Conv1dOptions same_outer;
  same_outer.pad_left = same_outer.pad_right = kOuterKernel / 2;
  conv_pre_ = load_conv(weights, "conv_pre", kInputChannels, base, kOuterKernel, true, same_outer);
  for (int64_t i = 0; i < stages; ++i) {
    const int64_t in = base >> i, out = base >> (i + 1), k = c.upsample_kernel_sizes[i];
    const std::string name = "ups." + std::to_string(i);
    ups_weight_.push_back(weights.load(name + ".weight", {in, out, k}));
    ups_bias_.push_back(weights.load(name + ".bias", {out}));
    for (int64_t j = 0; j < kernels; ++j) {
      resblocks_.emplace_back(weights.sub("resblocks." + std::to_string(i * kernels + j) + "."), c.resblock,
                              out, c.resblock_kernel_sizes[j], c.resblock_dilation_sizes[j]);
    }
  }
  const int64_t final_channels = base >> stages;
  if (c.resblock == VocoderResBlock::Amp1) act_post_.emplace_back(weights.sub("act_post."), final_channels);
  conv_post_ =
      load_conv(weights, "conv_post", final_channels, 2, kOuterKernel, c.use_bias_at_final, same_outer);
}

Tensor Generator::forward(const Tensor& mel, const Probe& probe, const std::string& prefix) const {
  const auto& c = config_;
  LTX2_CHECK(mel.dim() == 4 && mel.size(1) == 2 && 2 * mel.size(3) == kInputChannels,
             "vocoder: mel {} must be stereo [B, 2, T, {}]", mel.str(), kInputChannels / 2);
  auto emit = [&](const std::string& name, const Tensor& t) {
    if (probe) probe(prefix + name, t);
  };
  const bool amp = c.resblock == VocoderResBlock::Amp1;
  const int64_t B = mel.size(0), T = mel.size(2);
  // [B, 2, T, M] -> [B, 2, M, T] -> [B, 2M, T] (channel = stereo channel * M + mel bin).
  Tensor x = mel.to(device_).to(compute_).transpose(2, 3).reshape({B, kInputChannels, T});
  x = conv_pre_.forward(x);
  emit("conv_pre", x);
  const size_t kernels = c.resblock_kernel_sizes.size();
  for (size_t i = 0; i < c.upsample_rates.size(); ++i) {
    if (!amp) x = leaky_relu(x, kResBlockSlope);
    const std::string stage = "ups_" + std::to_string(i);
    emit(stage + "_in", x);
    ops::ConvTranspose1dOptions up;
    up.stride = c.upsample_rates[i];
    up.padding = (c.upsample_kernel_sizes[i] - c.upsample_rates[i]) / 2;
    x = ops::conv_transpose1d(x, ups_weight_[i], ups_bias_[i], up);
    emit(stage, x);
    // Every resblock of the stage reads the same input; the stage output is their mean.
    Tensor sum = resblocks_[i * kernels].forward(x);
    for (size_t j = 1; j < kernels; ++j) sum = ops::add(sum, resblocks_[i * kernels + j].forward(x));
    x = ops::div(sum, kernel_count_);
  }
  emit("act_post_in", x);
  x = amp ? act_post_[0].forward(x) : leaky_relu(x, kPostSlope);
  emit("act_post", x);
  x = conv_post_.forward(x);
  emit("conv_post", x);
  if (!c.apply_final_activation) return x;
  if (c.use_tanh_at_final) return ops::tanh(x);
  return ops::minimum(ops::maximum(x, minus_one_), one_);
}

}  // namespace ltx2::vocoder
