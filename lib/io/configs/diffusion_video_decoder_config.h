// Typed config of LTX-2.5's diffusion video decoder (vae._class_name "CausalDiffusionVAE", the
// reference's DiffusionVideoDecoder), read from the checkpoint's metadata config["vae"]["decoder"]
// (or config["vae"] itself when it has no "decoder") with the reference configurator's defaults
// (_build_diffusion_video_decoder). What this engine cannot run is refused naming the key: a stage
// ladder other than 4 deterministic stages + the diffusion stage, widths that are not whole heads,
// upsample ladders that do not scale latents by the fixed 8 x 32 x 32, a head dim without the
// reference's RoPE split, a resampler other than "linear", model_output_type other than v / x0.
// The conv decoder's config (video_vae_config.h) is unchanged and still refuses this class.
#pragma once

#include <array>
#include <nlohmann/json_fwd.hpp>
#include <vector>

namespace ltx2 {

using Dims3 = std::array<int64_t, 3>;  // (time, height, width)

// vae._class_name: absent or "CausalVideoAutoencoder" (the conv decoder) -> false,
// "CausalDiffusionVAE" -> true; any other name is refused naming '_class_name'.
bool is_diffusion_video_vae(const nlohmann::json& metadata_config);

// The reference's default split of a head's channels over the (T, H, W) RoPE axes; head_dim must
// be a multiple of 8 whose split has even, positive parts (16 -> 4, 6, 6; 64 -> 16, 24, 24).
// Returns {0, 0, 0} when it has none.
Dims3 default_rope_dim_split(int64_t head_dim);

struct DiffusionVideoDecoderConfig {
  struct Upsample {
    Dims3 stride{1, 1, 1};
    int64_t reduction = 1;  // out channels = in channels / reduction
  };
  enum class Output { Velocity, X0 };  // model_output_type "v" / "x0"

  int64_t in_channels = 128;  // latent channels
  int64_t out_channels = 3;
  int64_t patch_size = 4;
  int64_t head_dim = 64;
  int64_t t_emb_dim = 384;
  int64_t num_inference_steps = 2;  // default_num_inference_steps
  double timestep_scale_multiplier = 1.0;
  Output output = Output::Velocity;
  std::vector<int64_t> stage_channels = {1024, 512, 256, 256, 128};
  std::vector<int64_t> stage_depths = {4, 6, 4, 2, 8};
  std::vector<Dims3> stage_kernels = {{3, 7, 7}, {3, 7, 7}, {3, 5, 5}, {3, 5, 5}, {3, 3, 3}};
  std::vector<Upsample> upsamples = {{{1, 2, 2}, 2}, {{2, 1, 1}, 2}, {{2, 2, 2}, 1}, {{2, 2, 2}, 2}};
  Dims3 stage5_kernel{3, 7, 7};
  int64_t stage5_channels = 0;  // 0: stage_channels.back()
  Dims3 rope_split{};           // default_rope_dim_split(head_dim)

  // `metadata_config`: the checkpoint's parsed metadata "config" object (reads its "vae").
  static DiffusionVideoDecoderConfig from_metadata(const nlohmann::json& metadata_config);

  int64_t context_channels() const { return stage_channels.back(); }
  int64_t diffusion_channels() const { return stage5_channels > 0 ? stage5_channels : stage_channels.back(); }
  // Last latent frame replicated this many times through stages 1-4 (NATTEN's last-frame border).
  int64_t trailing_pad_latent_frames() const { return (stage_kernels[0][0] / 2) * 2; }
  // The latent size floor under which the latent is edge-padded first (every stage's NA >= kernel).
  Dims3 min_latent_size() const;
  // The stage-4 input grid of `latent_cells` (frames, height, width): each of the first three
  // upsamples multiplies the axes by its stride, a time stride of 2 dropping the first frame.
  Dims3 stage4_cells(const Dims3& latent_cells) const;
};

}  // namespace ltx2
