// Typed config of the latent spatial upsampler (LatentUpsampler), read from the top level of its
// own file's metadata config. Supported: dims 3, spatial x2 (pixel shuffle) and the rational
// resampler (scales 0.75, 1.5, 2, 4); temporal upsampling is refused naming the key.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>

namespace ltx2 {

struct UpsamplerConfig {
  int64_t in_channels = 128;
  int64_t mid_channels = 512;
  int64_t num_blocks_per_stage = 4;
  bool rational_resampler = false;
  // Spatial scale as num / den: the conv + pixel shuffle enlarges by num, the blur downsamples by
  // den (x2 without the rational resampler: 2 / 1).
  int64_t scale_num = 2, scale_den = 1;

  static UpsamplerConfig from_metadata(const nlohmann::json& metadata_config);
};

}  // namespace ltx2
