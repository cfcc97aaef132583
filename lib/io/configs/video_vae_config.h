// Typed configs of the LTX-2 video VAE (conv encoder and decoder), read from the checkpoint's
// metadata config["vae"] with the reference configurator's defaults and reading rules. Anything
// this engine does not implement (other VAE classes, attention / res_x_y blocks, noise injection,
// group-norm layers, 2-D convolutions) is refused with a message naming the key.
#pragma once

#include <array>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace ltx2 {

enum class SpatialPadding { Zeros, Reflect, Replicate, Circular };
const char* spatial_padding_name(SpatialPadding p);

enum class VideoBlockKind {
  ResX,              // UNetMidBlock3D: num_layers residual blocks at constant width
  CompressTime,      // decoder DepthToSpaceUpsample, stride (2, 1, 1)
  CompressSpace,     // decoder DepthToSpaceUpsample, stride (1, 2, 2)
  CompressAll,       // decoder DepthToSpaceUpsample, stride (2, 2, 2)
  CompressTimeRes,   // encoder SpaceToDepthDownsample, stride (2, 1, 1)
  CompressSpaceRes,  // encoder SpaceToDepthDownsample, stride (1, 2, 2)
  CompressAllRes,    // encoder SpaceToDepthDownsample, stride (2, 2, 2)
};

struct VideoVaeBlock {
  VideoBlockKind kind = VideoBlockKind::ResX;
  int64_t num_layers = 1;  // res_x
  int64_t multiplier = 1;  // compress blocks: width divisor (decoder) / multiplier (encoder)
  bool residual = false;   // decoder compress_all only
  // (time, height, width) stride of a compress block; (1, 1, 1) for res_x.
  std::array<int64_t, 3> stride() const;
};

// Pixel-per-latent factors: time 2^(time-compressing blocks), space patch * 2^(space blocks).
struct VideoScaleFactors {
  int64_t time = 1, height = 1, width = 1;
};
VideoScaleFactors video_scale_factors(const std::vector<VideoVaeBlock>& blocks, int64_t patch_size);

struct VideoDecoderConfig {
  int64_t latent_channels = 128;
  int64_t out_channels = 3;
  int64_t patch_size = 4;
  int64_t base_channels = 128;        // decoder_base_channels: width after the last block
  std::vector<VideoVaeBlock> blocks;  // as listed in decoder_blocks; they run in reverse order
  bool causal = false;
  bool timestep_conditioning = true;
  SpatialPadding spatial_padding = SpatialPadding::Reflect;

  // `metadata_config`: the checkpoint's parsed metadata "config" object (reads its "vae").
  static VideoDecoderConfig from_metadata(const nlohmann::json& metadata_config);
  // The bottleneck width conv_in produces: base * product of the compress blocks' multipliers.
  int64_t feature_channels() const;
  VideoScaleFactors scale_factors() const { return video_scale_factors(blocks, patch_size); }
};

// "constant" (LTX-2.5's encoder): one log-variance channel like "uniform", replaced by a constant;
// the means, all the engine uses, are the same first latent_channels channels.
enum class LatentLogVar { Uniform, PerChannel, Constant };

struct VideoEncoderConfig {
  int64_t in_channels = 3;
  int64_t latent_channels = 128;
  int64_t patch_size = 4;
  std::vector<VideoVaeBlock> blocks;  // encoder_blocks, in order
  LatentLogVar latent_log_var = LatentLogVar::Uniform;
  SpatialPadding spatial_padding = SpatialPadding::Zeros;

  static VideoEncoderConfig from_metadata(const nlohmann::json& metadata_config);
  // conv_out width: the means plus the log-variance channel(s).
  int64_t conv_out_channels() const;
  VideoScaleFactors scale_factors() const { return video_scale_factors(blocks, patch_size); }
};

}  // namespace ltx2
