// Single-process tiled decode (ConvVideoDecoder.tiled_decode): every tile of the plan is decoded
// independently with the full decoder (its first latent frame decodes to one pixel frame) and
// blended; finished frames are handed out as soon as they are final, so a caller can encode them
// while later tiles decode.
#pragma once

#include <functional>

#include "models/video_vae/decoder.h"
#include "models/video_vae/tiling.h"

namespace ltx2::video_vae {

DecodeTilePlan plan_tiled_decode(const VideoDecoder& decoder, const Shape& latent_shape,
                                 const TileSizeConfig& config);

// Decodes `latent` tile by tile in plan order; on_chunk receives [B, 3, n, H', W'] runs of frames
// in time order (their concatenation is the video).
void tiled_decode(const VideoDecoder& decoder, const Tensor& latent, const DecodeTilePlan& plan,
                  const std::function<void(const Tensor& frames)>& on_chunk, const Tensor& timestep = {});

// The whole video at once (concatenated chunks).
Tensor tiled_decode(const VideoDecoder& decoder, const Tensor& latent, const TileSizeConfig& config,
                    const Tensor& timestep = {});

}  // namespace ltx2::video_vae
