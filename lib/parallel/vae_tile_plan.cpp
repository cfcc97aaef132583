// VAE tile geometry in latent and pixel space, normalisation, the temporal-split guard, and
// assembly of decoded tiles.
#include "parallel/vae_tile_plan.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "ops/elementwise.h"

namespace ltx2::parallel {

namespace {

// Causal temporal mapping: latent frame 0 decodes to 1 pixel frame, each later one to `t`.
VaeTile map_tile(const TileBox& box, const VaeScale& s) {
  VaeTile t;
  t.latent = box;
  const AxisInterval& f = box[0];
  t.pixel[0] = {f.start * s.time, 1 + (f.stop - 1) * s.time};
  const int64_t left_f = f.left_ramp == 0 ? 0 : 1 + (f.left_ramp - 1) * s.time;
  t.masks[0] = trapezoidal_mask_1d(t.pixel[0].length(), left_f, f.right_ramp * s.time, true);
  const int64_t spatial[2] = {s.height, s.width};
  for (int a = 1; a < 3; ++a) {
    const AxisInterval& i = box[a];
    const int64_t k = spatial[a - 1];
    t.pixel[a] = {i.start * k, i.stop * k};
    t.masks[a] = trapezoidal_mask_1d(t.pixel[a].length(), i.left_ramp * k, i.right_ramp * k);
  }
  return t;
}

}  // namespace

VaeTilePlan plan_vae_tiles(const GridExtent& latent, const GridTiling& tiling, const VaeScale& scale) {
  LTX2_CHECK(latent[0] >= 1 && latent[1] >= 1 && latent[2] >= 1, "plan_vae_tiles: empty latent grid {}x{}x{}",
             latent[0], latent[1], latent[2]);
  VaeTilePlan plan;
  plan.pixel_extent = {(latent[0] - 1) * scale.time + 1, latent[1] * scale.height, latent[2] * scale.width};
  for (const TileBox& box : tile_boxes(latent, tiling, true)) plan.tiles.push_back(map_tile(box, scale));
  return plan;
}

bool masks_are_complementary(const VaeTilePlan& plan) {
  for (int a = 0; a < 3; ++a) {
    std::map<std::pair<int64_t, int64_t>, const std::vector<float>*> unique;
    for (const VaeTile& t : plan.tiles)
      unique.emplace(std::make_pair(t.pixel[a].start, t.pixel[a].stop), &t.masks[a]);
    std::vector<float> sum(static_cast<size_t>(plan.pixel_extent[a]), 0.f);
    for (const auto& [range, mask] : unique)
      for (int64_t j = range.first; j < range.second; ++j) sum[j] += (*mask)[j - range.first];
    for (float v : sum)
      if (std::fabs(v - 1.f) > 1e-5f + 1e-8f) return false;
  }
  return true;
}

Tensor dense_blend_weights(const VaeTilePlan& plan) {
  const GridExtent& e = plan.pixel_extent;
  std::vector<float> w(static_cast<size_t>(e[0] * e[1] * e[2]), 0.f);
  for (const VaeTile& t : plan.tiles)
    for (int64_t f = 0; f < t.pixel[0].length(); ++f)
      for (int64_t h = 0; h < t.pixel[1].length(); ++h)
        for (int64_t x = 0; x < t.pixel[2].length(); ++x) {
          const int64_t at =
              ((t.pixel[0].start + f) * e[1] + t.pixel[1].start + h) * e[2] + t.pixel[2].start + x;
          w[at] += t.masks[0][f] * t.masks[1][h] * t.masks[2][x];
        }
  for (float& v : w) v = std::max(v, 1e-8f);
  return Tensor::from_vector(w, {e[0], e[1], e[2]});
}

int64_t sgpu_temporal_chunks(int64_t pixel_frames, int64_t tile_frames, int64_t overlap_frames) {
  LTX2_CHECK(tile_frames > overlap_frames, "temporal tile of {} frames must exceed its overlap {}",
             tile_frames, overlap_frames);
  const int64_t stride = tile_frames - overlap_frames;
  return std::max<int64_t>(1, (pixel_frames - 1 + stride - 1) / stride);
}

void check_single_temporal_split(const VaeTilePlan& plan, const AxisTiling& frames,
                                 const std::function<int64_t(int64_t pixel_frames)>& sgpu_chunks) {
  if (frames.num_tiles <= 1 || !sgpu_chunks) return;
  for (const VaeTile& t : plan.tiles) {
    const int64_t pixel_frames = t.pixel[0].length();
    const int64_t chunks = sgpu_chunks(pixel_frames);
    LTX2_CHECK(
        chunks <= 1,
        "VAE decode: multi-GPU temporal tiling ({} frame tiles) cannot be combined with single-GPU temporal "
        "tiling that would split a tile again ({} frames -> {} chunks); use only one",
        frames.num_tiles, pixel_frames, chunks);
  }
}

std::vector<std::pair<int64_t, int64_t>> temporal_batches(int64_t pixel_frames, int64_t num_batches) {
  LTX2_CHECK(num_batches >= 1, "temporal_batches: need at least one batch, got {}", num_batches);
  const int64_t size = (pixel_frames + num_batches - 1) / num_batches;
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t k = 0; k < num_batches; ++k) {
    const int64_t start = k * size, stop = std::min((k + 1) * size, pixel_frames);
    if (start < stop) out.emplace_back(start, stop);
  }
  return out;
}

