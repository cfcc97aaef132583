#include "models/vocoder/bandwidth_extension.h"

#include <cmath>
#include <numbers>

#include "core/error.h"
#include "ops/conv1d.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/resample1d.h"
#include "ops/shape.h"

namespace ltx2::vocoder {

namespace {

constexpr double kRolloff = 0.99;
constexpr int64_t kZeroCrossings = 6;  // lowpass_filter_width
constexpr float kMelFloor = 1e-5f;

}  // namespace

HannSincResampler::HannSincResampler(int64_t r, Device device)
    : ratio(r), width(static_cast<int64_t>(std::ceil(kZeroCrossings / kRolloff))) {
  LTX2_CHECK(ratio >= 1, "resampler ratio {} must be at least 1", ratio);
  const int64_t taps = 2 * width * ratio + 1;
  // Float32 arithmetic in the reference's order, so the taps match its buffer to rounding.
  const float rolloff = static_cast<float>(kRolloff), pi = std::numbers::pi_v<float>;
  const float limit = static_cast<float>(kZeroCrossings);
  std::vector<float> h(taps);
  for (int64_t n = 0; n < taps; ++n) {
    const float t = (static_cast<float>(n) / static_cast<float>(ratio) - static_cast<float>(width)) * rolloff;
    const float clamped = std::fmin(std::fmax(t, -limit), limit);
    const float c = std::cos(clamped * pi / limit / 2.f);
    const float sinc = t == 0.f ? 1.f : std::sin(pi * t) / (pi * t);
    h[n] = sinc * (c * c) * rolloff / static_cast<float>(ratio);
  }
  filter = Tensor::from_vector(h, {taps}).to(device);
}

Tensor HannSincResampler::forward(const Tensor& x) const {
  const int64_t taps = filter.numel();
  // Replicate-pad `width` input samples, then keep exactly ratio * L outputs.
  return ops::upsample1d(x, filter, ratio, width, 2 * width * ratio, taps - ratio);
}

BandwidthExtension::BandwidthExtension(VocoderBweConfig config, const WeightView& weights)
    : config_(std::move(config)),
      generator_(config_.generator, weights.sub("bwe_generator."), DType::F32),
      resampler_(config_.output_sampling_rate / config_.input_sampling_rate, weights.device()),
      minus_one_(Tensor::scalar(-1.f).to(weights.device())),
      one_(Tensor::scalar(1.f).to(weights.device())),
      mel_floor_(Tensor::scalar(kMelFloor).to(weights.device())) {
  const int64_t freqs = config_.n_fft / 2 + 1;
  forward_basis_ = weights.load("mel_stft.stft_fn.forward_basis", {2 * freqs, 1, config_.n_fft});
  mel_basis_ = weights.load("mel_stft.mel_basis", {config_.num_mels, freqs}).to(DType::F32);
}

Tensor BandwidthExtension::log_mel(const Tensor& waveform) const {
  const int64_t B = waveform.size(0), C = waveform.size(1), L = waveform.size(2);
  const int64_t freqs = config_.n_fft / 2 + 1;
  LTX2_CHECK(L % config_.hop_length == 0, "bandwidth extension: {} samples are not a multiple of hop {}", L,
             config_.hop_length);
  // Causal STFT: left padding of window - hop zeros, frames every hop samples.
  ops::Conv1dOptions stft;
  stft.stride = config_.hop_length;
  stft.pad_left = config_.n_fft - config_.hop_length;
  Tensor spec = ops::conv1d(waveform.reshape({B * C, 1, L}), forward_basis_, Tensor(), stft);
  Tensor re = spec.narrow(1, 0, freqs), im = spec.narrow(1, freqs, freqs);
  Tensor magnitude = ops::unary(ops::add(ops::mul(re, re), ops::mul(im, im)), ops::UnaryOp::Sqrt);
  // [N, F, T] -> [N, T, F] @ mel_basisᵀ -> [N, T, mels], already the (time, mel) layout.
  Tensor mel = ops::matmul(magnitude.transpose(1, 2), mel_basis_.transpose(0, 1));
  mel = ops::unary(ops::maximum(mel, mel_floor_), ops::UnaryOp::Log);
  return mel.reshape({B, C, mel.size(1), config_.num_mels});
}

Tensor BandwidthExtension::forward(const Tensor& waveform, const Probe& probe) const {
  LTX2_CHECK(waveform.dim() == 3 && waveform.size(1) == 2 && waveform.dtype() == DType::F32,
             "bandwidth extension: waveform {} must be float32 [B, 2, L]", waveform.str());
  auto emit = [&](const std::string& name, const Tensor& t) {
    if (probe) probe(name, t);
  };
  const int64_t L = waveform.size(2);
  const int64_t out_len = L * config_.output_sampling_rate / config_.input_sampling_rate;
  const int64_t rem = L % config_.hop_length;
  Tensor x = rem ? ops::pad(waveform, 2, 0, config_.hop_length - rem) : waveform;

  Tensor mel = log_mel(x);
  emit("bwe_mel_in", mel);
  Tensor residual = generator_.forward(mel, probe, "bwe_generator.");
  emit("bwe_residual", residual);
  Tensor skip = resampler_.forward(x);
  emit("resampler_skip", skip);
  LTX2_CHECK(residual.shape() == skip.shape(),
             "bandwidth extension: residual {} and resampled skip {} differ", residual.str(), skip.str());
  return ops::minimum(ops::maximum(ops::add(residual, skip), minus_one_), one_)
      .narrow(2, 0, out_len)
      .contiguous();
}

}  // namespace ltx2::vocoder
