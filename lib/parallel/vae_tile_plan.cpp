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
  const Tensor src = pixels.contiguous();
  const int64_t F = src.size(0), H = src.size(1), W = src.size(2), C = src.size(3);
  Tensor unit = Tensor::empty({1, C, F, H, W});
  float* out = unit.data<float>();
  const bool bf16 = src.dtype() == DType::BF16;
  const float* f32 = bf16 ? nullptr : src.data<float>();
  const uint16_t* b16 = bf16 ? static_cast<const uint16_t*>(src.data_ptr()) : nullptr;
  // Channels last to channels first in one pass, rows in parallel.
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t f = 0; f < F; ++f)
    for (int64_t y = 0; y < H; ++y) {
      const int64_t in_row = (f * H + y) * W * C;
      for (int64_t c = 0; c < C; ++c) {
        float* o = out + ((c * F + f) * H + y) * W;
        for (int64_t x = 0; x < W; ++x) {
          const int64_t at = in_row + x * C + c;
          o[x] = ops::from_vae_range(bf16 ? bf16_to_f32(b16[at]) : f32[at]);
        }
      }
    }
  return unit;
}

Tensor unit_frames_to_rgb8(const Tensor& frames) {
  LTX2_CHECK(
      frames.dim() == 5 && frames.size(0) == 1 && frames.device().is_cpu() && frames.dtype() == DType::F32,
      "blended frames {} are not [1, C, n, H, W] f32 on the CPU", frames.str());
  const Tensor src = frames.contiguous();
  const int64_t C = src.size(1), n = src.size(2), H = src.size(3), W = src.size(4);
  Tensor out = Tensor::empty({n, H, W, C}, DType::U8);
  const float* in = src.data<float>();
  uint8_t* o = out.data<uint8_t>();
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t f = 0; f < n; ++f)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t c = 0; c < C; ++c) {
        const float* row = in + ((c * n + f) * H + y) * W;
        uint8_t* dst = o + (f * H + y) * W * C + c;
        for (int64_t x = 0; x < W; ++x) dst[x * C] = ops::unit_to_u8(row[x]);
      }
  return out;
}

}  // namespace ltx2::parallel
