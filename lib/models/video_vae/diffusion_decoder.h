// LTX-2.5's diffusion video decoder (vae._class_name "CausalDiffusionVAE"; the reference's
// DiffusionVideoDecoder as its pipelines run it: the default DiffVAEMode "chunked_eager" pathway):
// normalized latent [1, C, F, H, W] + noise -> video [1, 3, 1 + 8(F-1), 32H, 32W] in [-1, 1], not
// clamped, whole or tiled (_decode_pixels).
//
// Decode: the latent is edge-padded up to the config's size floor (frames repeat the last, H and W
// replicate both edges, the odd one after), its last frame repeated trailing_pad_latent_frames()
// more times; un_normalize, conv_in (a linear, channels-last), stages 1-3 (NA blocks + pixel-shuffle
// upsamples) -> the stage-4 input, once for the whole video. Then per tile of the plan
// (diffusion_tiling.h; untiled: one tile over everything): stage 4's NA blocks on the tile's cells
// (a tile reaching the end takes the repeated frames too and crops them after) -> the context;
// upsamples[3] of the context (the first tile alone dropping its leading frame) feeds every
// diffusion block (its own context_proj). The diffusion stage denoises the patchified pixels x_t
// from the noise over timesteps linspace(1, 1/n, n) (n = default_num_inference_steps): each step
// conv_in_x_t, the timestep embedding (t_embedder.mlp.{0,2}: sinusoid(256) -> linear -> SiLU ->
// linear of timestep_scale_multiplier * t) into the shared AdaLN (7 chunks), the diffusion blocks,
// norm_out, conv_out, unpatchify; then an Euler step to the next timestep (x0 outputs as velocity
// (x_t - x0) / t); the last step's x0 is the result (v outputs: one more Euler step to 0). The
// tile's pixels, cropped to its box, are blended with its masks (tiling/tile_blender.h), and the
// video cropped back to the latent's content.
//
// Noise: the reference draws it from the caller's generator; here it is an input (noise_shapes):
// the padded latent's full pixel shape once, each tile taking its box (brought to the diffusion
// stage's shape as the reference does: frames repeat the last, H and W replicate both edges); for a
// single x0 step, one draw per tile of its diffusion-stage shape, in tile order, as the reference
// draws them. Batch 1 only (the reference's chunked pathway's limit). Not here: the reference's
// combined (natten + torch.compile) pathway (it differs at the W borders of the diffusion stage's
// attention).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "io/configs/diffusion_video_decoder_config.h"
#include "io/weights.h"
#include "models/video_vae/latent_stats.h"
#include "models/video_vae/na_blocks.h"
#include "models/video_vae/tiling.h"
#include "models/video_vae/trace.h"
#include "tiling/tile_plan.h"

namespace ltx2::video_vae {

class DiffusionVideoDecoder {
 public:
  // `decoder`: view over the decoder's keys (vae.decoder.* / decoder.*); `stats`: over the
  // per-channel statistics. Every tensor's shape is checked; a missing one is named.
  DiffusionVideoDecoder(const DiffusionVideoDecoderConfig& config, const WeightView& decoder,
                        const WeightView& stats);
  static DiffusionVideoDecoder from_weights(const std::shared_ptr<const WeightSet>& set,
                                            DType dtype = DType::F32, Device device = Device::cpu());

  // The tile plan of a decode of `latent_shape` [1, C, F, H, W] (plan_diffusion_tiles over its
  // size-floored latent; out boxes in that latent's pixels); untiled `tiles`: one tile.
  tiling::TilePlan tile_plan(const Shape& latent_shape, const TileSizeConfig& tiles = {}) const;
  // Where the latent's own pixels lie in the plan's out extent (the size floor's pads cut away).
  std::array<tiling::Range, 3> content_box(const Shape& latent_shape) const;
  // The noise draws a decode takes, in order (see the header comment).
  std::vector<Shape> noise_shapes(const Shape& latent_shape, const tiling::TilePlan& plan) const;
  // The untiled decode's one draw.
  Shape noise_shape(const Shape& latent_shape) const;
  // The sampling timesteps, float32 as torch.linspace(1, 1/n, n) forms them.
  std::vector<float> timesteps() const;

  // Stages 1-3 of the size-floored latent with its repeated trailing frames: [1, T, H, W, C].
  Tensor stage4_input(const Tensor& latent) const;
  // Tile `index` of `plan`: stage 4 on its cells of `stage4_input` and the sampling loop from its
  // share of `noise` (noise_shapes' draws). Returns its pixels [1, 3, f, h, w] (its out box, in the
  // decoder's dtype), before its masks.
  Tensor decode_tile(const Tensor& stage4_input, const tiling::TilePlan& plan, size_t index,
                     const std::vector<Tensor>& noise, const Trace& trace = {}) const;
  // The video's frames crossing the blend of `plan`'s tiles: on_chunk receives [1, 3, n, H, W]
  // float32 runs in time order (their concatenation is the video), the content only.
  void decode(const Tensor& latent, const std::vector<Tensor>& noise, const tiling::TilePlan& plan,
              const std::function<void(const Tensor& frames)>& on_chunk) const;
  // Untiled, the whole video at once in the decoder's dtype. Trace names: stage4_input, context
  // ([B, T, H, W, C] channels-last), step<i>.t_emb, step<i>.modulation ([B, 7, C]), step<i>.model_out
  // (the pixel-space prediction).
  Tensor decode(const Tensor& latent, const Tensor& noise, const Trace& trace = {}) const;

  const DiffusionVideoDecoderConfig& config() const { return config_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }

 private:
  struct Geometry;
  Geometry geometry(const Shape& latent_shape) const;
  // One x0 step: the reference draws each tile's noise apart (at its diffusion-stage shape).
  bool single_step_x0() const {
    return config_.num_inference_steps == 1 && config_.output == DiffusionVideoDecoderConfig::Output::X0;
  }
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
