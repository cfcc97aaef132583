// LTX-2.5's diffusion video decoder (vae._class_name "CausalDiffusionVAE"; the reference's
// DiffusionVideoDecoder as its pipelines run it: the default DiffVAEMode "chunked_eager" pathway,
// untiled): normalized latent [1, C, F, H, W] + noise -> video [1, 3, 1 + 8(F-1), 32H, 32W] in
// [-1, 1], not clamped.
//
// Decode: the latent is edge-padded up to the config's size floor (frames repeat the last, H and W
// replicate both edges, the odd one after), its last frame repeated trailing_pad_latent_frames()
// more times; un_normalize, conv_in (a linear, channels-last), stages 1-3 (NA blocks + pixel-shuffle
// upsamples) -> stage-4 input; stage 4's NA blocks, the repeated frames cropped -> the context;
// upsamples[3] of the context feeds every diffusion block (its own context_proj). The diffusion
// stage denoises the patchified pixels x_t from the noise over timesteps linspace(1, 1/n, n)
// (n = default_num_inference_steps): each step conv_in_x_t, the timestep embedding
// (t_embedder.mlp.{0,2}: sinusoid(256) -> linear -> SiLU -> linear of timestep_scale_multiplier * t)
// into the shared AdaLN (7 chunks), the diffusion blocks, norm_out, conv_out, unpatchify; then an
// Euler step to the next timestep (x0 outputs as velocity (x_t - x0) / t); the last step's x0 is the
// result (v outputs: one more Euler step to 0). The pixels are cropped back to the latent's content.
//
// Noise: the reference draws it from the caller's generator; here it is an input of noise_shape():
// the padded latent's full pixel shape, or, for a single x0 step, the diffusion stage's shape
// (the frames at least stage5_kernel's). Batch 1 only (the reference's chunked pathway's limit).
// Not here: tiled and distributed decode of this decoder, the reference's combined (natten +
// torch.compile) pathway (it differs at the W borders of the diffusion stage's attention).
#pragma once

#include <memory>
#include <vector>

#include "io/configs/diffusion_video_decoder_config.h"
#include "io/weights.h"
#include "models/video_vae/latent_stats.h"
#include "models/video_vae/na_blocks.h"
#include "models/video_vae/trace.h"

namespace ltx2::video_vae {

class DiffusionVideoDecoder {
 public:
  // `decoder`: view over the decoder's keys (vae.decoder.* / decoder.*); `stats`: over the
  // per-channel statistics. Every tensor's shape is checked; a missing one is named.
  DiffusionVideoDecoder(const DiffusionVideoDecoderConfig& config, const WeightView& decoder,
                        const WeightView& stats);
  static DiffusionVideoDecoder from_weights(const std::shared_ptr<const WeightSet>& set,
                                            DType dtype = DType::F32, Device device = Device::cpu());

  // The noise decode() takes for a latent of `latent_shape` [1, C, F, H, W].
  Shape noise_shape(const Shape& latent_shape) const;
  // The sampling timesteps, float32 as torch.linspace(1, 1/n, n) forms them.
  std::vector<float> timesteps() const;

  // Trace names: stage4_input, context ([B, T, H, W, C] channels-last), step<i>.t_emb,
  // step<i>.modulation ([B, 7, C]), step<i>.model_out (the pixel-space prediction).
  Tensor decode(const Tensor& latent, const Tensor& noise, const Trace& trace = {}) const;

  const DiffusionVideoDecoderConfig& config() const { return config_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }

 private:
  struct Geometry;
  Geometry geometry(const Shape& latent_shape) const;
  // forward_diff_step_deferred: the pixel-space prediction at timestep t (t_emb and the shared
  // modulation handed out when asked).
  Tensor model_step(const Tensor& x_t, const Tensor& context, float t, Tensor* t_emb = nullptr,
                    Tensor* modulation = nullptr) const;

  DiffusionVideoDecoderConfig config_;
  DType dtype_;
  Device device_;
  LatentStatistics stats_;
  Tensor conv_in_w_, conv_in_b_, conv_in_x_t_w_, conv_in_x_t_b_, conv_out_w_, conv_out_b_, norm_out_;
  Tensor t_w1_, t_b1_, t_w2_, t_b2_, t_frequencies_, adaln_w_, adaln_b_;
  std::vector<std::vector<NaBlock>> det_stages_;
  std::vector<PixelShuffleUpsample> upsamples_;
  std::vector<DiffusionNaBlock> diff_blocks_;
};

}  // namespace ltx2::video_vae