std::vector<int64_t> assembly_order(int64_t num_tiles, int world_size) {
  std::vector<int64_t> order;
  for (int r = 0; r < world_size; ++r)
    for (int64_t t : tiles_for_rank(num_tiles, r, world_size)) order.push_back(t);
  return order;
}

Tensor assemble_frames(const VaeTilePlan& plan, const std::vector<DecodedTile>& tiles, int64_t frame_start,
                       int64_t frame_stop, const Tensor& dense_weights) {
  LTX2_CHECK(!tiles.empty(), "assemble_frames: no decoded tiles");
  const GridExtent& e = plan.pixel_extent;
  LTX2_CHECK(0 <= frame_start && frame_start < frame_stop && frame_stop <= e[0],
             "assemble_frames: frames [{}, {}) outside the video's {}", frame_start, frame_stop, e[0]);
  const int64_t channels = tiles.front().pixels.size(3);
  const Device device = tiles.front().pixels.device();
  Tensor out = Tensor::zeros({frame_stop - frame_start, e[1], e[2], channels}, DType::F32, device);
  for (const DecodedTile& d : tiles) {
    const VaeTile& t = plan.tiles.at(static_cast<size_t>(d.tile));
    LTX2_CHECK(d.pixels.dim() == 4 && d.pixels.size(0) == t.pixel[0].length() &&
                   d.pixels.size(1) == t.pixel[1].length() && d.pixels.size(2) == t.pixel[2].length(),
               "assemble_frames: tile {} pixels {} do not match its box {}x{}x{}", d.tile,
               shape_str(d.pixels.shape()), t.pixel[0].length(), t.pixel[1].length(), t.pixel[2].length());
    const int64_t lo = std::max(frame_start, t.pixel[0].start), hi = std::min(frame_stop, t.pixel[0].stop);
    if (lo >= hi) continue;
    std::array<std::vector<float>, 3> masks = t.masks;
    masks[0] = std::vector<float>(t.masks[0].begin() + (lo - t.pixel[0].start),
                                  t.masks[0].begin() + (hi - t.pixel[0].start));
    Tensor weight =
        Tensor::from_vector(outer_product_mask(masks), {hi - lo, t.pixel[1].length(), t.pixel[2].length(), 1})
            .to(device);
    Tensor src = d.pixels.narrow(0, lo - t.pixel[0].start, hi - lo).to(device).to(DType::F32);
    Tensor dst = out.narrow(0, lo - frame_start, hi - lo)
                     .narrow(1, t.pixel[1].start, t.pixel[1].length())
                     .narrow(2, t.pixel[2].start, t.pixel[2].length());
    dst.copy_(ops::add(dst, ops::mul(src, weight)));
  }
  if (dense_weights.defined())
    out =
        ops::div(out, dense_weights.narrow(0, frame_start, frame_stop - frame_start).unsqueeze(3).to(device));
  return out;
}

}  // namespace ltx2::parallel
