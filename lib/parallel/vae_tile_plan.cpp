// The reference decode plan, its blending order, and the tile / frame conversions around the
// blender.
#include "parallel/vae_tile_plan.h"

#include <algorithm>

#include "core/error.h"
#include "ops/rgb8.h"

namespace ltx2::parallel {

tiling::TilePlan plan_vae_tiles(const tiling::GridExtent& latent, const tiling::GridTiling& tiling,
                                const std::array<int64_t, 3>& scale) {
  return tiling::plan_tiles(latent, tiling, {scale, true, tiling::RampValues::Fractions});
}

std::vector<int64_t> assembly_order(const tiling::TilePlan& plan, int world_size) {
  const auto n = static_cast<int64_t>(plan.tiles.size());
  std::vector<int64_t> order;
  for (int r = 0; r < world_size; ++r)
    for (int64_t t : tiling::tiles_for_rank(n, r, world_size)) order.push_back(t);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return plan.tiles[static_cast<size_t>(a)].temporal_group <
           plan.tiles[static_cast<size_t>(b)].temporal_group;
  });
  return order;
}

Tensor decoded_tile_to_unit(const Tensor& pixels) {
  LTX2_CHECK(pixels.dim() == 4 && pixels.device().is_cpu() &&
                 (pixels.dtype() == DType::F32 || pixels.dtype() == DType::BF16),
             "decoded tile {} is not [F, H, W, C] f32 or bf16 on the CPU", pixels.str());
  Tensor unit = pixels.to(DType::F32).contiguous().clone();
  float* v = unit.data<float>();
  for (int64_t i = 0; i < unit.numel(); ++i) v[i] = ops::from_vae_range(v[i]);
  return unit.permute({3, 0, 1, 2}).unsqueeze(0).contiguous();
}

Tensor unit_frames_to_rgb8(const Tensor& frames) {
  LTX2_CHECK(
      frames.dim() == 5 && frames.size(0) == 1 && frames.device().is_cpu() && frames.dtype() == DType::F32,
      "blended frames {} are not [1, C, n, H, W] f32 on the CPU", frames.str());
  const Tensor src = frames.select(0, 0).permute({1, 2, 3, 0}).contiguous();
  Tensor out = Tensor::empty(src.shape(), DType::U8);
  const float* __restrict s = src.data<float>();
  uint8_t* __restrict o = out.data<uint8_t>();
  for (int64_t i = 0; i < src.numel(); ++i) o[i] = ops::unit_to_u8(s[i]);
  return out;
}

}  // namespace ltx2::parallel
