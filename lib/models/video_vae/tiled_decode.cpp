// Tiled decode driver: slices latent tiles, decodes them and feeds the blender.
#include "models/video_vae/tiled_decode.h"

#include "core/error.h"
#include "ops/shape.h"
#include "tiling/tile_blender.h"

namespace ltx2::video_vae {

DecodeTilePlan plan_tiled_decode(const VideoDecoder& decoder, const Shape& latent_shape,
                                 const TileSizeConfig& config) {
  return plan_tiled_decode(latent_shape, decoder.config().out_channels, config,
                           decoder.config().scale_factors());
}

void tiled_decode(const VideoDecoder& decoder, const Tensor& latent, const DecodeTilePlan& plan,
                  const std::function<void(const Tensor& frames)>& on_chunk, const Tensor& timestep) {
  LTX2_CHECK(latent.shape() == plan.latent_shape, "tiled decode: latent {} does not match the plan's {}",
             latent.str(), shape_str(plan.latent_shape));
  tiling::TileBlender blender(plan, plan.video_shape[0], plan.video_shape[1], decoder.device());
  for (size_t i = 0; i < plan.tiles.size(); ++i) {
    const auto& [f, h, w] = plan.tiles[i].in;
    Tensor piece =
        latent.slice(2, f.start, f.stop).slice(3, h.start, h.stop).slice(4, w.start, w.stop).contiguous();
    // The frames a tile completes leave as one run, as the reference yields a temporal group's.
    const std::vector<Tensor> frames = blender.add(i, decoder.decode(piece, timestep));
    if (!frames.empty()) on_chunk(frames.size() == 1 ? frames[0] : ops::cat(frames, 2));
  }
}

Tensor tiled_decode(const VideoDecoder& decoder, const Tensor& latent, const TileSizeConfig& config,
                    const Tensor& timestep) {
  const DecodeTilePlan plan = plan_tiled_decode(decoder, latent.shape(), config);
  std::vector<Tensor> chunks;
  tiled_decode(
      decoder, latent, plan, [&](const Tensor& c) { chunks.push_back(c); }, timestep);
  return chunks.size() == 1 ? chunks[0] : ops::cat(chunks, 2);
}

}  // namespace ltx2::video_vae
