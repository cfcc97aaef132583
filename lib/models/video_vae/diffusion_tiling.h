// The tiled decode's geometry for LTX-2.5's diffusion video decoder (the reference's
// diffusion_tiling.py, as DiffusionVideoDecoder._decode_pixels and the pipelines' AUTO_TILING use
// it): the tile plan, and the tile sizes the pipelines pick from the free device memory.
//
// Stages 1-3 run once on the whole latent; stages 4 and 5 run per tile of the stage-4 input grid.
// Tile sizes are pixels per axis (TileSizeConfig, by size; an untiled axis stays whole), cut on that
// grid in units of its pixel scale (upsamples[3]'s stride, times the patch size in H and W) with the
// decoder's smallest tile (both stages' kernels must fit). A tile's pixels follow upsamples[3]: each
// axis times its stride; where time doubles, one frame less at the end and, past the first tile, at
// the start (the origin tile alone drops its leading frame). Masks are symmetric trapezoids over
// the pixel ramps (torch.linspace values), so neighbouring tiles' weights sum to one unless ramps
// overlap inside a tile.
#pragma once

#include <cstdint>

#include "io/configs/diffusion_video_decoder_config.h"
#include "models/video_vae/tiling.h"
#include "tiling/tile_plan.h"

namespace ltx2::video_vae {

// Pixels (frames, height, width) per stage-4 input cell.
Dims3 diffusion_pixel_scale(const DiffusionVideoDecoderConfig& c);

// The smallest overlaps (frames, then pixels for height and width) the stage-4 and stage-5 halos
// need (recommended_pixel_overlaps).
std::pair<int64_t, int64_t> diffusion_min_overlaps(const DiffusionVideoDecoderConfig& c);

// The plan over a stage-4 grid of `stage4` cells whose pixels are `pixels` (frames, height, width
// of the size-floored latent): in = stage-4 cells with the split's ramps, out = pixels, frames
// slowest. An untiled `tiles` (every axis) is one tile over everything with masks of ones. Sizes
// are refused naming the axis: not a multiple of the pixel scale, under two of it, an overlap that
// is not a multiple of it, at least the size, or below diffusion_min_overlaps.
tiling::TilePlan plan_diffusion_tiles(const DiffusionVideoDecoderConfig& c, const Dims3& stage4,
                                      const Dims3& pixels, const TileSizeConfig& tiles);

// The tiling the reference's pipelines decode a height x width x frames video with when
// `free_bytes` of device memory are available (tiling_config_for_vae ->
// recommended_decode_tiling_config, DiffVAEMode chunked_eager without natten: stage-5 coefficient
// 5, 1 GiB kept back): every tiled axis on its pixel-scale grid, each candidate's peak estimated as
// the resident stage-4 input + a full-frame accumulator of twice the tile's frames + the tile's
// stage-5 tokens, and among those that fit the least overlap recomputation, then the largest tile.
// `model_bytes`: the decoder's weights in bf16 (at least 1 GiB is assumed). Throws, as the
// reference does, when no tile fits.
TileSizeConfig recommend_diffusion_tiling(const DiffusionVideoDecoderConfig& c, int64_t height, int64_t width,
                                          int64_t frames, uint64_t free_bytes, uint64_t model_bytes);

}  // namespace ltx2::video_vae
