// Video VAE residual blocks, the mid block and the timestep embedder.
#include "models/video_vae/resnet.h"

#include <cmath>

#include "core/error.h"
#include "ops/channel_norm.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/shape.h"

namespace ltx2::video_vae {

namespace {
constexpr int64_t kSinusoidDim = 256;

Tensor row(const Tensor& ada, int64_t i) {
  return ada.select(1, i);
}  // [B, k, C] -> [B, C]
}  // namespace

Tensor sinusoid_frequencies(int64_t half) {
  std::vector<float> f(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    f[i] = std::exp(-std::log(10000.f) * static_cast<float>(i) / static_cast<float>(half));
  return Tensor::from_vector(f, {1, half});
}

Tensor sinusoidal_timestep_embedding(const Tensor& t, const Tensor& frequencies) {
  LTX2_CHECK(t.dtype() == DType::F32 && frequencies.dtype() == DType::F32,
             "timestep embedding: t {} and frequencies {} must be float32", t.str(), frequencies.str());
  const Tensor arg = ops::mul(t.contiguous().view({t.numel(), 1}), frequencies);
  return ops::cat({ops::unary(arg, ops::UnaryOp::Cos), ops::unary(arg, ops::UnaryOp::Sin)}, 1);
}

TimestepEmbedder::TimestepEmbedder(const WeightView& w, const std::string& name, int64_t width)
    : frequencies_(sinusoid_frequencies(kSinusoidDim / 2).to(w.device())) {
  const WeightView e = w.sub(name + ".timestep_embedder.");
  w1_ = e.load("linear_1.weight", {width, kSinusoidDim});
  b1_ = e.load("linear_1.bias", {width});
  w2_ = e.load("linear_2.weight", {width, width});
  b2_ = e.load("linear_2.bias", {width});
}

Tensor TimestepEmbedder::forward(const Tensor& t) const {
  const Tensor sinusoid = sinusoidal_timestep_embedding(t, frequencies_).to(w1_.dtype());
  Tensor h = ops::linear(sinusoid, w1_, b1_);
  return ops::linear(ops::silu(h), w2_, b2_);
}

Tensor modulate(const Tensor& x, const Tensor& shift, const Tensor& scale) {
  const Shape bc = {x.size(0), x.size(1), 1, 1, 1};
  Tensor s = ops::add(scale.contiguous().view(bc), 1.f);
  return ops::add(ops::mul(x, s), shift.contiguous().view(bc));
}

ResnetBlock3D::ResnetBlock3D(const WeightView& w, int64_t channels, SpatialPadding padding, bool conditioned)
    : conv1_(w, "conv1", channels, channels, padding),
      conv2_(w, "conv2", channels, channels, padding),
      channels_(channels) {
  if (conditioned) scale_shift_table_ = w.load("scale_shift_table", {4, channels});
}

Tensor ResnetBlock3D::forward(const Tensor& x, bool causal, const Tensor& embedding) const {
  Tensor ada;
  if (scale_shift_table_.defined()) {
    LTX2_CHECK(embedding.defined(), "video VAE res block: timestep-conditioned block needs a timestep");
    ada = ops::add(embedding.view({embedding.size(0), 4, channels_}), scale_shift_table_);
  }
  Tensor h = ops::pixel_norm(x, kPixelNormEps);
  if (ada.defined()) h = modulate(h, row(ada, 0), row(ada, 1));
  h = conv1_.forward(ops::silu(h), causal);
  h = ops::pixel_norm(h, kPixelNormEps);
  if (ada.defined()) h = modulate(h, row(ada, 2), row(ada, 3));
  h = conv2_.forward(ops::silu(h), causal);
  return ops::add(x, h);
}

MidBlock3D::MidBlock3D(const WeightView& w, int64_t channels, int64_t num_layers, SpatialPadding padding,
                       bool conditioned)
    : conditioned_(conditioned), channels_(channels) {
  if (conditioned) time_embedder_ = TimestepEmbedder(w, "time_embedder", 4 * channels);
  for (int64_t i = 0; i < num_layers; ++i)
    blocks_.emplace_back(w.sub("res_blocks." + std::to_string(i) + "."), channels, padding, conditioned);
}

Tensor MidBlock3D::forward(const Tensor& x, bool causal, const Tensor& scaled_timestep,
                           Tensor* time_embedding_out) const {
  LTX2_CHECK(x.dim() == 5 && x.size(1) == channels_, "video VAE mid block: input {} for {} channels", x.str(),
             channels_);
  Tensor embedding;
  if (conditioned_) {
    LTX2_CHECK(scaled_timestep.defined(), "video VAE mid block: timestep-conditioned block needs a timestep");
    embedding = time_embedder_.forward(scaled_timestep);
    if (time_embedding_out) *time_embedding_out = embedding;
  }
  Tensor h = x;
  for (const auto& b : blocks_) h = b.forward(h, causal, embedding);
  return h;
}

}  // namespace ltx2::video_vae
