// LTX-2.3's bandwidth extension (the BWE half of reference VocoderWithBWE): from the generator's
// low-rate waveform [B, 2, L] it computes a causal log-mel (STFT as a strided conv with the stored
// DFT x window basis, magnitude, stored mel filterbank, log of clamp 1e-5), runs the BWE generator
// on it for a high-rate residual, adds a Hann-windowed-sinc resampled copy of the input (torchaudio's
// resampler, computed here, not stored), clamps to [-1, 1] and trims to L x rate ratio samples.
// Keys (window vocoder.): bwe_generator.*, mel_stft.mel_basis [mels, n_fft/2+1],
// mel_stft.stft_fn.forward_basis [2 (n_fft/2+1), 1, n_fft].
#pragma once

#include "core/tensor.h"
#include "io/configs/vocoder_config.h"
#include "io/weights.h"
#include "models/vocoder/generator.h"

namespace ltx2::vocoder {

// The resampler's filter for an integer `ratio` (UpSample1d with window "hann": rolloff 0.99,
// 6 zero crossings), and its geometry.
struct HannSincResampler {
  Tensor filter;  // [2 * width * ratio + 1] float32 on `device`
  int64_t ratio = 1, width = 0;
  explicit HannSincResampler(int64_t ratio, Device device = Device::cpu());
  // [B, C, L] -> [B, C, ratio * L].
  Tensor forward(const Tensor& x) const;
};

class BandwidthExtension {
 public:
  // `weights`: the vocoder window (vocoder.), holding bwe_generator.* and mel_stft.*, placed where
  // the model goes; it computes in float32 whatever the weights' dtype (the reference's autocast).
  BandwidthExtension(VocoderBweConfig config, const WeightView& weights);

  // waveform [B, 2, L] float32 at the input rate, on the weights' device -> [B, 2, L * ratio] at the
  // output rate. Probe names:
  // bwe_mel_in, bwe_residual, resampler_skip, and the BWE generator's as bwe_generator.<name>.
  Tensor forward(const Tensor& waveform, const Probe& probe = {}) const;

  // Causal log-mel of [B, C, L] (L a multiple of hop_length) -> [B, C, L / hop, mels] (time, mel).
  Tensor log_mel(const Tensor& waveform) const;

 private:
  VocoderBweConfig config_;
  Generator generator_;
  Tensor forward_basis_, mel_basis_;  // mel_basis_ float32 (the STFT matmul's operands match)
  HannSincResampler resampler_;
  Tensor minus_one_, one_, mel_floor_;  // 0-d float32 on the weights' device
};

}  // namespace ltx2::vocoder
