// Parsing of the latent upsampler config (top level of its file's metadata config).
#include "io/configs/upsampler_config.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "io/config_reader.h"

namespace ltx2 {

UpsamplerConfig UpsamplerConfig::from_metadata(const nlohmann::json& metadata_config) {
  ConfigReader r(metadata_config, "latent upsampler");
  if (r.has("_class_name") && r.string("_class_name") != "LatentUpsampler")
    r.fail("_class_name", "is '" + r.string("_class_name") + "'; only LatentUpsampler is supported");
  r.require_equal("dims", 3);
  UpsamplerConfig c;
  c.in_channels = r.integer("in_channels", 128);
  c.mid_channels = r.integer("mid_channels", 512);
  c.num_blocks_per_stage = r.integer("num_blocks_per_stage", 4);
  for (const char* key : {"in_channels", "mid_channels", "num_blocks_per_stage"})
    if (r.integer(key, 1) < 1) r.fail(key, "must be positive");
  if (c.mid_channels % 32 != 0) r.fail("mid_channels", "must be a multiple of the 32 GroupNorm groups");
  if (!r.boolean("spatial_upsample", true))
    r.fail("spatial_upsample", "is false; only spatial upsamplers are supported");
  if (r.boolean("temporal_upsample", false))
    r.fail("temporal_upsample", "is true; temporal upsampling is not supported");
  c.rational_resampler = r.boolean("rational_resampler", false);
  const double scale = r.number("spatial_scale", 2.0);
  if (c.rational_resampler) {
    struct Ratio {
      double scale;
      int64_t num, den;
    };
    const Ratio ratios[] = {{0.75, 3, 4}, {1.5, 3, 2}, {2.0, 2, 1}, {4.0, 4, 1}};
    bool found = false;
    for (const auto& q : ratios)
      if (std::fabs(scale - q.scale) < 1e-9) c.scale_num = q.num, c.scale_den = q.den, found = true;
    if (!found) r.fail("spatial_scale", "is " + std::to_string(scale) + "; supported: 0.75, 1.5, 2.0, 4.0");
  } else if (std::fabs(scale - 2.0) > 1e-9) {
    r.fail("spatial_scale",
           "is " + std::to_string(scale) + "; without rational_resampler only 2.0 is supported");
  }
  return c;
}

}  // namespace ltx2
